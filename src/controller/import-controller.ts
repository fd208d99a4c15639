/**
 * The import controller: keeps our InferencePoolImport status.controllers[]
 * entries in line with the routing snapshot, on the leader replica only, then
 * runs the further duties it is given (Gateway API status) on the same terms.
 *
 * Runs on every new snapshot, on gaining leadership and every resyncMs; one
 * reconcile at a time (a trigger during a run queues exactly one more). Skips
 * while the local cluster is stale (its view may be outdated). Every replica
 * serves traffic whether or not it leads.
 */
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { RouterConfig } from '../config/schema.js';
import type { InferencePoolImport } from '../model/types.js';
import type { RoutingSnapshot } from '../snapshot/types.js';
import { podNamespace } from '../sources/kubernetes/kubeconfig.js';
import type { ClusterState } from '../sources/types.js';
import { planImportStatuses, rfc3339 } from './import-status.js';
import { LeaderElector, createLeaseClient, type LeaseClient } from './leader-election.js';
import { ImportStatusWriter, createImportStatusClient, type ImportStatusClient, type WriteOutcome, type WriteResult } from './status-writer.js';

export interface ImportControllerOptions {
  readonly config: RouterConfig;
  /** The local cluster's KubeConfig (e.g. KubernetesSource.kubeConfig). */
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  readonly getSnapshot: () => RoutingSnapshot | undefined;
  /** The local cluster's latest ClusterState (its InferencePoolImports, with status and generation). */
  readonly getLocalState: () => ClusterState | undefined;
  /** Subscribes to new snapshots; returns an unsubscribe function. */
  readonly onSnapshot: (listener: () => void) => () => void;
  /** Further duties the same leader runs after the imports, on the same triggers (Gateway API status). */
  readonly duties?: readonly ControllerDuty[];
  /** Injectable clients (tests). */
  readonly statusClient?: ImportStatusClient;
  readonly leaseClient?: LeaseClient;
  readonly now?: () => Date;
}

/** A reconcile duty beside the imports: given the snapshot and the local state, writes what it owns. */
export interface ControllerDuty {
  readonly name: string;
  /** `failed` (or a throw): retry soon. */
  reconcile(input: { snapshot: RoutingSnapshot; local: ClusterState; isLeader: () => boolean }): Promise<{ readonly failed: boolean }>;
}

export interface ReconcileReport {
  /** Why nothing was done, when nothing was done. */
  readonly skipped?: 'not-leader' | 'no-snapshot' | 'local-stale' | 'stopped';
  readonly results: readonly WriteResult[];
  /** What each duty reported, by name. */
  readonly duties?: Readonly<Record<string, unknown>>;
}

export interface ImportControllerHandle {
  isLeader(): boolean;
  /** Reconciles now (waits for a running reconcile first). */
  reconcile(): Promise<ReconcileReport>;
  /** Outcome counters since start (for metrics). */
  counts(): Readonly<Record<WriteOutcome | 'errors', number>>;
  stop(): Promise<void>;
}

export function defaultIdentity(): string {
  return `${hostname()}_${process.pid}`;
}

export async function startImportController(o: ImportControllerOptions): Promise<ImportControllerHandle> {
  const { config, logger } = o;
  const settings = config.controller;
  const le = settings.leaderElection;
  const log = logger.child({ component: 'import-controller' });
  const writer = new ImportStatusWriter({
    client: o.statusClient ?? createImportStatusClient(o.kubeConfig),
    controllerName: settings.name,
    logger: log,
    now: () => rfc3339(o.now?.() ?? new Date()),
  });
  const counts: Record<WriteOutcome | 'errors', number> = { unchanged: 0, written: 0, removed: 0, full: 0, gone: 0, conflict: 0, errors: 0 };
  let stopped = false;
  let running: Promise<ReconcileReport> | undefined;
  let again = false;
  let retryTimer: NodeJS.Timeout | undefined;

  const elector = le.enabled
    ? new LeaderElector({
        client: o.leaseClient ?? createLeaseClient(o.kubeConfig),
        namespace: le.leaseNamespace ?? podNamespace() ?? 'default',
        name: le.leaseName,
        identity: le.identity ?? defaultIdentity(),
        leaseDurationMs: le.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs,
        onStartedLeading: () => trigger(),
        logger: log,
      })
    : undefined;
  const isLeader = (): boolean => !stopped && (elector ? elector.isLeader() : true);

  const reconcileOnce = async (): Promise<ReconcileReport> => {
    if (stopped) return { skipped: 'stopped', results: [] };
    if (!isLeader()) return { skipped: 'not-leader', results: [] };
    const snapshot = o.getSnapshot();
    const local = o.getLocalState();
    if (!snapshot || !local) return { skipped: 'no-snapshot', results: [] };
    if (local.stale) return { skipped: 'local-stale', results: [] };
    const imports = local.objects.filter((x): x is InferencePoolImport => x.kind === 'InferencePoolImport');
    const byKey = new Map(imports.map((i) => [`${i.metadata.namespace}/${i.metadata.name}`, i]));
    const plans = planImportStatuses({ controllerName: settings.name, imports, routes: snapshot.routes, now: rfc3339(o.now?.() ?? new Date()) });
    const results: WriteResult[] = [];
    for (const plan of plans) {
      if (!isLeader()) break;
      const key = `${plan.namespace}/${plan.name}`;
      try {
        const r = await writer.apply(plan, byKey.get(key));
        counts[r.outcome]++;
        results.push(r);
      } catch (err) {
        counts.errors++;
        log.error({ err, import: key }, `could not update InferencePoolImport ${key} status`);
        scheduleRetry();
      }
    }
    const duties: Record<string, unknown> = {};
    for (const duty of o.duties ?? []) {
      if (!isLeader()) break;
      try {
        const report = await duty.reconcile({ snapshot, local, isLeader });
        duties[duty.name] = report;
        if (report.failed) scheduleRetry();
      } catch (err) {
        log.error({ err, duty: duty.name }, `${duty.name} reconcile failed`);
        scheduleRetry();
      }
    }
    return { results, duties };
  };

  const run = (): Promise<ReconcileReport> => {
    if (running) return running.then(() => run());
    running = (async () => {
      let report: ReconcileReport;
      do {
        again = false;
        report = await reconcileOnce();
      } while (again && !stopped);
      return report;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  function trigger(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    void run().catch((err: unknown) => log.error({ err }, 'reconcile failed'));
  }

  function scheduleRetry(): void {
    if (retryTimer || stopped) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      trigger();
    }, Math.min(settings.resyncMs, 5000));
  }

  const unsubscribe = o.onSnapshot(() => trigger());
  const resync = setInterval(() => trigger(), settings.resyncMs);
  resync.unref();
  elector?.start();
  trigger();

  return {
    isLeader,
    reconcile: () => run(),
    counts: () => ({ ...counts }),
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      clearInterval(resync);
      if (retryTimer) clearTimeout(retryTimer);
      // A write stuck on an unreachable API server must not hold up shutdown.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([running?.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, 2000)))]);
      clearTimeout(timer);
      await elector?.stop();
    },
  };
}
