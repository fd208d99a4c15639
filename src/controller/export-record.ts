/**
 * What the export controller did and why, per exported namespace/name and per
 * member: the last outcome of each part (the import, the pool's status), the
 * exporters, withdrawals in progress, and counters for the mcip_export_*
 * metrics. Bounded by the objects the controller tracks.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ExportPlan, MemberView } from './export-plan.js';

/** The action label of mcip_export_actions_total: the step a member's run took. */
export const EXPORT_ACTIONS = ['create', 'status', 'remove-entry', 'delete', 'wait', 'keep', 'pool-status', 'pool-status-remove'] as const;
export type ExportAction = (typeof EXPORT_ACTIONS)[number];
/** Outcomes of a step; the counted ones (COUNTED_OUTCOMES) are the metric's outcome label. */
export const EXPORT_OUTCOMES = ['written', 'removed', 'deleted', 'conflict', 'gone', 'full', 'kept', 'namespace-missing', 'error', 'unchanged', 'pending'] as const;
export type ExportOutcome = (typeof EXPORT_OUTCOMES)[number];
/** Steps with these outcomes made no request that changed anything and are not counted. */
const UNCOUNTED: ReadonlySet<ExportOutcome> = new Set(['unchanged', 'pending']);
export const COUNTED_OUTCOMES: readonly ExportOutcome[] = EXPORT_OUTCOMES.filter((o) => !UNCOUNTED.has(o));
/** Actions that can be counted: wait and keep only ever end pending or unchanged. */
export const COUNTED_ACTIONS: readonly ExportAction[] = EXPORT_ACTIONS.filter((a) => a !== 'wait' && a !== 'keep');

export interface StepRecord {
  readonly action: ExportAction;
  readonly outcome: ExportOutcome;
  readonly why?: string;
  readonly at: string;
}

interface PoolRecord {
  exporters: readonly string[];
  deleteAt?: string;
  members: Record<string, { import?: StepRecord; pool?: StepRecord }>;
}

export interface MemberDebug {
  readonly name: string;
  readonly reachable: boolean;
  readonly synced: boolean;
  readonly missingNamespaces: readonly string[];
  /** Pools whose status.parents[] entry this member's InferencePool CRD strips of controllerName (a CRD before GIE v1.1.0). */
  readonly controllerNamePruned: readonly string[];
}

export interface ExportDebug {
  readonly controllerName: string;
  readonly leader: boolean;
  readonly members: readonly (MemberDebug & { readonly error?: string })[];
  readonly pools: Readonly<Record<string, PoolRecord>>;
}

/** Counter key: member, action, outcome. */
type CountKey = string;

export class ExportRecord {
  private pools = new Map<string, PoolRecord>();
  private readonly errors = new Map<string, string>();
  private readonly counts = new Map<CountKey, number>();
  private lagging = new Map<string, number>();

  constructor(
    readonly controllerName: string,
    private readonly graceMs: number,
  ) {}

  observePlan(plan: ExportPlan, views: readonly MemberView[]): void {
    const next = new Map<string, PoolRecord>();
    const keys = new Set([...plan.exporters.keys(), ...plan.withdrawnSince.keys()]);
    for (const key of [...keys].sort()) {
      const since = plan.withdrawnSince.get(key);
      next.set(key, {
        exporters: plan.exporters.get(key) ?? [],
        ...(since !== undefined && !plan.exporters.has(key) ? { deleteAt: new Date(since + this.graceMs).toISOString() } : {}),
        members: this.pools.get(key)?.members ?? {},
      });
    }
    // Annotated pools with an unsupported value are tracked too (their status says why).
    for (const steps of plan.pools.values()) {
      for (const s of steps) {
        const key = `${s.namespace}/${s.name}`;
        if (!next.has(key) && s.entry) next.set(key, { exporters: [], members: this.pools.get(key)?.members ?? {} });
      }
    }
    this.pools = next;
    const lagging = new Map<string, number>();
    for (const v of views) {
      const n = (plan.imports.get(v.name) ?? []).filter((s) => s.action.type === 'ensure' && !s.action.upToDate).length;
      lagging.set(v.name, n);
    }
    this.lagging = lagging;
  }

  /** Notes a step's outcome (counted unless unchanged or pending). */
  note(key: string, member: string, part: 'import' | 'pool', r: Omit<StepRecord, 'at'>): void {
    const rec = this.pools.get(key) ?? { exporters: [], members: {} };
    this.pools.set(key, rec);
    const m = (rec.members[member] ??= {});
    m[part] = { ...r, at: new Date().toISOString() };
    if (UNCOUNTED.has(r.outcome)) return;
    const ck = `${member}\u0000${r.action}\u0000${r.outcome}`;
    this.counts.set(ck, (this.counts.get(ck) ?? 0) + 1);
  }

  memberError(member: string, message: string | undefined): void {
    if (message === undefined) this.errors.delete(member);
    else this.errors.set(member, message);
  }

  /** Requests' outcomes since start, by member, action and outcome ("unchanged" is not counted). */
  actionCounts(): { member: string; action: string; outcome: string; value: number }[] {
    return [...this.counts].map(([k, value]) => {
      const [member = '', action = '', outcome = ''] = k.split('\u0000');
      return { member, action, outcome, value };
    });
  }

  debug(leader: boolean, members: readonly MemberDebug[]): ExportDebug {
    return {
      controllerName: this.controllerName,
      leader,
      members: members.map((m) => ({ ...m, ...(this.errors.has(m.name) ? { error: this.errors.get(m.name) } : {}) })),
      pools: Object.fromEntries(this.pools),
    };
  }

  /** Registers the mcip_export_* metrics. */
  register(registry: Registry, isLeader: () => boolean, reachable: () => ReadonlyMap<string, boolean>): void {
    const record = this;
    const reported = new Map<string, number>();
    new Counter({
      name: 'mcip_export_actions_total',
      help: `Export-controller steps that had something to do, by member, action (${COUNTED_ACTIONS.join(', ')}) and outcome (${COUNTED_OUTCOMES.join(', ')}); a failed request is outcome error with the action it was for.`,
      labelNames: ['member', 'action', 'outcome'] as const,
      registers: [registry],
      collect() {
        for (const c of record.actionCounts()) {
          const k = `${c.member}\u0000${c.action}\u0000${c.outcome}`;
          const delta = c.value - (reported.get(k) ?? 0);
          if (delta > 0) this.inc({ member: c.member, action: c.action, outcome: c.outcome }, delta);
          reported.set(k, c.value);
        }
      },
    });
    new Gauge({
      name: 'mcip_export_leader',
      help: '1 on the replica that holds the export controller lease and writes.',
      registers: [registry],
      collect() {
        this.set(isLeader() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'mcip_export_exported_pools',
      help: 'InferencePool namespace/names exported by at least one member.',
      registers: [registry],
      collect() {
        this.set([...record.pools.values()].filter((p) => p.exporters.length > 0).length);
      },
    });
    new Gauge({
      name: 'mcip_export_pending_imports',
      help: 'Exported pools whose InferencePoolImport in this member is missing or lacks our current entry.',
      labelNames: ['member'] as const,
      registers: [registry],
      collect() {
        for (const [member, n] of record.lagging) this.set({ member }, n);
      },
    });
    new Gauge({
      name: 'mcip_export_member_reachable',
      help: '1 when the member\'s API server answers the export controller\'s watches.',
      labelNames: ['member'] as const,
      registers: [registry],
      collect() {
        for (const [member, up] of reachable()) this.set({ member }, up ? 1 : 0);
      },
    });
  }
}
