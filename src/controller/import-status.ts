/**
 * The import-controller duty, as a pure function: for every local
 * InferencePoolImport, OUR desired `status.controllers[]` entry.
 *
 * - Referenced = a backendRef of an HTTPRoute attached to a Gateway the router
 *   serves (the snapshot's routes) names the import. Unreferenced imports that
 *   still carry our entry get a plan to remove it.
 * - parents[] = those Gateways, each with Accepted (True when at least one
 *   exporting cluster is usable; False NoExportingClusters / NoUsableClusters)
 *   and ResolvedRefs (False naming the snapshot's exclusions), observedGeneration
 *   = the import's metadata.generation, lastTransitionTime kept while the
 *   condition's status does not change.
 */
import type { Condition, ImportController, InferencePoolImport, ParentStatus } from '../model/types.js';
import { GROUP_GATEWAY, GROUP_INFERENCE_X } from '../model/types.js';
import type { BackendGroup, Exclusion, RouteSummary } from '../snapshot/types.js';

/** Upstream CRD limits. */
export const MAX_CONTROLLERS = 8;
export const MAX_PARENTS = 32;
const MAX_MESSAGE = 32_768;

export const REASON = {
  Accepted: 'Accepted',
  NoExportingClusters: 'NoExportingClusters',
  NoUsableClusters: 'NoUsableClusters',
  ResolvedRefs: 'ResolvedRefs',
} as const;

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
}

export interface ImportStatusPlan {
  readonly namespace: string;
  readonly name: string;
  /** undefined: our entry must not exist (the import is not referenced). */
  readonly desired: RawControllerEntry | undefined;
  /** Parents beyond the 32-entry limit that were left out. */
  readonly droppedParents: number;
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
      if (ours) plans.push({ namespace, name, desired: undefined, droppedParents: 0 });
      continue;
    }
    const parentKeys = [...byParent.keys()].sort();
    const kept = parentKeys.slice(0, MAX_PARENTS);
    const parents = kept.map((p) => parentStatus(input.controllerName, p, byParent.get(p)?.groups ?? [], generation));
    const desired = withTransitionTimes({ name: input.controllerName, parents }, ours ? entryFromModel(ours) : undefined, input.now);
    plans.push({ namespace, name, desired, droppedParents: parentKeys.length - kept.length });
  }
  return plans;
}

function parentStatus(controllerName: string, parent: string, groups: readonly BackendGroup[], generation: number | undefined): RawParentStatus {
  const [namespace = '', name = ''] = parent.split('/');
  const clusters = [...new Set(groups.flatMap((g) => g.candidates.map((c) => c.cluster)))].sort();
  const exclusions = dedupe(groups.flatMap((g) => g.excluded));
  const noExporters = exclusions.some((e) => e.reason === REASON.NoExportingClusters);
  const unresolved = exclusions.filter((e) => e.reason !== REASON.NoExportingClusters);
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const accepted: RawCondition =
    clusters.length > 0
      ? { type: 'Accepted', status: 'True', reason: REASON.Accepted, message: `routable via exporting cluster(s): ${clusters.join(', ')}`, ...gen, lastTransitionTime: '' }
      : noExporters || unresolved.length === 0
        ? { type: 'Accepted', status: 'False', reason: REASON.NoExportingClusters, message: 'no cluster exports this pool yet (status.controllers[].exportingClusters is empty)', ...gen, lastTransitionTime: '' }
        : { type: 'Accepted', status: 'False', reason: REASON.NoUsableClusters, message: `no exporting cluster is usable: ${describe(unresolved)}`, ...gen, lastTransitionTime: '' };
  const resolved: RawCondition =
    unresolved.length === 0
      ? { type: 'ResolvedRefs', status: 'True', reason: REASON.ResolvedRefs, message: 'every exporting cluster resolves to an EPP (and parent, in Parent mode)', ...gen, lastTransitionTime: '' }
      : { type: 'ResolvedRefs', status: 'False', reason: unresolved[0]?.reason ?? 'Unresolved', message: describe(unresolved), ...gen, lastTransitionTime: '' };
  return {
    parentRef: { group: GROUP_GATEWAY, kind: 'Gateway', namespace, name },
    controllerName,
    conditions: [accepted, resolved],
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
 * parent, same type) whose status did not change, else `now`.
 */
export function withTransitionTimes(entry: RawControllerEntry, previous: RawControllerEntry | undefined, now: string): RawControllerEntry {
  const prevParent = (p: RawParentStatus): RawParentStatus | undefined =>
    previous?.parents.find((q) => q.parentRef.namespace === p.parentRef.namespace && q.parentRef.name === p.parentRef.name && q.parentRef.kind === p.parentRef.kind);
  return {
    name: entry.name,
    parents: entry.parents.map((p) => {
      const prev = prevParent(p);
      return {
        ...p,
        conditions: p.conditions.map((c) => {
          const old = prev?.conditions.find((o) => o.type === c.type);
          const keep = old !== undefined && old.status === c.status && old.lastTransitionTime !== '';
          return { ...c, lastTransitionTime: keep ? old.lastTransitionTime : now };
        }),
      };
    }),
  };
}

/** Our entry as the decoder saw it, in the raw shape (for comparison and time carry-over). */
export function entryFromModel(c: ImportController): RawControllerEntry {
  return { name: c.name, parents: c.parents.map(parentFromModel) };
}

function parentFromModel(p: ParentStatus): RawParentStatus {
  return {
    parentRef: { group: p.parentRef.group, kind: p.parentRef.kind, namespace: p.parentRef.namespace ?? '', name: p.parentRef.name },
    controllerName: p.controllerName ?? '',
    conditions: p.conditions.map(conditionFromModel),
  };
}

function conditionFromModel(c: Condition): RawCondition {
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
