/** Decoder for Gateway (gateway.networking.k8s.io/v1 and v1beta1). */
import type { DecodeContext, Raw } from './decode-util.js';
import { hostname, isRecord, list, obj, oneOf, optString, port, reqString, sectionName } from './decode-util.js';
import type { Gateway, GatewayAddress, GatewayClass, GatewayListener, ObjectMeta, RouteGroupKind } from './types.js';
import { GROUP_GATEWAY } from './types.js';

const FROM = ['All', 'Same', 'Selector'] as const;
const TLS_MODES = ['Terminate', 'Passthrough'] as const;

function routeKind(c: DecodeContext, raw: unknown, path: string): RouteGroupKind {
  const r = obj(c, raw, path, true) ?? {};
  return { group: optString(c, r.group, `${path}.group`) ?? GROUP_GATEWAY, kind: reqString(c, r.kind, `${path}.kind`) };
}

function listener(c: DecodeContext, raw: unknown, path: string): GatewayListener {
  const r = obj(c, raw, path, true) ?? {};
  const listenerName = sectionName(c, r.name, `${path}.name`);
  if (listenerName === undefined) c.error(`${path}.name`, 'required');
  const host = hostname(c, r.hostname, `${path}.hostname`);
  const allowed = obj(c, r.allowedRoutes, `${path}.allowedRoutes`) ?? {};
  const namespaces = obj(c, allowed.namespaces, `${path}.allowedRoutes.namespaces`) ?? {};
  const kinds = allowed.kinds === undefined || allowed.kinds === null
    ? undefined
    : list(c, allowed.kinds, `${path}.allowedRoutes.kinds`, { max: 8 }).map((k, i) => routeKind(c, k, `${path}.allowedRoutes.kinds[${i}]`));
  const tls = obj(c, r.tls, `${path}.tls`);
  return {
    name: listenerName ?? '',
    ...(host !== undefined ? { hostname: host } : {}),
    port: port(c, r.port, `${path}.port`, true) ?? 0,
    protocol: reqString(c, r.protocol, `${path}.protocol`),
    allowedRoutes: {
      namespaces: { from: oneOf(c, namespaces.from, `${path}.allowedRoutes.namespaces.from`, FROM, 'Same') },
      ...(kinds !== undefined ? { kinds } : {}),
    },
    ...(tls !== undefined ? { tls: { mode: oneOf(c, tls.mode, `${path}.tls.mode`, TLS_MODES, 'Terminate') } } : {}),
  };
}

function address(c: DecodeContext, raw: unknown, path: string): GatewayAddress {
  const r = obj(c, raw, path, true) ?? {};
  return {
    type: optString(c, r.type, `${path}.type`) || 'IPAddress',
    value: reqString(c, r.value, `${path}.value`),
  };
}

export function decodeGateway(c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta): Gateway {
  const spec = obj(c, raw.spec, 'spec', true) ?? {};
  const hasSpec = isRecord(raw.spec);
  const gatewayClassName = hasSpec ? reqString(c, spec.gatewayClassName, 'spec.gatewayClassName') : '';
  const items = list(c, spec.listeners, 'spec.listeners', { required: hasSpec, max: 64 });
  if (Array.isArray(spec.listeners) && items.length === 0) c.error('spec.listeners', 'must have at least 1 item');
  const listeners = items.map((l, i) => listener(c, l, `spec.listeners[${i}]`));
  const seen = new Set<string>();
  listeners.forEach((l, i) => {
    if (l.name === '') return;
    if (seen.has(l.name)) c.error(`spec.listeners[${i}].name`, `duplicate listener name "${l.name}"`);
    seen.add(l.name);
  });
  const requested = list(c, spec.addresses, 'spec.addresses', { max: 16 }).map((a, i) => {
    const r = obj(c, a, `spec.addresses[${i}]`, true) ?? {};
    const value = optString(c, r.value, `spec.addresses[${i}].value`);
    return { type: optString(c, r.type, `spec.addresses[${i}].type`) || 'IPAddress', ...(value ? { value } : {}) };
  });
  const status = obj(c, raw.status, 'status') ?? {};
  return {
    kind: 'Gateway',
    apiVersion,
    metadata,
    spec: { gatewayClassName, listeners, addresses: requested },
    status: { addresses: list(c, status.addresses, 'status.addresses').map((a, i) => address(c, a, `status.addresses[${i}]`)) },
  };
}

/** GatewayClass: only spec.controllerName is read (which implementation runs the class's Gateways). */
export function decodeGatewayClass(c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta): GatewayClass {
  const spec = obj(c, raw.spec, 'spec', true) ?? {};
  return { kind: 'GatewayClass', apiVersion, metadata, spec: { controllerName: reqString(c, spec.controllerName, 'spec.controllerName') } };
}
