/**
 * The import-controller duty, as a pure function: for every local
 * InferencePoolImport, OUR desired `status.controllers[]` entry, in the
 * upstream condition vocabulary.
 *
 * - Referenced = a backendRef of an HTTPRoute attached to a Gateway the router
 *   serves (the snapshot's routes) names the import. Unreferenced imports that
 *   still carry our entry get a plan to remove it.
 * - parents[] = those Gateways, each with Accepted (True, reason Accepted: the
 *   Gateway routes to the import) and ResolvedRefs (True, reason ResolvedRefs,
 *   when every exporting cluster resolves to an EPP; else False, reason
 *   InvalidExtensionRef, naming what does not resolve or that nothing exports).
 * - conditions[] (controller level) = Accepted: True (reason Accepted) when the
 *   import is ready to be used (at least one exporting cluster is routable),
 *   else False (reason InvalidExtensionRef).
 * - observedGeneration = the import's metadata.generation; lastTransitionTime
 *   is kept while the condition's status does not change.
 */
import type { Condition, ImportController, InferencePoolImport, ParentStatus } from '../model/types.js';
import { GROUP_GATEWAY, GROUP_INFERENCE_X } from '../model/types.js';
import type { BackendGroup, Exclusion, RouteSummary } from '../snapshot/types.js';

/** Upstream CRD limit on status.controllers[]. */
export const MAX_CONTROLLERS = 8;
const MAX_MESSAGE = 32_768;

/** Condition reasons (GIE InferencePool/InferencePoolImport vocabulary). */
export const REASON = {
  Accepted: 'Accepted',
  ResolvedRefs: 'ResolvedRefs',
  InvalidExtensionRef: 'InvalidExtensionRef',
} as const;

/** The snapshot's exclusion reason for an import no cluster exports. */
const NO_EXPORTING_CLUSTERS = 'NoExportingClusters';

/** Exclusions that mean "this reference is not ours to serve", not "unresolved". */
const NOT_A_REFERENCE = new Set(['RefNotPermitted', 'InvalidKind']);

/** metav1.Condition as written (every required field present). */
export interface RawCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface RawParentStatus {
  parentRef: { group: string; kind: string; namespace: string; name: string };
  controllerName: string;
  conditions: RawCondition[];
}

/** Our status.controllers[] entry. */
export interface RawControllerEntry {
  name: string;
  parents: RawParentStatus[];
  conditions: RawCondition[];
}

export interface ImportStatusPlan {
  readonly namespace: string;
  readonly name: string;
  /** undefined: our entry must not exist (the import is not referenced). */
  readonly desired: RawControllerEntry | undefined;
}

export interface PlanInput {
  readonly controllerName: string;
  readonly imports: readonly InferencePoolImport[];
  readonly routes: readonly RouteSummary[];
  /** RFC 3339, seconds precision. */
  readonly now: string;
}

interface ParentUse {
  groups: BackendGroup[];
}

const nsName = (namespace: string, name: string): string => `${namespace}/${name}`;

/** RFC 3339 with seconds precision, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function planImportStatuses(input: PlanInput): ImportStatusPlan[] {
  /** import ns/name -> parent gateway ns/name -> the backend groups that reference it there. */
  const uses = new Map<string, Map<string, ParentUse>>();
  for (const route of input.routes) {
    for (const rule of route.rules) {
      for (const g of rule.backends) {
        if (g.ref.kind !== 'InferencePoolImport' || g.ref.group !== GROUP_INFERENCE_X) continue;
        if (g.excluded.some((e) => NOT_A_REFERENCE.has(e.reason))) continue;
        const key = nsName(g.ref.namespace, g.ref.name);
        const byParent = uses.get(key) ?? new Map<string, ParentUse>();
        uses.set(key, byParent);
        for (const parent of route.parents) {
          const use = byParent.get(parent) ?? { groups: [] };
          use.groups.push(g);
          byParent.set(parent, use);
        }
      }
    }
  }
  const plans: ImportStatusPlan[] = [];
  for (const imp of input.imports) {
    const { namespace, name, generation } = imp.metadata;
    const ours = imp.status.controllers.find((c) => c.name === input.controllerName);
    const byParent = uses.get(nsName(namespace, name));
    if (!byParent || byParent.size === 0) {
      if (ours) plans.push({ namespace, name, desired: undefined });
      continue;
    }
    const gen = generation !== undefined ? { observedGeneration: generation } : {};
    const parents = [...byParent.keys()].sort().map((p) => parentStatus(input.controllerName, p, resolution(byParent.get(p)?.groups ?? []), gen));
    const conditions = [readiness(resolution([...byParent.values()].flatMap((u) => u.groups)), gen)];
    const desired = withTransitionTimes({ name: input.controllerName, parents, conditions }, ours ? entryFromModel(ours) : undefined, input.now);
    plans.push({ namespace, name, desired });
  }
  return plans;
}

/** What the backend groups that name an import resolve to. */
interface Resolution {
  /** Exporting clusters with a usable candidate, sorted. */
  readonly clusters: readonly string[];
  /** Why the others are not usable (nothing exports it, or a cluster's EPP does not resolve). */
  readonly problem: string | undefined;
}

function resolution(groups: readonly BackendGroup[]): Resolution {
  const clusters = [...new Set(groups.flatMap((g) => g.candidates.map((c) => c.cluster)))].sort();
  const exclusions = dedupe(groups.flatMap((g) => g.excluded));
  const unresolved = exclusions.filter((e) => e.reason !== NO_EXPORTING_CLUSTERS);
  if (unresolved.length > 0) return { clusters, problem: describe(unresolved) };
  if (clusters.length === 0) return { clusters, problem: 'no cluster exports this pool yet (status.controllers[].exportingClusters is empty)' };
  return { clusters, problem: undefined };
}

export type Generation = { observedGeneration?: number };

/** A condition with its lastTransitionTime still to be filled (carryTransitionTimes). */
export const condition = (type: string, ok: boolean, reason: string, message: string, gen: Generation): RawCondition => ({
  type,
  status: ok ? 'True' : 'False',
  reason,
  message,
  ...gen,
  lastTransitionTime: '',
});

/** Controller-level Accepted: the import is ready to be used when some exporting cluster is routable. */
function readiness(r: Resolution, gen: Generation): RawCondition {
  return r.clusters.length > 0
    ? condition('Accepted', true, REASON.Accepted, `ready: routable via exporting cluster(s) ${r.clusters.join(', ')}`, gen)
    : condition('Accepted', false, REASON.InvalidExtensionRef, `not routable: ${r.problem ?? 'no usable exporting cluster'}`, gen);
}

function parentStatus(controllerName: string, parent: string, r: Resolution, gen: Generation): RawParentStatus {
  const [namespace = '', name = ''] = parent.split('/');
  const via = r.clusters.length > 0 ? `routable via exporting cluster(s) ${r.clusters.join(', ')}` : 'no exporting cluster is routable';
  return {
    parentRef: { group: GROUP_GATEWAY, kind: 'Gateway', namespace, name },
    controllerName,
    conditions: [
      condition('Accepted', true, REASON.Accepted, `an HTTPRoute attached to this Gateway routes to the import; ${via}`, gen),
      r.problem === undefined
        ? condition('ResolvedRefs', true, REASON.ResolvedRefs, 'every exporting cluster resolves to an EPP (and parent, in Parent mode)', gen)
        : condition('ResolvedRefs', false, REASON.InvalidExtensionRef, r.problem, gen),
    ],
  };
}

function dedupe(exclusions: readonly Exclusion[]): Exclusion[] {
  const seen = new Map<string, Exclusion>();
  for (const e of exclusions) seen.set(`${e.subject}\u0000${e.reason}`, e);
  return [...seen.values()].sort((a, b) => a.subject.localeCompare(b.subject) || a.reason.localeCompare(b.reason));
}

function describe(exclusions: readonly Exclusion[]): string {
  const text = exclusions.map((e) => `${e.subject}: ${e.reason}: ${e.message}`).join('; ');
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE - 3)}...` : text;
}

/**
 * Fills lastTransitionTime: the previous entry's time for a condition (same
 * place, same type) whose status did not change, else `now`.
 */
export function withTransitionTimes(entry: RawControllerEntry, previous: RawControllerEntry | undefined, now: string): RawControllerEntry {
  const prevParent = (p: RawParentStatus): RawParentStatus | undefined =>
    previous?.parents.find((q) => q.parentRef.namespace === p.parentRef.namespace && q.parentRef.name === p.parentRef.name && q.parentRef.kind === p.parentRef.kind);
  const carry = (conditions: readonly RawCondition[], before: readonly RawCondition[] | undefined): RawCondition[] =>
    carryTransitionTimes(conditions, before, now);
  return {
    name: entry.name,
    parents: entry.parents.map((p) => ({ ...p, conditions: carry(p.conditions, prevParent(p)?.conditions) })),
    conditions: carry(entry.conditions, previous?.conditions),
  };
}

/** lastTransitionTime of each condition: the one of the same type `before` when its status did not change, else `now`. */
export function carryTransitionTimes(conditions: readonly RawCondition[], before: readonly RawCondition[] | undefined, now: string): RawCondition[] {
  return conditions.map((c) => {
    const old = before?.find((o) => o.type === c.type);
    const keep = old !== undefined && old.status === c.status && typeof old.lastTransitionTime === 'string' && old.lastTransitionTime !== '';
    return { ...c, lastTransitionTime: keep ? old.lastTransitionTime : now };
  });
}

/** Our entry as the decoder saw it, in the raw shape (for comparison and time carry-over). */
export function entryFromModel(c: ImportController): RawControllerEntry {
  return { name: c.name, parents: c.parents.map(parentFromModel), conditions: c.conditions.map(conditionFromModel) };
}

function parentFromModel(p: ParentStatus): RawParentStatus {
  return {
    parentRef: { group: p.parentRef.group, kind: p.parentRef.kind, namespace: p.parentRef.namespace ?? '', name: p.parentRef.name },
    controllerName: p.controllerName ?? '',
    conditions: p.conditions.map(conditionFromModel),
  };
}

export function conditionFromModel(c: Condition): RawCondition {
  return {
    type: c.type,
    status: c.status,
    reason: c.reason ?? '',
    message: c.message ?? '',
    ...(c.observedGeneration !== undefined ? { observedGeneration: c.observedGeneration } : {}),
    lastTransitionTime: c.lastTransitionTime ?? '',
  };
}

/** Order-insensitive for object keys, order-sensitive for lists: equal entries need no write. */
export function sameEntry(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
