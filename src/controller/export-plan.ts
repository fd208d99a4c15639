/**
 * The export-controller duty, as a pure function: from every member's exported
 * InferencePools and InferencePoolImports, what this controller wants in each
 * member. It does not care where the views come from: the hub controller reads
 * every member's API (hub/spoke); the member agent reads its own cluster and the
 * other members' export records on the hub (push/pull, export-agent-record.ts).
 *
 * - Exporters of namespace/name = the members whose InferencePool carries
 *   `inference.networking.x-k8s.io/export: ClusterSet` (last known objects of an
 *   unreachable member count: its outage must not withdraw its pools).
 * - Exported somewhere: in every member the InferencePoolImport exists and our
 *   status.controllers[] entry lists every exporter (sorted), Accepted True. An
 *   import is created only when neither the member's objects nor our own creates
 *   since (MemberView.created) show it.
 * - No exporter left: our entry is removed at once; after the grace the import
 *   is deleted, unless another controller's entry still lists exporting clusters.
 *   Imports we created (CREATED_BY_ANNOTATION) stay tracked without our entry, so a
 *   restart or a new leader during the grace still deletes them (its grace starts anew).
 * - Every annotated pool gets our status.parents[] entry (parentRef kind
 *   InferencePoolImport) with Exported True once every member has the import
 *   with our entry naming the pool's cluster; False naming the lagging members;
 *   False NotSupported for any other annotation value. No annotation: removed.
 *   While a member it would name is still in its first list since start, the
 *   pool's status is left as it is (not known yet, not lagging). Our entry is found
 *   also when the member's CRD pruned its controllerName (export-pool-parent.ts); it
 *   is then up to date when its conditions are, and more than one is never up to date.
 * - A member not listed since start, or whose pool is invalid, keeps the exports our
 *   entries record for it.
 */
import type { Condition, InferencePool, InferencePoolImport } from '../model/types.js';
import { EXPORT_ANNOTATION, GROUP_INFERENCE_X } from '../model/types.js';
import type { RawCondition } from './import-status.js';
import { controllerNamePruned, ownsPoolParent } from './export-pool-parent.js';

export const EXPORT_VALUE = 'ClusterSet';
/**
 * Set on the InferencePoolImports we create, valued with our controller name: an import we
 * created whose last exporter left is still ours to delete after the grace when the
 * withdrawal began before a restart or a leader change (our entry is gone by then).
 */
export const CREATED_BY_ANNOTATION = 'mcip-router.dev/created-by';

export const EXPORT_REASON = {
  Exported: 'Exported',
  Pending: 'Pending',
  NotSupported: 'NotSupported',
  Accepted: 'Accepted',
} as const;

/** What the planner reads of an InferencePool (a member's own object, or one another member's record names). */
export type PoolView = Pick<InferencePool, 'metadata' | 'status'>;

/** One member as the controller last saw it. */
export interface MemberView {
  readonly name: string;
  /** False: these are the last known objects (the member's API is unreachable or not listed yet). */
  readonly reachable: boolean;
  /** Why it counts as unreachable, as pool statuses name it (default: its API server is unreachable). */
  readonly unreachableWhy?: string;
  /** False until the member was listed once since start: its exports are then taken from our entries that name it. */
  readonly synced: boolean;
  /**
   * Its first list since start is still under way: whether it has the imports is not
   * known yet, so pool statuses that would name it as lagging are left as they are.
   */
  readonly starting: boolean;
  readonly pools: readonly PoolView[];
  readonly imports: readonly InferencePoolImport[];
  /** Namespaces an import create was refused in because they do not exist in this member. */
  readonly missingNamespaces: ReadonlySet<string>;
  /** namespace/names of InferencePools present but left out as invalid: their export state is taken from our entries. */
  readonly invalidPools: ReadonlySet<string>;
  /**
   * namespace/names of InferencePoolImports this controller created (or found existing
   * when creating) that `imports` does not show yet (the watch lags behind): they exist,
   * so they are not created again.
   */
  readonly created: ReadonlySet<string>;
}

export interface ExportPlanInput {
  readonly controllerName: string;
  /** Every member of the ClusterSet. */
  readonly members: readonly MemberView[];
  /** namespace/name -> when (ms) the last exporter was seen leaving. */
  readonly withdrawnSince: ReadonlyMap<string, number>;
  readonly now: number;
  readonly graceMs: number;
}

/** Our InferencePoolImport status.controllers[] entry (lastTransitionTime filled by the writer). */
export interface ExportEntry {
  name: string;
  exportingClusters: { name: string }[];
  conditions: RawCondition[];
}

/** Our InferencePool status.parents[] entry. */
export interface PoolParentEntry {
  parentRef: { group: string; kind: string; namespace: string; name: string };
  controllerName: string;
  conditions: RawCondition[];
}

export type ImportAction =
  | { readonly type: 'ensure'; readonly exists: boolean; readonly entry: ExportEntry; readonly upToDate: boolean }
  | { readonly type: 'remove-entry' }
  | { readonly type: 'delete' }
  | { readonly type: 'wait'; readonly deleteAt: number }
  | { readonly type: 'keep'; readonly why: string };

export interface MemberImportStep {
  readonly namespace: string;
  readonly name: string;
  readonly action: ImportAction;
}

export interface MemberPoolStep {
  readonly namespace: string;
  readonly name: string;
  /** undefined: our parents[] entry must not exist. */
  readonly entry: PoolParentEntry | undefined;
  readonly upToDate: boolean;
  /** Our entry as read lacks controllerName: the member's InferencePool CRD does not declare it. */
  readonly pruned: boolean;
}

export interface ExportPlan {
  /** namespace/name -> exporting members (sorted), for every key the controller tracks. */
  readonly exporters: ReadonlyMap<string, readonly string[]>;
  /** Per member: its InferencePoolImport steps. */
  readonly imports: ReadonlyMap<string, readonly MemberImportStep[]>;
  /** Per member: its InferencePool status steps. */
  readonly pools: ReadonlyMap<string, readonly MemberPoolStep[]>;
  /** The withdrawal clock for the next run. */
  readonly withdrawnSince: ReadonlyMap<string, number>;
  /** Earliest grace expiry still pending (ms), if any. */
  readonly nextDeadline: number | undefined;
}

export const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

const splitKey = (key: string): [string, string] => {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
};

export function planExports(input: ExportPlanInput): ExportPlan {
  const { controllerName: me, members } = input;
  const exporters = new Map<string, string[]>();
  for (const m of members) {
    for (const p of m.pools) {
      if (p.metadata.annotations[EXPORT_ANNOTATION] !== EXPORT_VALUE) continue;
      const key = keyOf(p.metadata.namespace, p.metadata.name);
      exporters.set(key, [...(exporters.get(key) ?? []), m.name]);
    }
  }
  // Our entry of each import, and the exporters it lists, looked up once per plan (the pool statuses ask for them members x pools x members times).
  type Entry = InferencePoolImport['status']['controllers'][number];
  const entries = new Map<InferencePoolImport, Entry | undefined>();
  const ourEntry = (imp: InferencePoolImport | undefined): Entry | undefined => {
    if (!imp) return undefined;
    if (!entries.has(imp)) entries.set(imp, imp.status.controllers.find((c) => c.name === me));
    return entries.get(imp);
  };
  const listedBy = new Map<InferencePoolImport, ReadonlySet<string>>();
  const lists = (imp: InferencePoolImport | undefined, exporter: string): boolean => {
    if (!imp) return false;
    let names = listedBy.get(imp);
    if (!names) listedBy.set(imp, (names = new Set((ourEntry(imp)?.exportingClusters ?? []).map((c) => c.name))));
    return names.has(exporter);
  };
  // What a member's pool says cannot be known (never listed, or the pool is invalid): keep what our entries record.
  const byName = new Map(members.map((m) => [m.name, m]));
  const unknown = (member: string, key: string): boolean => {
    const m = byName.get(member);
    return m !== undefined && (!m.synced || m.invalidPools.has(key));
  };
  for (const m of members) {
    for (const i of m.imports) {
      const key = keyOf(i.metadata.namespace, i.metadata.name);
      for (const c of ourEntry(i)?.exportingClusters ?? []) {
        if (!unknown(c.name, key)) continue;
        const list = exporters.get(key) ?? [];
        if (!list.includes(c.name)) exporters.set(key, [...list, c.name]);
      }
    }
  }
  for (const list of exporters.values()) list.sort();

  // Each member's imports by namespace/name, built once: the pool statuses ask every member for
  // every exported pool (members x pools x members lookups per plan).
  const importsOf = new Map<MemberView, Map<string, InferencePoolImport>>();
  for (const m of members) {
    const byKey = new Map<string, InferencePoolImport>();
    for (const i of m.imports) {
      const key = keyOf(i.metadata.namespace, i.metadata.name);
      if (!byKey.has(key)) byKey.set(key, i);
    }
    importsOf.set(m, byKey);
  }
  const importIn = (m: MemberView, key: string): InferencePoolImport | undefined => importsOf.get(m)?.get(key);

  const keys = new Set<string>([...exporters.keys(), ...input.withdrawnSince.keys()]);
  for (const m of members) {
    for (const i of m.imports) if (ourEntry(i) || i.metadata.annotations[CREATED_BY_ANNOTATION] === me) keys.add(keyOf(i.metadata.namespace, i.metadata.name));
  }

  const imports = new Map<string, MemberImportStep[]>(members.map((m) => [m.name, []]));
  const push = (m: MemberView, step: MemberImportStep): void => void imports.get(m.name)?.push(step);
  const withdrawnSince = new Map<string, number>();
  let nextDeadline: number | undefined;
  for (const key of [...keys].sort()) {
    const [namespace, name] = splitKey(key);
    const clusters = exporters.get(key) ?? [];
    if (clusters.length > 0) {
      const entry = exportEntry(me, clusters);
      for (const m of members) {
        const imp = importIn(m, key);
        const current = ourEntry(imp);
        const upToDate = current !== undefined && sameExportEntry(current, entry);
        push(m, { namespace, name, action: { type: 'ensure', exists: imp !== undefined || m.created.has(key), entry, upToDate } });
      }
    } else {
      const since = input.withdrawnSince.get(key) ?? input.now;
      const deleteAt = since + input.graceMs;
      let pending = false;
      for (const m of members) {
        const imp = importIn(m, key);
        if (!imp) continue;
        const others = imp.status.controllers.filter((c) => c.name !== me && c.exportingClusters.length > 0);
        if (others.length > 0) {
          const why = `exported through ${others.map((c) => c.name).join(', ')}`;
          push(m, { namespace, name, action: ourEntry(imp) ? { type: 'remove-entry' } : { type: 'keep', why } });
          continue;
        }
        pending = true;
        if (input.now >= deleteAt) push(m, { namespace, name, action: { type: 'delete' } });
        else push(m, { namespace, name, action: ourEntry(imp) ? { type: 'remove-entry' } : { type: 'wait', deleteAt } });
      }
      if (pending) {
        withdrawnSince.set(key, since);
        if (input.now < deleteAt) nextDeadline = Math.min(nextDeadline ?? deleteAt, deleteAt);
      }
    }
  }

  const pools = new Map<string, MemberPoolStep[]>();
  for (const m of members) {
    const steps: MemberPoolStep[] = [];
    for (const p of m.pools) {
      const { namespace, name } = p.metadata;
      const value = p.metadata.annotations[EXPORT_ANNOTATION];
      const mine = p.status.parents.filter(ownsPoolParent(me, namespace, name));
      const current = mine[0];
      if (value === undefined && !current) continue;
      const behind = value === EXPORT_VALUE ? lagging(members, keyOf(namespace, name), m.name, importIn, lists) : [];
      // Not known yet rather than lagging: written once that member's first list ended.
      if (behind.some((b) => b.member.starting)) continue;
      const entry = value === undefined ? undefined : poolEntry(me, p, value, behind.map((b) => `${b.member.name} (${b.why})`));
      // controllerName aside: a CRD that prunes it would otherwise have it rewritten on every pass.
      const upToDate = entry === undefined ? current === undefined : mine.length === 1 && current !== undefined && sameConditions(current.conditions, entry.conditions);
      steps.push({ namespace, name, entry, upToDate, pruned: current !== undefined && controllerNamePruned(current) });
    }
    pools.set(m.name, steps);
  }
  return { exporters, imports, pools, withdrawnSince, nextDeadline };
}

function exportEntry(me: string, clusters: readonly string[]): ExportEntry {
  return {
    name: me,
    exportingClusters: clusters.map((name) => ({ name })),
    conditions: [
      { type: 'Accepted', status: 'True', reason: EXPORT_REASON.Accepted, message: `exported by ${clusters.join(', ')}`, lastTransitionTime: '' },
    ],
  };
}

/** The members that do not yet show the import with our entry naming `exporter`, each with why. */
function lagging(
  members: readonly MemberView[],
  key: string,
  exporter: string,
  importIn: (m: MemberView, key: string) => InferencePoolImport | undefined,
  lists: (imp: InferencePoolImport | undefined, exporter: string) => boolean,
): { member: MemberView; why: string }[] {
  const [namespace] = splitKey(key);
  const out: { member: MemberView; why: string }[] = [];
  for (const m of members) {
    const imp = importIn(m, key);
    if (lists(imp, exporter)) continue;
    const why = m.missingNamespaces.has(namespace)
      ? `namespace ${namespace} does not exist there`
      : !m.reachable
        ? (m.unreachableWhy ?? 'its API server is unreachable')
        : imp
          ? 'status not written yet'
          : 'import not created yet';
    out.push({ member: m, why });
  }
  return out;
}

function poolEntry(me: string, pool: PoolView, value: string, behind: readonly string[]): PoolParentEntry {
  const { namespace, name, generation } = pool.metadata;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const condition: RawCondition =
    value !== EXPORT_VALUE
      ? {
          type: 'Exported',
          status: 'False',
          reason: EXPORT_REASON.NotSupported,
          message: `${EXPORT_ANNOTATION}: "${value}" is not supported (the only supported value is "${EXPORT_VALUE}")`,
          ...gen,
          lastTransitionTime: '',
        }
      : behind.length === 0
        ? { type: 'Exported', status: 'True', reason: EXPORT_REASON.Exported, message: 'InferencePoolImport present in every member', ...gen, lastTransitionTime: '' }
        : { type: 'Exported', status: 'False', reason: EXPORT_REASON.Pending, message: `waiting for: ${behind.join(', ')}`, ...gen, lastTransitionTime: '' };
  return { parentRef: { group: GROUP_INFERENCE_X, kind: 'InferencePoolImport', namespace, name }, controllerName: me, conditions: [condition] };
}

function sameExportEntry(current: InferencePoolImport['status']['controllers'][number], desired: ExportEntry): boolean {
  const names = current.exportingClusters.map((c) => c.name);
  return names.join('\u0000') === desired.exportingClusters.map((c) => c.name).join('\u0000') && sameConditions(current.conditions, desired.conditions);
}

/** Same types, statuses, reasons, messages and generations (transition times aside). */
export function sameConditions(current: readonly Condition[], desired: readonly RawCondition[]): boolean {
  if (current.length !== desired.length) return false;
  return desired.every((d, i) => {
    const c = current[i];
    return c !== undefined && c.type === d.type && c.status === d.status && (c.reason ?? '') === d.reason && (c.message ?? '') === d.message && c.observedGeneration === d.observedGeneration;
  });
}

/** Fills lastTransitionTime: kept from the previous condition of the same type and status, else `now`. */
export function carryTransitionTimes(desired: readonly RawCondition[], previous: readonly Partial<RawCondition>[] | undefined, now: string): RawCondition[] {
  return desired.map((c) => {
    const old = previous?.find((o) => o.type === c.type);
    const keep = old !== undefined && old.status === c.status && typeof old.lastTransitionTime === 'string' && old.lastTransitionTime !== '';
    return { ...c, lastTransitionTime: keep ? (old.lastTransitionTime as string) : now };
  });
}
