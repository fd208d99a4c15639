import { describe, expect, it } from 'vitest';
import { decodeOk, edit, expectOneError } from './decode-helpers.js';

const GATEWAY = `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: inf-gw
  namespace: infra
spec:
  gatewayClassName: example
  listeners:
    - name: http
      protocol: HTTP
      port: 80
    - name: https
      protocol: HTTPS
      port: 443
      hostname: "*.model.com"
      allowedRoutes:
        namespaces:
          from: All
status:
  addresses:
    - value: 10.0.0.7
    - type: Hostname
      value: gw.example.com
`;
const G = 'Gateway infra/inf-gw';

describe('Gateway', () => {
  it('decodes with defaults applied', () => {
    const gw = decodeOk(GATEWAY, 'Gateway');
    expect(gw.spec).toEqual({
      gatewayClassName: 'example',
      listeners: [
        { name: 'http', protocol: 'HTTP', port: 80, allowedRoutes: { namespaces: { from: 'Same' } } },
        { name: 'https', protocol: 'HTTPS', port: 443, hostname: '*.model.com', allowedRoutes: { namespaces: { from: 'All' } } },
      ],
      addresses: [],
    });
    expect(gw.status.addresses).toEqual([
      { type: 'IPAddress', value: '10.0.0.7' },
      { type: 'Hostname', value: 'gw.example.com' },
    ]);
  });

  it('accepts v1beta1', () => {
    expect(decodeOk(GATEWAY.replace('/v1\n', '/v1beta1\n'), 'Gateway').apiVersion).toBe('gateway.networking.k8s.io/v1beta1');
  });

  it.each([
    ['missing spec', GATEWAY.slice(0, GATEWAY.indexOf('spec:')), 'spec', /required/],
    ['missing gatewayClassName', edit(GATEWAY, '  gatewayClassName: example\n', ''), 'spec.gatewayClassName', /required/],
    ['empty listeners', edit(GATEWAY, GATEWAY.slice(GATEWAY.indexOf('  listeners:'), GATEWAY.indexOf('status:')), '  listeners: []\n'), 'spec.listeners', /at least 1/],
    ['listener port out of range', edit(GATEWAY, 'port: 80\n', 'port: 0\n'), 'spec.listeners[0].port', /between 1 and 65535/],
    ['listener without protocol', edit(GATEWAY, '      protocol: HTTP\n', ''), 'spec.listeners[0].protocol', /required/],
    ['listener without name', edit(GATEWAY, '    - name: http\n      protocol: HTTP\n', '    - protocol: HTTP\n'), 'spec.listeners[0].name', /required/],
    ['duplicate listener name', edit(GATEWAY, 'name: https', 'name: http'), 'spec.listeners[1].name', /duplicate/],
    ['bad allowedRoutes', edit(GATEWAY, 'from: All', 'from: Any'), 'spec.listeners[1].allowedRoutes.namespaces.from', /All, Same, Selector/],
    ['address without value', edit(GATEWAY, '    - value: 10.0.0.7\n', '    - type: IPAddress\n'), 'status.addresses[0].value', /required/],
  ])('reports %s', (_, text, path, message) => {
    expectOneError(text, G, path, message);
  });

  it('ignores an Istio Gateway', () => {
    const text = GATEWAY.replace('gateway.networking.k8s.io/v1', 'networking.istio.io/v1beta1');
    expect(decodeOk(GATEWAY, 'Gateway')).toBeDefined();
    expect(() => decodeOk(text, 'Gateway')).toThrow(/ignored/);
  });
});

describe('Gateway listener kinds and tls', () => {
  it('decodes allowedRoutes.kinds (group defaults to Gateway API) and tls.mode (default Terminate); both absent when not set', () => {
    const yaml = GATEWAY.replace('          from: All\n', '          from: All\n        kinds:\n          - kind: HTTPRoute\n          - group: example.com\n            kind: Other\n      tls:\n        certificateRefs: [{ name: cert }]\n');
    const gw = decodeOk(yaml, 'Gateway');
    expect(gw.spec.listeners[1]?.allowedRoutes.kinds).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' },
      { group: 'example.com', kind: 'Other' },
    ]);
    expect(gw.spec.listeners[1]?.tls).toEqual({ mode: 'Terminate' });
    expect(gw.spec.listeners[0]).not.toHaveProperty('tls');
    expect(gw.spec.listeners[0]?.allowedRoutes).not.toHaveProperty('kinds');
  });

  it('decodes spec.addresses (type default IPAddress; the value may be left to the implementation)', () => {
    const yaml = GATEWAY.replace('  gatewayClassName: example\n', '  gatewayClassName: example\n  addresses:\n    - value: 192.0.2.1\n    - type: Hostname\n')
    expect(decodeOk(yaml, 'Gateway').spec.addresses).toEqual([{ type: 'IPAddress', value: '192.0.2.1' }, { type: 'Hostname' }]);
  });

  it('a route kind without kind is an error at its path', () => {
    const yaml = GATEWAY.replace('          from: All\n', '          from: All\n        kinds:\n          - group: x\n');
    expectOneError(yaml, 'Gateway infra/inf-gw', 'spec.listeners[1].allowedRoutes.kinds[0].kind', /required/);
  });
});
