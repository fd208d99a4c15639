/**
 * What a served Gateway's listeners can carry here, judged against what the
 * Envoy in front of the router serves (config gatewayListeners): protocol,
 * port, route kinds, and conflicts between listeners. Pure; the snapshot
 * builder turns the problems into diagnostics, the Gateway status writer into
 * listener conditions (upstream Gateway API reasons).
 */
import type { RouterConfig } from '../config/schema.js';
import { GROUP_GATEWAY, type Gateway, type GatewayListener, type RouteGroupKind } from '../model/types.js';

/** One listener condition as Gateway API reports it. */
export interface ListenerCondition {
  readonly ok: boolean;
  readonly reason: string;
  readonly message: string;
}

export interface ListenerVerdict {
  readonly index: number;
  readonly name: string;
  /** The route kinds the listener takes here (HTTPRoute or nothing). */
  readonly supportedKinds: readonly RouteGroupKind[];
  readonly accepted: ListenerCondition;
  readonly resolvedRefs: ListenerCondition;
  /** ok = no conflict (reason NoConflicts); else HostnameConflict or ProtocolConflict. */
  readonly conflicted: ListenerCondition;
  readonly programmed: ListenerCondition;
}

export const HTTP_ROUTE: RouteGroupKind = { group: GROUP_GATEWAY, kind: 'HTTPRoute' };

/** Listener protocols an HTTPRoute can attach to. */
const HTTP_PROTOCOLS = new Set(['HTTP', 'HTTPS']);

const isHttpRoute = (k: RouteGroupKind): boolean => k.group === GROUP_GATEWAY && k.kind === 'HTTPRoute';

/** True when the listener takes HTTPRoutes at all (its protocol and allowedRoutes.kinds). */
export function takesHttpRoutes(l: GatewayListener): boolean {
  if (!HTTP_PROTOCOLS.has(l.protocol)) return false;
  return l.allowedRoutes.kinds === undefined || l.allowedRoutes.kinds.some(isHttpRoute);
}

const OK_ACCEPTED: ListenerCondition = { ok: true, reason: 'Accepted', message: 'the listener is served' };
const OK_REFS: ListenerCondition = { ok: true, reason: 'ResolvedRefs', message: 'every reference of the listener resolves' };
const NO_CONFLICT: ListenerCondition = { ok: true, reason: 'NoConflicts', message: 'no conflict with another listener' };

function accepted(l: GatewayListener, caps: RouterConfig['gatewayListeners']): ListenerCondition {
  const protocols: readonly string[] = caps.protocols;
  if (!protocols.includes(l.protocol)) {
    const why = l.protocol === 'HTTPS'
      ? 'the Envoy in front of the router serves plain HTTP and does not terminate TLS (gatewayListeners.protocols lists HTTPS only when your Envoy bootstrap does)'
      : `the router serves HTTPRoutes over ${protocols.join(' and ')} only`;
    return { ok: false, reason: 'UnsupportedProtocol', message: `protocol ${l.protocol} is not served: ${why}` };
  }
  if (caps.ports.length > 0 && !caps.ports.includes(l.port)) {
    return {
      ok: false,
      reason: 'PortUnavailable',
      message: `port ${l.port} is not a port the Envoy is reached on (gatewayListeners.ports: ${caps.ports.join(', ')})`,
    };
  }
  return OK_ACCEPTED;
}

function resolvedRefs(l: GatewayListener): ListenerCondition {
  const kinds = l.allowedRoutes.kinds;
  const invalid = (kinds ?? []).filter((k) => !isHttpRoute(k));
  if (invalid.length === 0) return OK_REFS;
  const names = invalid.map((k) => (k.group === '' ? k.kind : `${k.kind}.${k.group}`)).join(', ');
  return { ok: false, reason: 'InvalidRouteKinds', message: `allowedRoutes.kinds lists route kinds the router does not serve (${names}); it serves HTTPRoute only` };
}

/** Conflicts per Gateway API: one port, several protocols; or one port and protocol, the same hostname twice. */
function conflicts(listeners: readonly GatewayListener[]): Map<number, ListenerCondition> {
  const out = new Map<number, ListenerCondition>();
  listeners.forEach((l, i) => {
    const samePort = listeners.filter((o) => o.port === l.port);
    const protocols = [...new Set(samePort.map((o) => o.protocol))];
    if (protocols.length > 1) {
      out.set(i, { ok: false, reason: 'ProtocolConflict', message: `port ${l.port} is used with several protocols (${protocols.join(', ')})` });
      return;
    }
    const host = l.hostname ?? '';
    const twins = samePort.filter((o) => o !== l && (o.hostname ?? '') === host);
    if (twins.length > 0) {
      const what = host === '' ? 'no hostname' : `hostname ${host}`;
      out.set(i, { ok: false, reason: 'HostnameConflict', message: `listener ${twins.map((o) => `"${o.name}"`).join(', ')} uses the same port ${l.port}, protocol and ${what}` });
    }
  });
  return out;
}

export function judgeListeners(gw: Gateway, caps: RouterConfig['gatewayListeners']): ListenerVerdict[] {
  const conflicted = conflicts(gw.spec.listeners);
  return gw.spec.listeners.map((l, index) => {
    const acc = accepted(l, caps);
    const refs = resolvedRefs(l);
    const conflict = conflicted.get(index) ?? NO_CONFLICT;
    const supportedKinds = acc.ok && takesHttpRoutes(l) ? [HTTP_ROUTE] : [];
    const problem = !acc.ok ? acc : !conflict.ok ? conflict : undefined;
    const programmed: ListenerCondition = problem
      ? { ok: false, reason: 'Invalid', message: problem.message }
      : { ok: true, reason: 'Programmed', message: 'the listener is served by the Envoy in front of the router' };
    return { index, name: l.name, supportedKinds, accepted: acc, resolvedRefs: refs, conflicted: conflict, programmed };
  });
}
