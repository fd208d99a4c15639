/**
 * Which local HTTPRoutes attach to the served Gateways, and with which
 * effective hostnames (Gateway API parentRef, listener and hostname rules).
 */
import { GROUP_GATEWAY, type Gateway, type GatewayListener, type HTTPRoute, type ParentReference } from '../model/types.js';
import { lookup, nsName, ROUTE_REASONS, routeStatus, type BuildContext } from './context.js';
import type { Diagnostic } from './types.js';
import { intersectHostnames, unionHostnames, type HostnameSet } from './hostname.js';
import { judgeListeners, takesHttpRoutes } from './listeners.js';
import type { ParentAttachment } from './types.js';

export interface AttachedRoute {
  readonly route: HTTPRoute;
  /** Served Gateways ("namespace/name") the route attached to. */
  readonly parents: readonly string[];
  /** Per parentRef that attached: the Gateway and the listeners it attached to. */
  readonly attachments: readonly ParentAttachment[];
  /** Effective hostnames, normalised; empty = any host. */
  readonly hostnames: readonly string[];
}

type Attachment =
  | { readonly ok: true; readonly hostnames: HostnameSet; readonly listeners: readonly string[] }
  | { readonly ok: false; readonly reason: string; readonly message: string };

function describeRef(ref: ParentReference): string {
  const parts: string[] = [];
  if (ref.sectionName !== undefined) parts.push(`sectionName "${ref.sectionName}"`);
  if (ref.port !== undefined) parts.push(`port ${ref.port}`);
  return parts.join(' and ');
}

function selectListeners(gw: Gateway, ref: ParentReference): readonly GatewayListener[] {
  return gw.spec.listeners.filter(
    (l) => (ref.sectionName === undefined || l.name === ref.sectionName) && (ref.port === undefined || l.port === ref.port),
  );
}

function allowsNamespace(ctx: BuildContext, gw: Gateway, listener: GatewayListener, routeNs: string): boolean {
  const from = listener.allowedRoutes.namespaces.from;
  if (from === 'All') return true;
  if (from === 'Same') return routeNs === gw.metadata.namespace;
  const i = gw.spec.listeners.indexOf(listener);
  ctx.diagnostics.add({
    severity: 'warning',
    subject: `${ctx.localCluster}: Gateway ${nsName(gw.metadata.namespace, gw.metadata.name)}`,
    path: `spec.listeners[${i}].allowedRoutes.namespaces`,
    reason: 'SelectorNotEvaluated',
    message:
      `listener "${listener.name}" selects route namespaces by label, but the router does not read Namespaces; ` +
      'routes from every namespace are allowed on it. Use from: Same or All to make this explicit',
  });
  return true;
}

function attachToGateway(ctx: BuildContext, route: HTTPRoute, ref: ParentReference, gw: Gateway): Attachment {
  const gwName = `Gateway ${nsName(gw.metadata.namespace, gw.metadata.name)}`;
  const selected = selectListeners(gw, ref);
  if (selected.length === 0) {
    const what = describeRef(ref);
    return {
      ok: false,
      reason: 'NoMatchingParent',
      message: what
        ? `${gwName} has no listener with ${what}; fix the parentRef or the Gateway's listeners`
        : `${gwName} has no listeners`,
    };
  }
  const http = selected.filter(takesHttpRoutes);
  if (http.length === 0) {
    return {
      ok: false,
      reason: 'NotAllowedByListeners',
      message: `the selected listeners of ${gwName} (${selected.map((l) => `${l.name}/${l.protocol}`).join(', ')}) do not accept HTTPRoutes (protocol or allowedRoutes.kinds)`,
    };
  }
  const allowed = http.filter((l) => allowsNamespace(ctx, gw, l, route.metadata.namespace));
  if (allowed.length === 0) {
    return {
      ok: false,
      reason: 'NotAllowedByListeners',
      message:
        `the listeners of ${gwName} allow routes only from namespace ${gw.metadata.namespace} ` +
        `(allowedRoutes.namespaces.from: Same); set from: All or move the route`,
    };
  }
  const sets = allowed.map((l) => intersectHostnames(route.spec.hostnames, l.hostname));
  const hostnames = unionHostnames(sets);
  const listeners = allowed.filter((_, i) => sets[i] === 'any' || (sets[i]?.length ?? 0) > 0).map((l) => l.name);
  if (hostnames !== 'any' && hostnames.length === 0) {
    const listenerHosts = allowed.map((l) => l.hostname ?? '*').join(', ');
    return {
      ok: false,
      reason: 'NoMatchingListenerHostname',
      message: `route hostnames (${route.spec.hostnames.join(', ')}) intersect no listener hostname of ${gwName} (${listenerHosts})`,
    };
  }
  return { ok: true, hostnames, listeners };
}

/** Listener problems of a served Gateway (protocol, port, route kinds, conflicts), as diagnostics. */
function reportListeners(ctx: BuildContext, gw: Gateway): void {
  const { namespace, name } = gw.metadata;
  const subject = `${ctx.localCluster}: Gateway ${nsName(namespace, name)}`;
  for (const v of judgeListeners(gw, ctx.config.gatewayListeners)) {
    const problems = [
      { c: v.accepted, condition: 'Accepted' as const },
      { c: v.resolvedRefs, condition: 'ResolvedRefs' as const },
      { c: v.conflicted, condition: 'Programmed' as const },
    ];
    for (const { c, condition } of problems) {
      if (c.ok) continue;
      ctx.diagnostics.add({
        severity: 'warning',
        subject,
        path: `spec.listeners[${v.index}]`,
        reason: c.reason,
        message: `listener "${v.name}": ${c.message}`,
        status: { kind: 'Gateway', namespace, name, condition, listener: v.name },
      });
    }
  }
}

/** Attaches every local HTTPRoute that names a served Gateway; reports those that cannot attach. */
export function attachRoutes(ctx: BuildContext): AttachedRoute[] {
  const local = ctx.clusters.get(ctx.localCluster);
  const served = new Map<string, Gateway | undefined>();
  for (const g of ctx.config.gateways) {
    const key = nsName(g.namespace, g.name);
    const gw = local === undefined ? undefined : lookup(local.gateways, g.namespace, g.name);
    served.set(key, gw);
    if (gw !== undefined) reportListeners(ctx, gw);
    if (gw === undefined) {
      ctx.diagnostics.add({
        severity: 'info',
        subject: `${ctx.localCluster}: Gateway ${key}`,
        reason: 'GatewayNotFound',
        message:
          `served Gateway ${key} is not among cluster ${ctx.localCluster}'s objects; routes naming it attach ` +
          'without listener, allowedRoutes or hostname checks',
      });
    }
  }
  const out: AttachedRoute[] = [];
  const servedList = [...served.keys()].join(', ');
  for (const route of local?.routes ?? []) {
    const parents: string[] = [];
    const attachments: ParentAttachment[] = [];
    const sets: HostnameSet[] = [];
    const refused: Diagnostic[] = [];
    const subject = `${ctx.localCluster}: HTTPRoute ${nsName(route.metadata.namespace, route.metadata.name)}`;
    route.spec.parentRefs.forEach((ref, i) => {
      if (ref.group !== GROUP_GATEWAY || ref.kind !== 'Gateway') return;
      const ns = ref.namespace ?? route.metadata.namespace;
      const key = nsName(ns, ref.name);
      if (!served.has(key)) {
        // A Gateway of another implementation is not ours to judge; one that exists nowhere is a parentRef to nothing.
        if (local === undefined || lookup(local.gateways, ns, ref.name) !== undefined) return;
        refused.push({
          severity: 'warning',
          subject,
          path: `spec.parentRefs[${i}]`,
          reason: ROUTE_REASONS.noMatchingParent,
          message: `Gateway ${key} is neither served by this router (config gateways: ${servedList || 'none'}) nor among cluster ${ctx.localCluster}'s objects; the route is not attached to it`,
        });
        return;
      }
      const gw = served.get(key);
      const res: Attachment = gw === undefined
        ? { ok: true, hostnames: intersectHostnames(route.spec.hostnames, undefined), listeners: [] }
        : attachToGateway(ctx, route, ref, gw);
      const { namespace, name } = route.metadata;
      if (!res.ok) {
        refused.push({
          severity: 'warning',
          subject,
          path: `spec.parentRefs[${i}]`,
          reason: res.reason,
          message: `${res.message}; the route is not attached to it`,
          status: routeStatus(route.metadata, 'Accepted', i),
        });
        return;
      }
      attachments.push({ parentRefIndex: i, gateway: key, listeners: res.listeners });
      if (!parents.includes(key)) parents.push(key);
      sets.push(res.hostnames);
    });
    // A route attached nowhere serves nothing: each refused parentRef is then an error (its requests get 404).
    for (const d of refused) {
      ctx.diagnostics.add(parents.length > 0 ? d : { ...d, severity: 'error', message: `${d.message}; attached to no served Gateway, its requests get 404` });
    }
    if (parents.length === 0) continue;
    const hostnames = unionHostnames(sets);
    out.push({ route, parents, attachments, hostnames: hostnames === 'any' ? [] : hostnames });
  }
  return out;
}
