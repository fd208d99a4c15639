/**
 * The export controller (hub topology): watches InferencePools and
 * InferencePoolImports in every member with a Kubernetes source and carries out
 * planExports() there, on the leader replica only (its own Lease).
 *
 * - One worker per member: a member whose API server hangs or is down holds up
 *   only its own writes (every request is bounded by requestTimeoutMs); the
 *   others go on. A worker re-plans from the latest views each run.
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
import { ExportLedger, type ExportDebug } from './export-ledger.js';
import { planExports, type ExportPlan, type MemberView } from './export-plan.js';
import { runMemberSteps } from './export-steps.js';
import type { ExportClient } from './export-writer.js';
import { rfc3339 } from './import-status.js';
import { LeaderElector, type LeaseClient } from './leader-election.js';
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
  readonly ledger: ExportLedger;
  stop(): Promise<void>;
}

interface MemberRuntime {
  readonly name: string;
  readonly source: KubernetesSource;
  client: ExportClient | undefined;
  state: ClusterState | undefined;
  everSynced: boolean;
  readonly missingNamespaces: Set<string>;
  /** This member's worker: its reconcile passes, retried with backoff on failure. */
  readonly loop: ReconcileLoop<boolean>;
}

export async function startExportController(o: ExportControllerOptions): Promise<ExportControllerHandle> {
  const { settings } = o;
  const log = o.logger.child({ component: 'export-controller' });
  const now = o.now ?? Date.now;
  const ledger = new ExportLedger(settings.name, settings.withdrawalGraceMs);
  const members: MemberRuntime[] = o.members
    .map((m): MemberRuntime => {
      const rt: MemberRuntime = {
        name: m.name,
        source: m.source,
        client: m.client,
        state: undefined,
        everSynced: false,
        missingNamespaces: new Set<string>(),
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

  const elector = o.lease
    ? new LeaderElector({
        client: o.lease.client,
        namespace: o.lease.namespace,
        name: settings.leaderElection.leaseName,
        identity: o.lease.identity,
        leaseDurationMs: settings.leaderElection.leaseDurationMs,
        renewDeadlineMs: settings.leaderElection.renewDeadlineMs,
        retryPeriodMs: settings.leaderElection.retryPeriodMs,
        onStartedLeading: () => triggerAll(),
        logger: log,
      })
    : undefined;
  const isLeader = (): boolean => !stopped && (elector ? elector.isLeader() : true);

  const views = (): MemberView[] =>
    members.map((m) => {
      const objects = m.state?.objects ?? [];
      return {
        name: m.name,
        reachable: m.state !== undefined && !m.state.stale,
        synced: m.everSynced,
        pools: objects.filter((x): x is InferencePool => x.kind === 'InferencePool'),
        imports: objects.filter((x): x is InferencePoolImport => x.kind === 'InferencePoolImport'),
        missingNamespaces: m.missingNamespaces,
        invalidPools: new Set((m.state?.errors ?? []).flatMap((e) => (e.object.startsWith(INVALID_POOL) ? [e.object.slice(INVALID_POOL.length)] : []))),
      };
    });

  const plan = (): ExportPlan => {
    const p = planExports({ controllerName: settings.name, members: views(), withdrawnSince, now: now(), graceMs: settings.withdrawalGraceMs });
    withdrawnSince = p.withdrawnSince;
    ledger.observePlan(p, views());
    if (deadlineTimer) clearTimeout(deadlineTimer);
    deadlineTimer = p.nextDeadline !== undefined && !stopped ? setTimeout(() => triggerAll(), Math.max(0, p.nextDeadline - now()) + 5) : undefined;
    return p;
  };

  /** One pass of a member's worker; true when a step failed. */
  async function runMember(m: MemberRuntime): Promise<boolean> {
    if (stopped || !isLeader() || !m.client) return false;
    return runMemberSteps({
      member: m.name,
      plan: plan(),
      client: m.client,
      controllerName: settings.name,
      now: () => rfc3339(new Date(now())),
      missingNamespaces: m.missingNamespaces,
      ledger,
      logger: log,
      stillLeading: isLeader,
    });
  }

  function triggerAll(): void {
    for (const m of members) m.loop.trigger();
  }

  await Promise.all(
    members.map(async (m) => {
      try {
        await m.source.start({
          onState: (s) => {
            m.state = s;
            if (!s.stale) m.everSynced = true;
            if (!s.stale) ledger.memberError(m.name, undefined);
            triggerAll();
          },
          onError: (e) => ledger.memberError(m.name, e.message),
        });
      } catch (err) {
        // The source keeps retrying in the background; its part waits until it answers.
        log.warn({ member: m.name, err: (err as Error).message }, `member ${m.name}: not reachable yet; its part of the export waits`);
        ledger.memberError(m.name, (err as Error).message);
      }
      const kc = m.source.kubeConfig;
      if (!m.client && kc) m.client = o.clientFor(kc);
    }),
  );

  elector?.start();
  for (const m of members) m.loop.start();

  return {
    isLeader,
    ledger,
    async reconcile() {
      await Promise.all(members.map((m) => m.loop.reconcile()));
    },
    debug: () => ledger.debug(isLeader(), members.map((m) => ({ name: m.name, reachable: m.state !== undefined && !m.state.stale, synced: m.everSynced, missingNamespaces: [...m.missingNamespaces].sort() }))),
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
