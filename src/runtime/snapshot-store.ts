/**
 * Holds each member cluster's latest objects and the current routing snapshot.
 * Source updates are coalesced: a burst of changes in one turn of the event
 * loop builds one snapshot. The snapshot is swapped by reference, so streams
 * already in flight keep the snapshot they started with.
 */
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { ClusterState, SourceError } from '../sources/types.js';
import { buildSnapshot } from '../snapshot/build.js';
import type { Diagnostic, RoutingSnapshot } from '../snapshot/types.js';

/** What the store reports; implemented by the admin metrics. */
export interface SnapshotObserver {
  snapshotBuilt(durationSeconds: number, snapshot: RoutingSnapshot, diagnostics: readonly Diagnostic[]): void;
  sourceApplied(cluster: string): void;
  sourceRejected(cluster: string, reason: SourceError['reason']): void;
}

/** Source failures that are no rejection: the API server is unreachable, denies access or lacks the CRD. */
const UNAVAILABLE: ReadonlySet<SourceError['reason']> = new Set(['connect', 'auth', 'missing-crd']);

export type SnapshotListener = (snapshot: RoutingSnapshot, diagnostics: readonly Diagnostic[]) => void;

export class SnapshotStore {
  private readonly states = new Map<string, ClusterState>();
  private readonly lastErrors = new Map<string, SourceError>();
  private readonly listeners = new Set<SnapshotListener>();
  private current: RoutingSnapshot | undefined;
  private currentDiagnostics: readonly Diagnostic[] = [];
  private version = 0;
  private scheduled: NodeJS.Immediate | undefined;
  private held = true;

  constructor(
    private config: RouterConfig,
    private readonly logger: Logger,
    private readonly observer: SnapshotObserver,
  ) {}

  /** The snapshot requests should use now; undefined until the first build. */
  snapshot(): RoutingSnapshot | undefined {
    return this.current;
  }

  /** The latest state a cluster's source delivered (what the import controller reads). */
  state(cluster: string): ClusterState | undefined {
    return this.states.get(cluster);
  }

  diagnostics(): readonly Diagnostic[] {
    return this.currentDiagnostics;
  }

  /** The last rejected change per cluster (cleared when a later change applies). */
  sourceErrors(): ReadonlyMap<string, SourceError> {
    return this.lastErrors;
  }

  onSnapshot(listener: SnapshotListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * A source delivered a new state for its cluster. A state with the same
   * content as the current one (a bad edit restored byte for byte) builds
   * nothing; it only ends or starts a rejection. A state carrying a rejected
   * change counts as a rejection.
   */
  applyState(state: ClusterState): void {
    const prev = this.states.get(state.cluster);
    if (prev === undefined || !sameContent(prev, state)) {
      this.states.set(state.cluster, state);
      this.schedule();
    }
    if (state.rejected !== undefined) {
      this.reportError(state.rejected);
      return;
    }
    const rejection = this.lastErrors.get(state.cluster);
    const recovered = this.lastErrors.delete(state.cluster);
    if (rejection !== undefined) {
      this.logger.info(
        { cluster: state.cluster, reason: rejection.reason },
        `cluster ${state.cluster} recovered: its current state is accepted again, the rejection has ended`,
      );
    }
    // A reload is new objects, or the end of a rejection; an API outage or a reconnect
    // with the same objects only flips staleness (mcip_cluster_stale), and is no reload.
    if (prev === undefined || recovered || !sameObjects(prev, state)) this.observer.sourceApplied(state.cluster);
  }

  /**
   * A source rejected a change, or lost its API server; the previous state of
   * that cluster stays in force. Only a rejection counts and is recorded as
   * one: an unreachable, denying or CRD-less API server is no rejected change
   * (its source logs it at warn and reports it as staleness and resource
   * status), so it neither counts in the reload metrics nor shows as
   * `rejected`. The same rejection again while it is outstanding is not
   * logged or counted again.
   */
  reportError(error: SourceError): void {
    const ctx = { cluster: error.cluster, reason: error.reason, errors: error.errors.slice(0, 20) };
    if (UNAVAILABLE.has(error.reason)) {
      this.logger.debug(ctx, `cluster ${error.cluster} unavailable, its last known state keeps serving: ${error.message}`);
      return;
    }
    const outstanding = this.lastErrors.get(error.cluster);
    if (outstanding !== undefined && outstanding.reason === error.reason && outstanding.message === error.message) return;
    this.lastErrors.set(error.cluster, error);
    this.observer.sourceRejected(error.cluster, error.reason);
    this.logger.error(ctx, `change to cluster ${error.cluster} rejected, last good state keeps serving: ${error.message}`);
  }

  /**
   * The members changed at run time (fleet.clusterProfiles): `config` is the router config with
   * the current members in clusters[]. States of clusters no longer in it are dropped.
   */
  setMembers(config: RouterConfig): void {
    this.config = config;
    const names = new Set(config.clusters.map((c) => c.name));
    for (const cluster of [...this.states.keys()]) {
      if (names.has(cluster)) continue;
      this.states.delete(cluster);
      this.lastErrors.delete(cluster);
    }
    this.schedule();
  }

  /** The router config with the current members (what the last snapshot was built from). */
  members(): RouterConfig {
    return this.config;
  }

  /** Start building: until then updates only accumulate (start-up loads every source first). */
  release(): RoutingSnapshot {
    this.held = false;
    this.cancelScheduled();
    return this.rebuild();
  }

  stop(): void {
    this.held = true;
    this.cancelScheduled();
    this.listeners.clear();
  }

  private schedule(): void {
    if (this.held || this.scheduled) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      this.rebuild();
    });
  }

  private cancelScheduled(): void {
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
  }

  private rebuild(): RoutingSnapshot {
    const started = process.hrtime.bigint();
    const clusters = this.config.clusters
      .map((c) => this.states.get(c.name))
      .filter((s): s is ClusterState => s !== undefined);
    const { snapshot, diagnostics } = buildSnapshot({ config: this.config, clusters, version: ++this.version });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    this.current = snapshot;
    this.currentDiagnostics = diagnostics;
    this.observer.snapshotBuilt(seconds, snapshot, diagnostics);
    this.logger.info(
      {
        version: snapshot.version,
        routes: snapshot.routes.length,
        candidates: snapshot.candidates.size,
        diagnostics: diagnostics.length,
        buildMs: Math.round(seconds * 1e6) / 1e3,
      },
      'routing snapshot built',
    );
    for (const listener of this.listeners) {
      try {
        listener(snapshot, diagnostics);
      } catch (err) {
        this.logger.error({ err }, 'snapshot listener failed');
      }
    }
    return snapshot;
  }
}

/** Same objects (by identity: states are immutable), errors, staleness and revision. */
function sameObjects(a: ClusterState, b: ClusterState): boolean {
  return a.revision === b.revision && a.objects === b.objects && a.errors === b.errors;
}

function sameContent(a: ClusterState, b: ClusterState): boolean {
  return a.stale === b.stale && sameObjects(a, b);
}
