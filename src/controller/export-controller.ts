/**
 * The export controller (hub topology): watches InferencePools and
 * InferencePoolImports in every member with a Kubernetes source and carries out
 * planExports() there, on the leader replica only (its own Lease).
 *
 * - One worker per member: a member whose API server hangs or is down holds up
 *   only its own writes (every request is bounded by requestTimeoutMs); the
 *   others go on, also at start: each member's worker starts once that member's
 *   first list ended (synced or failed), the Lease campaign at once. A worker
 *   re-plans from the latest views each run.
 * - Runs on every member state change, on gaining leadership, at a withdrawal's
 *   grace expiry, after a failure (that member's retry, with backoff) and every
 *   resyncMs; each worker is a ReconcileLoop.
 * - A member never listed since start keeps its recorded exports (our entries
 *   that name it), so a restart during its outage withdraws nothing.
 * - Members may join and leave while it runs (join/leave, for ClusterProfile
 *   members). One that leaves is treated as a static member removed from the
 *   config: nothing more is read from or written to it (its imports and pool
 *   entries stay there as they are), and its exports leave the others' lists, the
 *   imports it alone exported being deleted after the withdrawal grace. One in an
 *   outage (health false) counts as unreachable (its last known objects keep its
 *   exports) and gets no writes until it is healthy again.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ExportControllerConfig } from '../config/export-schema.js';
import type { InferencePool, InferencePoolImport } from '../model/types.js';
import type { KubernetesSource } from '../sources/kubernetes/kubernetes-source.js';
import type { ClusterState } from '../sources/types.js';
import { ExportRecord, type ExportDebug } from './export-record.js';
import { keyOf, planExports, type ExportPlan, type MemberView } from './export-plan.js';
import { runMemberSteps } from './export-steps.js';
import type { ExportClient } from './export-writer.js';
import { rfc3339 } from './import-status.js';
import { electorFor, type LeaseClient } from './leader-election.js';
import { ReconcileLoop } from './reconcile-loop.js';

/** How the decoder names an invalid InferencePool in FieldError.object ("InferencePool ns/name"). */
const INVALID_POOL = 'InferencePool ';
/** Longest a computed plan is reused by passes that nothing invalidated (a resync pass, a retry). */
const PLAN_REUSE_MS = 1000;

export interface ExportMember {
  readonly name: string;
  /** Watches InferencePool and InferencePoolImport in this member. */
  readonly source: KubernetesSource;
  /** Writes; built from the member's KubeConfig once the source started, unless given. */
  readonly client?: ExportClient;
}

export interface ExportControllerOptions {
  readonly settings: ExportControllerConfig;
  readonly members: readonly ExportMember[];
  /** Builds a member's client from its KubeConfig (default: createExportClient). */
  readonly clientFor: (kc: KubeConfig) => ExportClient;
  /** The Lease lives here; undefined when leader election is off. */
  readonly lease?: { readonly client: LeaseClient; readonly namespace: string; readonly identity: string };
  readonly logger: Logger;
  readonly now?: () => number;
}

/**
 * A member whose source someone else runs (a ClusterProfile member, fleet-members.ts): the
 * controller is told its states, errors and health, and when it leaves.
 */
export interface JoinedMember {
  readonly name: string;
  readonly source: KubernetesSource;
  /** Settles once its first list ended (synced or not). */
  readonly started: Promise<void>;
}

export interface ExportControllerHandle {
  isLeader(): boolean;
  /** A member joins: it is watched through its own source, written once its first list ended. */
  join(m: JoinedMember): void;
  state(member: string, s: ClusterState): void;
  error(member: string, message: string): void;
  /** False: an outage (its last known objects count, nothing is written to it) until true again. */
  health(member: string, healthy: boolean, message?: string): void;
  /** The member leaves: nothing more is written to it; its exports leave the others' lists (withdrawal grace). */
  leave(member: string): Promise<void>;
  /** Runs every member's worker now and waits for them. */
  reconcile(): Promise<void>;
  debug(): ExportDebug;
  /** What it did and why (/debug/exports, mcip_export_* metrics). */
  readonly record: ExportRecord;
  stop(): Promise<void>;
}

interface MemberRuntime {
  readonly name: string;
  readonly source: KubernetesSource;
  /** The controller started the source (a static member) and stops it. */
  readonly ownsSource: boolean;
  /** Undefined: healthy; else why it is in an outage. */
  outage: string | undefined;
  client: ExportClient | undefined;
  state: ClusterState | undefined;
  everSynced: boolean;
  /** Its first list is under way: what it holds is not known yet (nor that it is unreachable). */
  starting: boolean;
  readonly missingNamespaces: Set<string>;
  /** Imports we created (or found existing) that its objects did not show yet. */
  readonly created: Set<string>;
  /** Pools whose status.parents[] entry its CRD strips of controllerName. */
  readonly prunedPools: Set<string>;
  /** This member's worker: its reconcile passes, retried with backoff on failure. */
  readonly loop: ReconcileLoop<boolean>;
}

export async function startExportController(o: ExportControllerOptions): Promise<ExportControllerHandle> {
  const { settings } = o;
  const log = o.logger.child({ component: 'export-controller' });
  const now = o.now ?? Date.now;
  const record = new ExportRecord(settings.name, settings.withdrawalGraceMs);
  const members: MemberRuntime[] = [];
  let withdrawnSince: ReadonlyMap<string, number> = new Map();
  let stopped = false;
  let deadlineTimer: NodeJS.Timeout | undefined;

  const elector = o.lease ? electorFor(settings.leaderElection, o.lease, () => triggerAll(), log) : undefined;
  const isLeader = (): boolean => !stopped && (elector ? elector.isLeader() : true);

  const views = (): MemberView[] =>
    members.map((m) => {
      const objects = m.state?.objects ?? [];
      const imports = objects.filter((x): x is InferencePoolImport => x.kind === 'InferencePoolImport');
      // Once its objects show an import we created, they speak for it (a later delete included).
      for (const i of imports) m.created.delete(keyOf(i.metadata.namespace, i.metadata.name));
      return {
        name: m.name,
        reachable: reachable(m),
        synced: m.everSynced,
        starting: m.starting,
        pools: objects.filter((x): x is InferencePool => x.kind === 'InferencePool'),
        imports,
        missingNamespaces: m.missingNamespaces,
        created: m.created,
        invalidPools: new Set((m.state?.errors ?? []).flatMap((e) => (e.object.startsWith(INVALID_POOL) ? [e.object.slice(INVALID_POOL.length)] : []))),
      };
    });

  /**
   * The plan every member's pass reads, computed once per change rather than once per pass: a
   * state change triggers every member's worker, and at fleet size planning is the cost (each
   * plan looks at every member's imports for every exported pool). Dropped on every trigger of
   * all workers (a state, health, member or leader change, a grace deadline), after a pass that
   * changed what the plan reads of its member (imports created, namespaces found missing, pruned
   * entries), on reconcile(), and at the latest PLAN_REUSE_MS after it was made.
   */
  let cached: { readonly plan: ExportPlan; readonly at: number } | undefined;
  const plan = (): ExportPlan => {
    const at = now();
    if (cached && at - cached.at >= 0 && at - cached.at < PLAN_REUSE_MS) return cached.plan;
    const v = views();
    const p = planExports({ controllerName: settings.name, members: v, withdrawnSince, now: at, graceMs: settings.withdrawalGraceMs });
    cached = { plan: p, at };
    withdrawnSince = p.withdrawnSince;
    record.observePlan(p, v);
    if (deadlineTimer) clearTimeout(deadlineTimer);
    deadlineTimer = p.nextDeadline !== undefined && !stopped ? setTimeout(() => triggerAll(), Math.max(0, p.nextDeadline - now()) + 5) : undefined;
    return p;
  };

  /** One pass of a member's worker; true when a step failed. */
  async function runMember(m: MemberRuntime): Promise<boolean> {
    // Its own first list comes first: until then what it holds is not known. A member in an outage gets no writes.
    const client = m.client;
    if (stopped || !isLeader() || !client || m.starting || m.outage !== undefined || !members.includes(m)) return false;
    const before = readBySteps(m);
    try {
      return await runSteps(m, client);
    } finally {
      if (readBySteps(m) !== before) cached = undefined;
    }
  }

  /** What a pass may change that the plan reads of its member (sizes: a pass only adds to these sets or clears entries). */
  const readBySteps = (m: MemberRuntime): string => `${m.created.size}/${m.missingNamespaces.size}/${m.prunedPools.size}`;

  function runSteps(m: MemberRuntime, client: ExportClient): Promise<boolean> {
    return runMemberSteps({
      member: m.name,
      plan: plan(),
      client,
      controllerName: settings.name,
      now: () => rfc3339(new Date(now())),
      missingNamespaces: m.missingNamespaces,
      created: m.created,
      prunedPools: m.prunedPools,
      record,
      logger: log,
      stillLeading: isLeader,
    });
  }

  function triggerAll(): void {
    cached = undefined;
    for (const m of members) m.loop.trigger();
  }

  const find = (name: string): MemberRuntime | undefined => members.find((m) => m.name === name);

  function onState(m: MemberRuntime, s: ClusterState): void {
    m.state = s;
    if (!s.stale) m.everSynced = true;
    if (!s.stale && m.outage === undefined) record.memberError(m.name, undefined);
    triggerAll();
  }

  /** Adds a member; every member starts on its own: one whose API hangs delays only its own part, not the others' writes, the Lease campaign or the caller (readiness). */
  function add(name: string, source: KubernetesSource, started: Promise<void>, ownsSource: boolean, client?: ExportClient): void {
    if (stopped || find(name)) return;
    const rt: MemberRuntime = {
      name,
      source,
      ownsSource,
      outage: undefined,
      client,
      state: undefined,
      everSynced: false,
      starting: true,
      missingNamespaces: new Set<string>(),
      created: new Set<string>(),
      prunedPools: new Set<string>(),
      loop: new ReconcileLoop<boolean>({
        pass: () => runMember(rt),
        failed: (f) => f,
        retryInitialMs: Math.min(settings.resyncMs, 2000),
        retryMaxMs: settings.resyncMs,
        resyncMs: settings.resyncMs,
        onError: (err) => log.error({ err, member: name }, 'export reconcile failed'),
      }),
    };
    members.push(rt);
    members.sort((a, b) => a.name.localeCompare(b.name));
    // A new member (still starting) changes what every plan says: no pass reuses one made without it.
    cached = undefined;
    started
      .catch((err: unknown) => {
        // The source keeps retrying in the background; its part waits until it answers.
        log.warn({ member: name, err: (err as Error).message }, `member ${name}: not reachable yet; its part of the export waits`);
        record.memberError(name, (err as Error).message);
      })
      .finally(() => {
        if (!members.includes(rt)) return;
        rt.starting = false;
        const kc = rt.source.kubeConfig;
        if (!rt.client && kc) rt.client = o.clientFor(kc);
        rt.loop.start();
        // The others' pool statuses waited for this member's first list.
        triggerAll();
      });
  }

  for (const m of o.members) {
    const listener = { onState: (s: ClusterState) => onState(find(m.name)!, s), onError: (e: { message: string }) => record.memberError(m.name, e.message) };
    add(m.name, m.source, m.source.start(listener), true, m.client);
  }
  elector?.start();

  return {
    isLeader,
    record,
    join: (m) => add(m.name, m.source, m.started, false),
    state(name, s) {
      const m = find(name);
      if (m) onState(m, s);
    },
    error(name, message) {
      if (find(name)) record.memberError(name, message);
    },
    health(name, healthy, message) {
      const m = find(name);
      if (!m) return;
      m.outage = healthy ? undefined : (message ?? 'outage');
      record.memberError(name, m.outage);
      triggerAll();
    },
    async leave(name) {
      const m = find(name);
      if (!m) return;
      members.splice(members.indexOf(m), 1);
      cached = undefined;
      record.memberError(name, undefined);
      await m.loop.stop();
      if (m.ownsSource) await m.source.stop();
      log.info({ member: name }, `member ${name} left: nothing more is written to it; its exports leave the other members' lists`);
      triggerAll();
    },
    async reconcile() {
      cached = undefined;
      await Promise.all(members.map((m) => m.loop.reconcile()));
    },
    debug: () => record.debug(isLeader(), members.map((m) => ({ name: m.name, reachable: reachable(m), synced: m.everSynced, missingNamespaces: [...m.missingNamespaces].sort(), controllerNamePruned: [...m.prunedPools].sort() }))),
    async stop() {
      if (stopped) return;
      stopped = true;
      if (deadlineTimer) clearTimeout(deadlineTimer);
      // Each waits for its running pass at most 2 s: a write stuck on a hung member must not hold up shutdown.
      await Promise.all(members.map((m) => m.loop.stop()));
      await elector?.stop();
      await Promise.all(members.filter((m) => m.ownsSource).map((m) => m.source.stop()));
    },
  };
}

/** Its objects are current: listed, not stale, and not in an outage. */
function reachable(m: MemberRuntime): boolean {
  return m.state !== undefined && !m.state.stale && m.outage === undefined;
}
