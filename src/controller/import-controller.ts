/**
 * The import controller: keeps our InferencePoolImport status.controllers[]
 * entries in line with the routing snapshot, on the leader replica only, then
 * runs the further duties it is given (Gateway API status) in the same pass.
 *
 * Runs on every new snapshot, on gaining leadership, every resyncMs and after a
 * failed write (ReconcileLoop: one pass at a time, retries with backoff). Skips
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
import { ReconcileLoop } from './reconcile-loop.js';
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
  /** Further duties the same leader runs after the imports, in the same pass (Gateway API status). */
  readonly duties?: readonly ControllerDuty[];
  /** Injectable clients (tests). */
  readonly statusClient?: ImportStatusClient;
  readonly leaseClient?: LeaseClient;
  readonly now?: () => Date;
}

/** A reconcile duty beside the imports: given the snapshot and the local state, writes what it owns. */
export interface ControllerDuty {
  readonly name: string;
  /** `failed` (or a throw): the pass is retried. */
  reconcile(input: { snapshot: RoutingSnapshot; local: ClusterState; isLeader: () => boolean }): Promise<{ readonly failed: boolean }>;
}

export interface ReconcileReport {
  /** Why nothing was done, when nothing was done. */
  readonly skipped?: 'not-leader' | 'no-snapshot' | 'local-stale' | 'stopped';
  readonly results: readonly WriteResult[];
  /** Some write failed (it is retried). */
  readonly failed?: true;
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
  const loop = new ReconcileLoop<ReconcileReport>({
    pass: () => reconcileOnce(),
    // A write that failed is retried; the others were done or are judged again on the retry.
    failed: (r) => r.failed === true,
    retryInitialMs: Math.min(settings.resyncMs, 5000),
    retryMaxMs: settings.resyncMs,
    resyncMs: settings.resyncMs,
    onError: (err) => log.error({ err }, 'reconcile failed'),
  });

  const elector = le.enabled
    ? new LeaderElector({
        client: o.leaseClient ?? createLeaseClient(o.kubeConfig),
        namespace: le.leaseNamespace ?? podNamespace() ?? 'default',
        name: le.leaseName,
        identity: le.identity ?? defaultIdentity(),
        leaseDurationMs: le.leaseDurationMs,
        renewDeadlineMs: le.renewDeadlineMs,
        retryPeriodMs: le.retryPeriodMs,
        onStartedLeading: () => loop.trigger(),
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
    let failed = false;
    for (const plan of plans) {
      if (!isLeader()) break;
      const key = `${plan.namespace}/${plan.name}`;
      try {
        const r = await writer.apply(plan, byKey.get(key));
        counts[r.outcome]++;
        results.push(r);
      } catch (err) {
        counts.errors++;
        failed = true;
        log.error({ err, import: key }, `could not update InferencePoolImport ${key} status`);
      }
    }
    const duties: Record<string, unknown> = {};
    for (const duty of o.duties ?? []) {
      if (!isLeader()) break;
      try {
        const report = await duty.reconcile({ snapshot, local, isLeader });
        duties[duty.name] = report;
        if (report.failed) failed = true;
      } catch (err) {
        failed = true;
        log.error({ err, duty: duty.name }, `${duty.name} reconcile failed`);
      }
    }
    return failed ? { results, failed, duties } : { results, duties };
  };

  const unsubscribe = o.onSnapshot(() => loop.trigger());
  elector?.start();
  loop.start();

  return {
    isLeader,
    reconcile: () => loop.reconcile(),
    counts: () => ({ ...counts }),
    async stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      await loop.stop();
      await elector?.stop();
    },
  };
}
