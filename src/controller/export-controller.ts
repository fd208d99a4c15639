/**
 * The export controller (hub topology): watches InferencePools and
 * InferencePoolImports in every member with a Kubernetes source and carries out
 * planExports() there, on the leader replica only (its own Lease).
 *
 * - One worker per member: a member whose API server hangs or is down holds up
 *   only its own writes (every request is bounded by requestTimeoutMs); the
 *   others go on. A worker re-plans from the latest views each run.
 * - Runs on every member state change, on gaining leadership, at a withdrawal's
 *   grace expiry, after a failure (retry) and every resyncMs.
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
  running: Promise<void> | undefined;
  again: boolean;
}

export async function startExportController(o: ExportControllerOptions): Promise<ExportControllerHandle> {
  const { settings } = o;
  const log = o.logger.child({ component: 'export-controller' });
  const now = o.now ?? Date.now;
  const ledger = new ExportLedger(settings.name, settings.withdrawalGraceMs);
  const members: MemberRuntime[] = o.members
    .map((m) => ({ name: m.name, source: m.source, client: m.client, state: undefined, everSynced: false, missingNamespaces: new Set<string>(), running: undefined, again: false }))
    .sort((a, b) => a.name.localeCompare(b.name));
  let withdrawnSince: ReadonlyMap<string, number> = new Map();
  let stopped = false;
  let deadlineTimer: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

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

  const runMember = async (m: MemberRuntime): Promise<void> => {
    if (stopped || !isLeader() || !m.client) return;
    const failed = await runMemberSteps({
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
    if (failed) scheduleRetry();
  };

  const trigger = (m: MemberRuntime): void => {
    if (stopped) return;
    if (m.running) {
      m.again = true;
      return;
    }
    m.running = (async () => {
      do {
        m.again = false;
        await runMember(m).catch((err: unknown) => log.error({ err, member: m.name }, 'export reconcile failed'));
      } while (m.again && !stopped);
    })().finally(() => {
      m.running = undefined;
    });
  };

  function triggerAll(): void {
    for (const m of members) trigger(m);
  }

  function scheduleRetry(): void {
    if (retryTimer || stopped) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      triggerAll();
    }, Math.min(settings.resyncMs, 2000));
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

  const resync = setInterval(() => triggerAll(), settings.resyncMs);
  resync.unref();
  elector?.start();
  triggerAll();

  return {
    isLeader,
    ledger,
    async reconcile() {
      for (const m of members) {
        if (m.running) await m.running;
        trigger(m);
      }
      await Promise.all(members.map((m) => m.running));
    },
    debug: () => ledger.debug(isLeader(), members.map((m) => ({ name: m.name, reachable: m.state !== undefined && !m.state.stale, synced: m.everSynced, missingNamespaces: [...m.missingNamespaces].sort() }))),
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(resync);
      if (deadlineTimer) clearTimeout(deadlineTimer);
      if (retryTimer) clearTimeout(retryTimer);
      let timer: NodeJS.Timeout | undefined;
      const pending = Promise.all(members.map((m) => m.running?.catch(() => undefined)));
      await Promise.race([pending, new Promise((r) => (timer = setTimeout(r, 2000)))]);
      clearTimeout(timer);
      await elector?.stop();
      await Promise.all(members.map((m) => m.source.stop()));
    },
  };
}
