import { describe, expect, it } from 'vitest';
import { decodeOk, decodeYaml, edit, expectOneError } from './decode-helpers.js';

const SERVICE = `
apiVersion: v1
kind: Service
metadata:
  name: epp
  namespace: example
  labels: {app: epp}
spec:
  type: LoadBalancer
  clusterIP: 10.96.0.10
  externalIPs: [192.0.2.1]
  selector:
    app: epp
  ports:
    - name: ext-proc
      port: 9002
      targetPort: 9002
      appProtocol: http2
status:
  loadBalancer:
    ingress:
      - ip: 203.0.113.5
      - hostname: epp.example.com
`;
const S = 'Service example/epp';

describe('Service', () => {
  it('decodes the fields address resolution needs', () => {
    const svc = decodeOk(SERVICE, 'Service');
    expect(svc.metadata.labels).toEqual({ app: 'epp' });
    expect(svc.spec).toEqual({
      type: 'LoadBalancer',
      clusterIP: '10.96.0.10',
      externalIPs: ['192.0.2.1'],
      ports: [{ name: 'ext-proc', port: 9002, protocol: 'TCP', appProtocol: 'http2' }],
    });
    expect(svc.status.loadBalancer.ingress).toEqual([{ ip: '203.0.113.5' }, { hostname: 'epp.example.com' }]);
  });

  it('defaults type ClusterIP and empty lists', () => {
    const svc = decodeOk('apiVersion: v1\nkind: Service\nmetadata: {name: epp}\nspec:\n  ports: [{port: 9002}]\n', 'Service');
    expect(svc.metadata.namespace).toBe('default');
    expect(svc.spec).toEqual({ type: 'ClusterIP', externalIPs: [], ports: [{ port: 9002, protocol: 'TCP' }] });
    expect(svc.status).toEqual({ loadBalancer: { ingress: [] } });
  });

  it.each([
    ['port out of range', edit(SERVICE, '      port: 9002', '      port: 99999'), 'spec.ports[0].port', /between 1 and 65535/],
    ['port missing', edit(SERVICE, '      port: 9002\n', ''), 'spec.ports[0].port', /required/],
    ['unknown type', edit(SERVICE, 'type: LoadBalancer', 'type: Balanced'), 'spec.type', /ClusterIP, NodePort, LoadBalancer, ExternalName/],
    ['unknown protocol', edit(SERVICE, 'name: ext-proc', 'name: ext-proc\n      protocol: HTTP'), 'spec.ports[0].protocol', /TCP, UDP, SCTP/],
    ['name not a DNS-1035 label', edit(SERVICE, 'name: epp\n', 'name: 9epp\n'), 'metadata.name', /RFC 1035/, 'Service example/9epp'],
    ['externalIPs not a list', edit(SERVICE, '[192.0.2.1]', '192.0.2.1'), 'spec.externalIPs', /must be a list/],
  ])('reports %s', (_, text, path, message, object = S) => {
    expectOneError(text, object, path, message);
  });

  it('ignores a Knative Service', () => {
    const r = decodeYaml(SERVICE.replace('apiVersion: v1', 'apiVersion: serving.knative.dev/v1'));
    expect(r).toEqual({ type: 'ignored', kind: 'Service', apiVersion: 'serving.knative.dev/v1' });
  });
});
