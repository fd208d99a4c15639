/**
 * The router's own Prometheus metrics (prom-client). One registry per router
 * instance, so several routers in one process (tests) do not collide.
 *
 * Label cardinality is bounded by configuration: route, pool and cluster come
 * from the snapshot, never from request content.
 */
import type { GuardReason } from '../protocol/answer-guard.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { DataPathObserver, PickCountReason } from '../extproc/observer.js';
import type { PeerCutReason } from '../transport/peer-guard.js';
import type { FailureReason } from '../signals/types.js';
import type { SourceError } from '../sources/types.js';
import type { Diagnostic, RoutingSnapshot } from '../snapshot/types.js';

/** Latency buckets for ext_proc streams: inference streams range from ms (errors) to minutes. */
const STREAM_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Pick decisions are microseconds. */
const PICK_BUCKETS = [0.000_001, 0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.005];

export interface StreamRecord {
  readonly route?: string;
  readonly pool?: string;
  readonly cluster?: string;
  readonly outcome: string;
  readonly durationSeconds: number;
}

/** EPP attempts: connect/answer times (ms) to whole inference streams (minutes). */
const EPP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The router's Prometheus metrics: the data path's observer, and the snapshot store's
 * (runtime/snapshot-store.ts's SnapshotObserver, checked where the store is given it).
 */
export class RouterMetrics implements DataPathObserver {
  readonly registry = new Registry();

  private readonly requests = new Counter({
    name: 'mcip_requests_total',
    help: 'ext_proc streams handled, by matched route, picked pool, pool cluster and outcome.',
    labelNames: ['route', 'pool', 'cluster', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly streamDuration = new Histogram({
    name: 'mcip_stream_duration_seconds',
    help: 'Lifetime of ext_proc streams, from the first message to the close.',
    labelNames: ['cluster', 'outcome'] as const,
    buckets: STREAM_BUCKETS,
    registers: [this.registry],
  });
  private readonly pickDuration = new Histogram({
    name: 'mcip_pick_duration_seconds',
    help: 'Time to match the route and pick a candidate pool for a request.',
    buckets: PICK_BUCKETS,
    registers: [this.registry],
  });
  private readonly picks = new Counter({
    name: 'mcip_picks_total',
    help: 'Candidates chosen for requests, by reason: the picker\'s (weighted, spillover, panic, prefer-local, least-loaded), failover, fail-open.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly failovers = new Counter({
    name: 'mcip_failovers_total',
    help: 'Requests moved from one candidate to the next on the data path, by clusters and the failed attempt\'s reason.',
    labelNames: ['from_cluster', 'to_cluster', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly eppAnswersGuarded = new Counter({
    name: 'mcip_epp_answer_violations_total',
    help: 'EPP answers refused (destination_invalid, destination_denied, unsupported_answer: failed over) or trimmed (header_not_allowed, metadata_namespace, mode_override, destination_mismatch: the rest relayed), by the EPP\'s cluster and reason.',
    labelNames: ['cluster', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly peerCuts = new Counter({
    name: 'mcip_extproc_connections_cut_total',
    help: 'Connections to an ext_proc server cut (GOAWAY ENHANCE_YOUR_CALM) by extProc.peerLimits, by reason: early_resets (streams reset before they were answered, HTTP/2 rapid reset), unused_streams.',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  private readonly eppStream = new Histogram({
    name: 'mcip_epp_stream_duration_seconds',
    help: 'Lifetime of each ext_proc stream (attempt) to an EPP, by the EPP\'s cluster.',
    labelNames: ['cluster'] as const,
    buckets: EPP_BUCKETS,
    registers: [this.registry],
  });
  private readonly eppFirst = new Histogram({
    name: 'mcip_epp_first_response_seconds',
    help: 'Time from the start of an EPP attempt to the EPP\'s first message (in FULL_DUPLEX_STREAMED this includes reading the request body).',
    labelNames: ['cluster'] as const,
    buckets: EPP_BUCKETS,
    registers: [this.registry],
  });
  private readonly activeStreams = new Gauge({
    name: 'mcip_active_streams',
    help: 'ext_proc streams currently open from Envoy.',
    registers: [this.registry],
  });
  private readonly reloads = new Counter({
    name: 'mcip_config_reloads_total',
    help: 'Object source changes per cluster, by result (applied or rejected).',
    labelNames: ['cluster', 'result'] as const,
    registers: [this.registry],
  });
  private readonly reloadErrors = new Counter({
    name: 'mcip_config_errors_total',
    help: 'Rejected object source changes per cluster, by reason.',
    labelNames: ['cluster', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly lastReloadOk = new Gauge({
    name: 'mcip_config_last_reload_successful',
    help: '1 if the last change of the cluster\'s objects was applied, 0 if it was rejected.',
    labelNames: ['cluster'] as const,
    registers: [this.registry],
  });
  private readonly snapshotBuild = new Histogram({
    name: 'mcip_snapshot_build_duration_seconds',
    help: 'Time to build a routing snapshot.',
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [this.registry],
  });
  private readonly snapshotVersion = new Gauge({
    name: 'mcip_snapshot_version',
    help: 'Version of the routing snapshot in use.',
    registers: [this.registry],
  });
  private readonly snapshotSize = new Gauge({
    name: 'mcip_snapshot_objects',
    help: 'Size of the routing snapshot in use, by what is counted.',
    labelNames: ['what'] as const,
    registers: [this.registry],
  });
  private readonly excludedObjects = new Gauge({
    name: 'mcip_excluded_objects',
    help: 'Objects of a member left out of the routing snapshot (invalid, duplicate, no Endpoint Picker), by reason.',
    labelNames: ['cluster', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly clusterStale = new Gauge({
    name: 'mcip_cluster_stale',
    help: '1 when a member cluster\'s objects are the last known ones (its source lost contact).',
    labelNames: ['cluster'] as const,
    registers: [this.registry],
  });

  /** Gateway API status writes by result (the duty of the import controller's leader). */
  observeGatewayStatus(duty: { counts(): Readonly<Record<string, number>> }): void {
    this.countsByResult(
      'mcip_gateway_status_writes_total',
      'Gateway API status (GatewayClass, Gateway, HTTPRoute) per object and pass by result (written, unchanged, stale, conflict, full, gone, errors).',
      () => duty.counts(),
    );
  }

  /** A counter per result label that follows a monotonic counts() snapshot. */
  private countsByResult(name: string, help: string, counts: () => Readonly<Record<string, number>>): void {
    const reported: Record<string, number> = {};
    new Counter({
      name,
      help,
      labelNames: ['result'] as const,
      registers: [this.registry],
      collect() {
        for (const [result, value] of Object.entries(counts())) {
          const delta = value - (reported[result] ?? 0);
          if (delta > 0) this.inc({ result }, delta);
          reported[result] = value;
        }
      },
    });
  }

  /** Import controller status writes, read from its counters at scrape time. */
  observeController(controller: {
    isLeader(): boolean;
    counts(): Readonly<Record<string, number>>;
  }): void {
    this.countsByResult(
      'mcip_import_status_writes_total',
      'InferencePoolImport status reconciliations by result (written, removed, unchanged, conflict, full, gone, errors).',
      () => controller.counts(),
    );
    new Gauge({
      name: 'mcip_import_controller_leader',
      help: '1 on the replica that holds the import controller lease and writes InferencePoolImport status.',
      registers: [this.registry],
      collect() {
        this.set(controller.isLeader() ? 1 : 0);
      },
    });
  }

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  streamStarted(): void {
    this.activeStreams.inc();
  }

  streamFinished(record: StreamRecord): void {
    this.activeStreams.dec();
    this.requests.inc({
      route: record.route ?? '',
      pool: record.pool ?? '',
      cluster: record.cluster ?? '',
      outcome: record.outcome,
    });
    this.streamDuration.observe({ cluster: record.cluster ?? '', outcome: record.outcome }, record.durationSeconds);
  }

  picked(seconds: number): void {
    this.pickDuration.observe(seconds);
  }

  pickedFor(reason: PickCountReason): void {
    this.picks.inc({ reason });
  }

  failover(fromCluster: string, toCluster: string, reason: FailureReason): void {
    this.failovers.inc({ from_cluster: fromCluster, to_cluster: toCluster, reason });
  }

  eppFirstResponse(cluster: string, seconds: number): void {
    this.eppFirst.observe({ cluster }, seconds);
  }

  eppStreamFinished(cluster: string, seconds: number): void {
    this.eppStream.observe({ cluster }, seconds);
  }

  eppAnswerGuarded(cluster: string, reason: GuardReason): void {
    this.eppAnswersGuarded.inc({ cluster, reason });
  }

  peerCut(reason: PeerCutReason): void {
    this.peerCuts.inc({ reason });
  }

  snapshotBuilt(durationSeconds: number, snapshot: RoutingSnapshot, diagnostics: readonly Diagnostic[]): void {
    this.snapshotBuild.observe(durationSeconds);
    this.snapshotVersion.set(snapshot.version);
    this.snapshotSize.set({ what: 'routes' }, snapshot.routes.length);
    this.snapshotSize.set({ what: 'candidates' }, snapshot.candidates.size);
    this.snapshotSize.set({ what: 'diagnostics' }, diagnostics.length);
    for (const c of snapshot.clusters) this.clusterStale.set({ cluster: c.name }, c.stale ? 1 : 0);
    this.setExcludedObjects(snapshot);
  }

  /** One count per object (an object with several bad fields counts once per reason). */
  private setExcludedObjects(snapshot: RoutingSnapshot): void {
    const objects = new Map<string, { cluster: string; reason: string; keys: Set<string> }>();
    for (const x of snapshot.excludedObjects) {
      const label = `${x.cluster}\u0000${x.reason}`;
      let entry = objects.get(label);
      if (entry === undefined) {
        entry = { cluster: x.cluster, reason: x.reason, keys: new Set() };
        objects.set(label, entry);
      }
      entry.keys.add(`${x.kind}/${x.namespace}/${x.name}`);
    }
    this.excludedObjects.reset();
    for (const c of snapshot.clusters) this.excludedObjects.set({ cluster: c.name, reason: 'InvalidObject' }, 0);
    for (const e of objects.values()) this.excludedObjects.set({ cluster: e.cluster, reason: e.reason }, e.keys.size);
  }

  sourceApplied(cluster: string): void {
    this.reloads.inc({ cluster, result: 'applied' });
    this.lastReloadOk.set({ cluster }, 1);
  }

  sourceRejected(cluster: string, reason: SourceError['reason']): void {
    this.reloads.inc({ cluster, result: 'rejected' });
    this.reloadErrors.inc({ cluster, reason });
    this.lastReloadOk.set({ cluster }, 0);
  }
}
