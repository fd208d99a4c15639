/**
 * KubernetesSource: one ClusterSet member's objects from its Kubernetes API,
 * kept current by one informer per (resource, namespace).
 *
 * - Every store change arms a coalescer: a burst of watch events becomes one
 *   ClusterState (trailing debounce, bounded so changes land within 1 s).
 * - Invalid objects go to ClusterState.errors and are left out; the rest serves.
 * - A resource whose CRD is not installed is reported ('missing-crd'), retried
 *   with backoff and picked up once installed; the other kinds keep flowing.
 * - Lost contact or denied access ('connect', 'auth'): the last known objects
 *   keep serving with stale=true until every informer is back.
 */
import type { Logger } from 'pino';
import { decodeObject } from '../../model/decode.js';
import type { DecodeResult, FieldError, KubeObject, ObjectKind } from '../../model/types.js';
import type { ClusterState, ObjectSource, SourceError, SourceListener } from '../types.js';
import type { BoundedKubeConfig } from './api-access.js';
import { Backoff, TokenBucket } from './backoff.js';
import { Coalescer } from './coalescer.js';
import { ResourceInformer, type InformerStatus } from './informer.js';
import { createLister, type ListFn, type RawObject } from './lister.js';
import { CLUSTER_SCOPED_KINDS, RESOURCE_SPECS, collectionPath, resourceName, type ResourceSpec } from './resources.js';

/** How list and watch run (the config's kubernetes block, a member's qps/burst): shared by everything watching an API server. */
export interface WatchPacing {
  readonly coalesceMs: number;
  readonly coalesceMaxMs: number;
  readonly initialSyncTimeoutMs: number;
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  readonly qps?: number;
  readonly burst?: number;
  /** Server-side watch timeout (default 5 to 10 minutes, randomised). */
  readonly watchTimeoutSeconds?: number;
}

export interface KubernetesSourceOptions extends WatchPacing {
  readonly cluster: string;
  /** A bounded KubeConfig (loadKubeConfig), or a function building one (called in start(); a throw rejects start() with reason 'read'). */
  readonly kubeConfig: BoundedKubeConfig | (() => BoundedKubeConfig);
  readonly kinds: readonly ObjectKind[];
  /** Empty = all namespaces. */
  readonly namespaces: readonly string[];
  /** Already bound to the cluster (src/runtime/load-sources.ts): lines add no cluster key of their own. */
  readonly logger?: Logger;
  /** Injectable LIST (tests). */
  readonly list?: ListFn;
}

/** What start() rejects with: a SourceError with the shape runtime/load-sources expects. */
export class KubernetesSourceError extends Error implements SourceError {
  override readonly name = 'KubernetesSourceError';
  readonly errors: readonly FieldError[] = [];
  constructor(
    readonly cluster: string,
    readonly reason: SourceError['reason'],
    message: string,
  ) {
    super(message);
  }
}

export interface ResourceStatus {
  readonly resource: string;
  readonly namespace?: string;
  readonly state: InformerStatus['state'];
  readonly reason?: string;
  readonly message?: string;
  readonly objects: number;
}

export class KubernetesSource implements ObjectSource {
  readonly cluster: string;
  private kc: BoundedKubeConfig | undefined;
  private informers: ResourceInformer[] = [];
  private listener: SourceListener | undefined;
  private readonly coalescer: Coalescer;
  private dirty = false;
  private lastStale: boolean | undefined;
  private revision = 0;
  private startDone = false;
  private stopped = false;
  /** Settles start() at once when the source is stopped during its first lists (a fleet's start slot is then free). */
  private wakeOnStop: (() => void) | undefined;
  /** reason -> the message last reported for it (reported again only when it changes). */
  private readonly reported = new Map<string, string>();

  constructor(private readonly o: KubernetesSourceOptions) {
    this.cluster = o.cluster;
    this.coalescer = new Coalescer(() => this.emit(false), o.coalesceMs, o.coalesceMaxMs);
  }

  /** The cluster's KubeConfig (available after start()); every request through it is bounded in time. */
  get kubeConfig(): BoundedKubeConfig | undefined {
    return this.kc;
  }

  /** Per-resource watch status, for /debug. */
  resources(): ResourceStatus[] {
    return this.informers.map((i) => {
      const s = i.status;
      return {
        resource: resourceName(i.spec),
        ...(i.namespace !== undefined ? { namespace: i.namespace } : {}),
        state: s.state,
        ...(s.state === 'failed' ? { reason: s.failure.reason, message: s.failure.message } : {}),
        objects: i.store.size,
      };
    });
  }

  async start(listener: SourceListener): Promise<void> {
    if (this.listener) throw new Error(`source for cluster ${this.cluster} already started`);
    this.listener = listener;
    try {
      this.kc = typeof this.o.kubeConfig === 'function' ? this.o.kubeConfig() : this.o.kubeConfig;
    } catch (err) {
      throw new KubernetesSourceError(this.cluster, 'read', `cluster ${this.cluster}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const list = this.o.list ?? createLister(this.kc);
    const watch = this.kc.watch;
    const limiter = new TokenBucket(this.o.qps, this.o.burst);
    const namespaces: (string | undefined)[] = this.o.namespaces.length > 0 ? [...this.o.namespaces] : [undefined];
    const timeout = this.o.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    for (const kind of this.o.kinds) {
      for (const namespace of CLUSTER_SCOPED_KINDS.has(kind) ? [undefined] : namespaces) {
        const spec = RESOURCE_SPECS[kind];
        this.informers.push(
          new ResourceInformer({
            spec,
            namespace,
            list,
            watch,
            limiter,
            backoff: new Backoff(this.o.backoffInitialMs, this.o.backoffMaxMs),
            decode: (raw, s) => this.decode(raw, s, namespace),
            onChange: () => {
              this.dirty = true;
              this.coalescer.trigger();
            },
            onStatus: (status) => this.statusChanged(spec, namespace, status),
            watchTimeoutSeconds: timeout,
            ...(this.o.logger ? { logger: this.o.logger } : {}),
          }),
        );
      }
    }
    for (const i of this.informers) i.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.informers.map((i) => i.firstOutcome())),
      new Promise<void>((r) => (timer = setTimeout(r, this.o.initialSyncTimeoutMs))),
      new Promise<void>((r) => (this.wakeOnStop = r)),
    ]);
    clearTimeout(timer);
    this.wakeOnStop = undefined;
    if (this.stopped) return;
    this.startDone = true;
    this.coalescer.cancel();
    this.emit(true);
    const unreachable = this.informers.filter((i) => i.status.state === 'pending' || (i.status.state === 'failed' && i.status.failure.reason !== 'missing-crd'));
    if (unreachable.length > 0) {
      const first = unreachable[0]?.status;
      const reason = first?.state === 'failed' && first.failure.reason === 'auth' ? 'auth' : 'connect';
      const what = unreachable.map((i) => this.describeFailure(i)).join('; ');
      throw new KubernetesSourceError(this.cluster, reason, `cluster ${this.cluster}: initial sync failed (retrying in the background): ${what}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeOnStop?.();
    this.coalescer.cancel();
    for (const i of this.informers) i.stop();
  }

  private decode(raw: RawObject, spec: ResourceSpec, namespace: string | undefined): DecodeResult {
    const name = String(raw.metadata?.name ?? '?');
    const ns = String(raw.metadata?.namespace ?? namespace ?? '');
    const origin = `${this.cluster}: ${collectionPath(spec, ns === '' ? undefined : ns)}/${name}`;
    // Core lists carry no per-item kind/apiVersion; the requested version is what the server converted to.
    return decodeObject({ ...raw, apiVersion: spec.apiVersion, kind: spec.kind }, origin);
  }

  private describeFailure(i: ResourceInformer): string {
    const s = i.status;
    const where = i.namespace !== undefined ? ` in namespace ${i.namespace}` : '';
    if (s.state === 'failed') return `${s.failure.message}${where}`;
    if (s.state === 'pending') return `${i.spec.kind}${where}: no answer within ${this.o.initialSyncTimeoutMs} ms`;
    return `${i.spec.kind}${where}: ok`;
  }

  private statusChanged(spec: ResourceSpec, namespace: string | undefined, status: InformerStatus): void {
    const log = this.o.logger;
    const ctx = { resource: resourceName(spec), ...(namespace !== undefined ? { namespace } : {}) };
    if (status.state === 'failed') log?.warn({ ...ctx, reason: status.failure.reason }, `${status.failure.message}; retrying with backoff`);
    else if (status.state === 'synced' && this.startDone) log?.info(ctx, `${spec.kind} watch (re)established`);
    if (this.startDone) this.coalescer.trigger();
  }

  private isStale(): boolean {
    return this.informers.some((i) => i.status.state === 'pending' || (i.status.state === 'failed' && i.status.failure.reason !== 'missing-crd'));
  }

  private emit(force: boolean): void {
    const listener = this.listener;
    if (!listener || this.stopped || !this.startDone) return;
    const stale = this.isStale();
    if (force || this.dirty || stale !== this.lastStale) {
      if (this.lastStale !== undefined && stale !== this.lastStale) {
        this.o.logger?.[stale ? 'warn' : 'info']({ stale }, stale ? 'cluster unreachable: serving its last known objects (stale)' : 'cluster reachable again');
      }
      this.dirty = false;
      this.lastStale = stale;
      listener.onState(this.snapshotState(stale));
    }
    this.reportFailures(listener);
  }

  private snapshotState(stale: boolean): ClusterState {
    const objects: KubeObject[] = [];
    const errors: FieldError[] = [];
    for (const i of this.informers) {
      for (const key of [...i.store.keys()].sort()) {
        const r = i.store.get(key)?.result;
        if (r?.type === 'ok') objects.push(r.object);
        else if (r?.type === 'invalid') errors.push(...r.errors);
      }
    }
    return { cluster: this.cluster, objects, errors, stale, revision: String(++this.revision) };
  }

  /** One SourceError per failure reason, reported when it first appears or its content changes. */
  private reportFailures(listener: SourceListener): void {
    const byReason = new Map<SourceError['reason'], string[]>();
    for (const i of this.informers) {
      const s = i.status;
      if (s.state !== 'failed') continue;
      const reason: SourceError['reason'] = s.failure.reason === 'missing-crd' || s.failure.reason === 'auth' ? s.failure.reason : 'connect';
      byReason.set(reason, [...(byReason.get(reason) ?? []), this.describeFailure(i)]);
    }
    for (const [reason, parts] of byReason) {
      const message = `cluster ${this.cluster}: ${parts.join('; ')}`;
      if (this.reported.get(reason) === message) continue;
      this.reported.set(reason, message);
      listener.onError({ cluster: this.cluster, reason, message, errors: [] });
    }
    for (const reason of [...this.reported.keys()]) if (!byReason.has(reason as SourceError['reason'])) this.reported.delete(reason);
  }
}
