/**
 * HTTPRoute status.parents[] entries of the router, as a pure function: one
 * entry per parentRef naming a served Gateway whose class is ours, with
 * Accepted and ResolvedRefs in the upstream vocabulary.
 *
 * - Accepted: True when the parentRef attached (snapshot attachments), else
 *   False with the attachment diagnostic's reason (NoMatchingParent,
 *   NotAllowedByListeners, NoMatchingListenerHostname); a route diagnostic on
 *   Accepted (e.g. UnsupportedValue) turns it False too, unless it concerns single
 *   rules while another rule routes: then Accepted stays True and PartiallyInvalid
 *   is True ("Dropped Rule: ..."), Gateway API's partial acceptance.
 * - ResolvedRefs: False with the reason of the route's ResolvedRefs
 *   diagnostics (BackendNotFound, InvalidKind, RefNotPermitted), else True.
 *
 * Our entries for served Gateways (`owned`) that no parentRef asks for any
 * more are planned away; other controllers' entries are never planned.
 * Also counts, per listener, the routes attached there, accepted or not
 * (a route refused for an unsupported feature is attached all the same).
 */
import { GROUP_GATEWAY, type HTTPRoute, type ParentReference, type ParentStatus } from '../model/types.js';
import type { Diagnostic, RoutingSnapshot } from '../snapshot/types.js';
import { condition, type Generation, type RawCondition } from './import-status.js';

const MAX_MESSAGE = 32_768;

/** A condition message within the metav1.Condition bound. */
export function clip(text: string): string {
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 3)}...` : text;
}

export interface RouteParentRef {
  group: string;
  kind: string;
  namespace: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export interface RawRouteParentStatus {
  parentRef: RouteParentRef;
  controllerName: string;
  conditions: RawCondition[];
}

export interface RoutePlan {
  readonly namespace: string;
  readonly name: string;
  readonly generation?: number;
  /** Our desired entries, in spec.parentRefs order. */
  readonly parents: RawRouteParentStatus[];
  /** Gateways ("namespace/name") whose entries under our controllerName are ours to replace or remove. */
  readonly owned: ReadonlySet<string>;
}

export interface RouteStatusInput {
  readonly controllerName: string;
  readonly routes: readonly HTTPRoute[];
  /** Served Gateways whose class is ours: they get entries. */
  readonly claimed: ReadonlySet<string>;
  /** Every served Gateway: our stale entries for them are removed. */
  readonly owned: ReadonlySet<string>;
  readonly snapshot: Pick<RoutingSnapshot, 'routes' | 'diagnostics'>;
}

/** A parentRef with its defaults applied (namespace: the route's). */
export function normalRef(ref: ParentReference, routeNamespace: string): RouteParentRef {
  return {
    group: ref.group,
    kind: ref.kind,
    namespace: ref.namespace ?? routeNamespace,
    name: ref.name,
    ...(ref.sectionName !== undefined ? { sectionName: ref.sectionName } : {}),
    ...(ref.port !== undefined ? { port: ref.port } : {}),
  };
}

export const sameRef = (a: RouteParentRef, b: RouteParentRef): boolean =>
  a.group === b.group && a.kind === b.kind && a.namespace === b.namespace && a.name === b.name && a.sectionName === b.sectionName && a.port === b.port;

const isGatewayRef = (r: { group: string; kind: string }): boolean => r.group === GROUP_GATEWAY && r.kind === 'Gateway';

/** True for an entry (any shape read from the API) that is ours to manage: our controller, a served Gateway. */
export function ownsEntry(entry: { parentRef: ParentReference; controllerName?: string }, controllerName: string, owned: ReadonlySet<string>, routeNamespace: string): boolean {
  if (entry.controllerName !== controllerName || !isGatewayRef(entry.parentRef)) return false;
  return owned.has(`${entry.parentRef.namespace ?? routeNamespace}/${entry.parentRef.name}`);
}

/** Diagnostics with an HTTPRoute status target, by "namespace/name" (indexed once per plan). */
function routeDiagnostics(diagnostics: readonly Diagnostic[]): Map<string, Diagnostic[]> {
  const out = new Map<string, Diagnostic[]>();
  for (const d of diagnostics) {
    if (d.status?.kind !== 'HTTPRoute') continue;
    const key = `${d.status.namespace}/${d.status.name}`;
    const list = out.get(key);
    if (list) list.push(d);
    else out.set(key, [d]);
  }
  return out;
}

/** A route's diagnostics that turn a condition False, for one parentRef (or every parentRef). */
function routeProblems(mine: readonly Diagnostic[]): (cond: 'Accepted' | 'ResolvedRefs', index: number) => Diagnostic[] {
  return (cond, index) => mine.filter((d) => d.status?.condition === cond && (d.status.parentRefIndex === undefined || d.status.parentRefIndex === index));
}

function falseFrom(type: string, problems: readonly Diagnostic[], gen: Generation): RawCondition {
  const text = problems.map((d) => (problems.length > 1 ? `${d.reason}: ${d.message}` : d.message)).join('; ');
  return condition(type, false, problems[0]?.reason ?? type, clip(text), gen);
}

/**
 * A route's Accepted problems, split as Gateway API's partial acceptance asks: problems of
 * single rules (a refused rule, a match left out) while some rule still routes are `dropped`
 * (Accepted stays True, PartiallyInvalid True); the rest, or rule problems when no rule
 * routes, are `refused` (Accepted False).
 */
function splitRefusals(all: readonly Diagnostic[], rules: RoutingSnapshot['routes'][number]['rules'] | undefined): { refused: Diagnostic[]; dropped: Diagnostic[] } {
  const ofRules = all.filter((d) => d.path?.startsWith('spec.rules[') === true);
  const someRuleRoutes = rules !== undefined && rules.some((r) => r.unsupported === undefined);
  if (ofRules.length === 0 || ofRules.length < all.length || !someRuleRoutes) return { refused: [...all], dropped: [] };
  return { refused: [], dropped: ofRules };
}

export function planRouteStatuses(input: RouteStatusInput): { plans: RoutePlan[]; attachedRoutes: Map<string, number> } {
  const summaries = new Map(input.snapshot.routes.map((r) => [`${r.route.namespace}/${r.route.name}`, r]));
  /** "ns/gateway/listener" -> routes accepted there. */
  const attachedRoutes = new Map<string, number>();
  const plans: RoutePlan[] = [];
  const diagnostics = routeDiagnostics(input.snapshot.diagnostics);
  for (const route of input.routes) {
    const { namespace, name, generation } = route.metadata;
    const gen: Generation = generation !== undefined ? { observedGeneration: generation } : {};
    const summary = summaries.get(`${namespace}/${name}`);
    const problems = routeProblems(diagnostics.get(`${namespace}/${name}`) ?? []);
    const parents: RawRouteParentStatus[] = [];
    const counted = new Set<string>();
    route.spec.parentRefs.forEach((ref, i) => {
      const parentRef = normalRef(ref, namespace);
      const gateway = `${parentRef.namespace}/${parentRef.name}`;
      if (!isGatewayRef(parentRef) || !input.claimed.has(gateway)) return;
      // Two parentRefs for the same Gateway and section would be one entry; the CRD forbids them.
      if (parents.some((p) => sameRef(p.parentRef, parentRef))) return;
      const attachment = summary?.attachments.find((a) => a.parentRefIndex === i);
      const { refused, dropped } = splitRefusals(problems('Accepted', i), summary?.rules);
      // Attachment, not acceptance, is what a listener's attachedRoutes counts (Gateway API: a route
      // attached by its parentRef and the listener's allowedRoutes counts even with Accepted False).
      if (attachment) for (const l of attachment.listeners) counted.add(`${gateway}/${l}`);
      let accepted: RawCondition;
      if (refused.length > 0) accepted = falseFrom('Accepted', refused, gen);
      else if (attachment) {
        const where = attachment.listeners.length > 0 ? `listener(s) ${attachment.listeners.join(', ')}` : 'the Gateway';
        accepted = condition('Accepted', true, 'Accepted', `attached to ${where}`, gen);
      } else accepted = condition('Accepted', false, 'NoMatchingParent', `the route is not attached to Gateway ${gateway}`, gen);
      const unresolved = problems('ResolvedRefs', i);
      const resolved = unresolved.length > 0 ? falseFrom('ResolvedRefs', unresolved, gen) : condition('ResolvedRefs', true, 'ResolvedRefs', 'every backendRef resolves', gen);
      const conditions = [accepted, resolved];
      if (accepted.status === 'True' && dropped.length > 0) {
        const text = dropped.map((d) => `${d.path}: ${d.message}`).join('; ');
        conditions.push(condition('PartiallyInvalid', true, 'UnsupportedValue', clip(`Dropped Rule: ${text}`), gen));
      }
      parents.push({ parentRef, controllerName: input.controllerName, conditions });
    });
    for (const k of counted) attachedRoutes.set(k, (attachedRoutes.get(k) ?? 0) + 1);
    const known = route.status.parents;
    const stale = known === undefined
      ? route.spec.parentRefs.some((ref) => isGatewayRef(ref) && input.owned.has(`${ref.namespace ?? namespace}/${ref.name}`))
      : known.some((p: ParentStatus) => ownsEntry(p, input.controllerName, input.owned, namespace));
    if (parents.length > 0 || stale) {
      plans.push({ namespace, name, ...(generation !== undefined ? { generation } : {}), parents, owned: input.owned });
    }
  }
  return { plans, attachedRoutes };
}
