/** Decoder for core v1 Service (only what EPP address resolution needs). */
import type { DecodeContext, Raw } from './decode-util.js';
import { list, obj, oneOf, optString, port } from './decode-util.js';
import type { ObjectMeta, Service, ServicePort } from './types.js';

const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const;
const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;

function servicePort(c: DecodeContext, raw: unknown, path: string): ServicePort {
  const r = obj(c, raw, path, true) ?? {};
  const portName = optString(c, r.name, `${path}.name`);
  const appProtocol = optString(c, r.appProtocol, `${path}.appProtocol`);
  return {
    ...(portName !== undefined && portName !== '' ? { name: portName } : {}),
    port: port(c, r.port, `${path}.port`, true) ?? 0,
    protocol: oneOf(c, r.protocol, `${path}.protocol`, PROTOCOLS, 'TCP'),
    ...(appProtocol !== undefined && appProtocol !== '' ? { appProtocol } : {}),
  };
}

export function decodeService(c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta): Service {
  const spec = obj(c, raw.spec, 'spec') ?? {};
  const status = obj(c, raw.status, 'status') ?? {};
  const lb = obj(c, status.loadBalancer, 'status.loadBalancer') ?? {};
  const clusterIP = optString(c, spec.clusterIP, 'spec.clusterIP');
  const externalIPs: string[] = [];
  list(c, spec.externalIPs, 'spec.externalIPs').forEach((ip, i) => {
    const s = optString(c, ip, `spec.externalIPs[${i}]`);
    if (s !== undefined && s !== '') externalIPs.push(s);
  });
  const ingress = list(c, lb.ingress, 'status.loadBalancer.ingress').map((raw, i) => {
    const p = `status.loadBalancer.ingress[${i}]`;
    const r = obj(c, raw, p, true) ?? {};
    const ip = optString(c, r.ip, `${p}.ip`);
    const hostname = optString(c, r.hostname, `${p}.hostname`);
    return { ...(ip ? { ip } : {}), ...(hostname ? { hostname } : {}) };
  });
  return {
    kind: 'Service',
    apiVersion,
    metadata,
    spec: {
      type: oneOf(c, spec.type, 'spec.type', SERVICE_TYPES, 'ClusterIP'),
      ...(clusterIP !== undefined && clusterIP !== '' ? { clusterIP } : {}),
      externalIPs,
      ports: list(c, spec.ports, 'spec.ports').map((p, i) => servicePort(c, p, `spec.ports[${i}]`)),
    },
    status: { loadBalancer: { ingress } },
  };
}
