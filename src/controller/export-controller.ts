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

export interface ExportControllerHandle {
  isLeader(): boolean;
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
  const members: MemberRuntime[] = o.members
    .map((m): MemberRuntime => {
      const rt: MemberRuntime = {
        name: m.name,
        source: m.source,
        client: m.client,
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
          onError: (err) => log.error({ err, member: m.name }, 'export reconcile failed'),
        }),
      };
      return rt;
    })
    .sort((a, b) => a.name.localeCompare(b.name));
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
        reachable: m.state !== undefined && !m.state.stale,
        synced: m.everSynced,
        starting: m.starting,
        pools: objects.filter((x): x is InferencePool => x.kind === 'InferencePool'),
        imports,
        missingNamespaces: m.missingNamespaces,
        created: m.created,
        invalidPools: new Set((m.state?.errors ?? []).flatMap((e) => (e.object.startsWith(INVALID_POOL) ? [e.object.slice(INVALID_POOL.length)] : []))),
      };
    });

  const plan = (): ExportPlan => {
    const p = planExports({ controllerName: settings.name, members: views(), withdrawnSince, now: now(), graceMs: settings.withdrawalGraceMs });
    withdrawnSince = p.withdrawnSince;
    record.observePlan(p, views());
    if (deadlineTimer) clearTimeout(deadlineTimer);
    deadlineTimer = p.nextDeadline !== undefined && !stopped ? setTimeout(() => triggerAll(), Math.max(0, p.nextDeadline - now()) + 5) : undefined;
    return p;
  };

  /** One pass of a member's worker; true when a step failed. */
  async function runMember(m: MemberRuntime): Promise<boolean> {
    // Its own first list comes first: until then what it holds is not known.
    if (stopped || !isLeader() || !m.client || m.starting) return false;
    return runMemberSteps({
      member: m.name,
      plan: plan(),
      client: m.client,
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
    for (const m of members) m.loop.trigger();
  }

  // Every member starts on its own: one whose API hangs delays only its own part, not
  // the others' writes, the Lease campaign or the caller (readiness).
  for (const m of members) {
    m.source
      .start({
        onState: (s) => {
          m.state = s;
          if (!s.stale) m.everSynced = true;
          if (!s.stale) record.memberError(m.name, undefined);
          triggerAll();
        },
        onError: (e) => record.memberError(m.name, e.message),
      })
      .catch((err: unknown) => {
        // The source keeps retrying in the background; its part waits until it answers.
        log.warn({ member: m.name, err: (err as Error).message }, `member ${m.name}: not reachable yet; its part of the export waits`);
        record.memberError(m.name, (err as Error).message);
      })
      .finally(() => {
        m.starting = false;
        const kc = m.source.kubeConfig;
        if (!m.client && kc) m.client = o.clientFor(kc);
        m.loop.start();
        // The others' pool statuses waited for this member's first list.
        triggerAll();
      });
  }
  elector?.start();

  return {
    isLeader,
    record,
    async reconcile() {
      await Promise.all(members.map((m) => m.loop.reconcile()));
    },
    debug: () => record.debug(isLeader(), members.map((m) => ({ name: m.name, reachable: m.state !== undefined && !m.state.stale, synced: m.everSynced, missingNamespaces: [...m.missingNamespaces].sort(), controllerNamePruned: [...m.prunedPools].sort() }))),
    async stop() {
      if (stopped) return;
      stopped = true;
      if (deadlineTimer) clearTimeout(deadlineTimer);
      // Each waits for its running pass at most 2 s: a write stuck on a hung member must not hold up shutdown.
      await Promise.all(members.map((m) => m.loop.stop()));
      await elector?.stop();
      await Promise.all(members.map((m) => m.source.stop()));
    },
  };
}
