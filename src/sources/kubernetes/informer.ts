/**
 * ResourceInformer: list + watch of one resource (in all namespaces or one),
 * keeping a decoded store of its objects.
 *
 * - Watches resume from the last seen resourceVersion (events and BOOKMARKs),
 *   so a dropped connection misses nothing.
 * - 410 Gone (ERROR event or HTTP 410) -> re-list, then watch from the new list.
 * - Failures (transport, 401/403, 404 = CRD not installed, 5xx) -> status
 *   "failed" and a retry after exponential backoff with jitter; the last known
 *   objects stay in the store (except for a missing CRD: its objects are gone).
 * - A watch that was established and then ends (server close, dropped
 *   connection, our idle or lifetime bound) is routine: logged at debug and
 *   resumed at once, the status stays "synced". Only a watch the server does
 *   not accept (no 200 within the request timeout, an HTTP error) is a failure.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DecodeResult } from '../../model/types.js';
import type { WatchFn } from './api-access.js';
import type { Failure } from './api-errors.js';
import { classifyError, httpStatusOf, transportMessage } from './api-errors.js';
import type { Backoff, TokenBucket } from './backoff.js';
import type { ListFn, RawObject } from './lister.js';
import type { ResourceSpec } from './resources.js';
import { collectionPath } from './resources.js';

export type InformerStatus =
  | { readonly state: 'pending' }
  | { readonly state: 'synced' }
  | { readonly state: 'failed'; readonly failure: Failure };

export interface StoreEntry<T = DecodeResult> {
  readonly resourceVersion: string;
  readonly result: T;
}

/** `T`: what decode() makes of an object (the router's kinds: a DecodeResult). */
export interface InformerDeps<T = DecodeResult> {
  readonly spec: ResourceSpec;
  readonly namespace: string | undefined;
  /** Only objects matching this label selector (list and watch); absent: all. */
  readonly labelSelector?: string;
  readonly list: ListFn;
  readonly watch: WatchFn;
  readonly backoff: Backoff;
  readonly limiter: TokenBucket;
  readonly decode: (raw: RawObject, spec: ResourceSpec) => T;
  /** The store changed (objects added, modified or removed). */
  readonly onChange: () => void;
  readonly onStatus: (status: InformerStatus) => void;
  readonly logger?: Logger;
  /** Server-side watch timeout; the server ends the stream cleanly after it. */
  readonly watchTimeoutSeconds?: number;
}

type WatchOutcome = { type: 'gone' } | { type: 'error'; err: unknown } | { type: 'ended'; events: number; ms: number; err: unknown };

const keyOf = (raw: RawObject): string => `${String(raw.metadata?.namespace ?? '')}/${String(raw.metadata?.name ?? '')}`;
const rvOf = (raw: RawObject): string => String(raw.metadata?.resourceVersion ?? '');

export class ResourceInformer<T = DecodeResult> {
  readonly store = new Map<string, StoreEntry<T>>();
  private resourceVersion = '';
  private needList = true;
  private stopped = false;
  private abort: AbortController | undefined;
  /** Aborted by stop(): ends a backoff sleep at once. */
  private readonly stopping = new AbortController();
  private current: InformerStatus = { state: 'pending' };
  private readonly settled: Promise<void>;
  private settle!: () => void;

  constructor(private readonly d: InformerDeps<T>) {
    this.settled = new Promise((r) => (this.settle = r));
  }

  get status(): InformerStatus {
    return this.current;
  }

  get spec(): ResourceSpec {
    return this.d.spec;
  }

  get namespace(): string | undefined {
    return this.d.namespace;
  }

  /** Resolves after the first list succeeded or the first attempt failed. */
  firstOutcome(): Promise<void> {
    return this.settled;
  }

  start(): void {
    void this.run().catch((err: unknown) => this.d.logger?.error({ err }, 'informer loop crashed'));
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.stopping.abort();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.needList) {
        try {
          await this.d.limiter.take();
          const result = await this.d.list(this.d.spec, this.d.namespace, this.d.labelSelector);
          if (this.stopped) return;
          this.replace(result.items);
          this.resourceVersion = result.resourceVersion;
          this.needList = false;
          this.setStatus({ state: 'synced' });
        } catch (err) {
          if (this.stopped) return;
          const failure = classifyError(err, this.d.spec);
          if (failure.reason !== 'gone') await this.failAndWait(failure);
          continue;
        }
      }
      const outcome = await this.watchOnce();
      if (this.stopped) return;
      if (outcome.type === 'gone') {
        this.d.logger?.debug({ resource: this.d.spec.plural }, 'watch resourceVersion expired (410), re-listing');
        this.needList = true;
      } else if (outcome.type === 'error') {
        const failure = classifyError(outcome.err, this.d.spec);
        if (failure.reason === 'gone') this.needList = true;
        else await this.failAndWait(failure);
      } else {
        const { events, ms, err } = outcome;
        this.d.logger?.debug({ resource: this.d.spec.plural, events, ms, ...(err ? { err: transportMessage(err) } : {}) }, 'watch ended, resuming from the last resourceVersion');
        // A server that keeps closing watches at once: do not spin.
        if (events === 0 && ms < 1000) await this.sleep(this.d.backoff.next());
      }
    }
  }

  private async failAndWait(failure: Failure): Promise<void> {
    if (failure.reason === 'missing-crd') {
      // The resource is not served (CRD not installed or removed): its objects do not exist.
      if (this.store.size > 0) {
        this.store.clear();
        this.d.onChange();
      }
      this.needList = true;
    }
    this.setStatus({ state: 'failed', failure });
    const delay = this.d.backoff.next();
    this.d.logger?.debug({ resource: this.d.spec.plural, reason: failure.reason, retryInMs: delay }, failure.message);
    await this.sleep(delay);
  }

  private watchOnce(): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      const started = Date.now();
      let events = 0;
      let gone = false;
      let serverError: unknown;
      let finished = false;
      let connected = false;
      const done = (err: unknown, established = false): void => {
        if (finished) return;
        finished = true;
        this.abort = undefined;
        // After the 200, any end of the stream is routine (resumed); before it, any error is a failure.
        if (gone || httpStatusOf(err) === 410) resolve({ type: 'gone' });
        else if (serverError !== undefined) resolve({ type: 'error', err: serverError });
        else if (err && !connected && !established) resolve({ type: 'error', err });
        else resolve({ type: 'ended', events, ms: Date.now() - started, err });
      };
      const onEvent = (type: string, obj: Record<string, unknown>): void => {
        if (finished) return;
        if (type === 'ERROR') {
          const code = (obj as { code?: unknown }).code;
          if (code === 410) gone = true;
          else serverError = Object.assign(new Error(String((obj as { message?: unknown }).message ?? 'watch error')), { code });
          this.abort?.abort();
          return;
        }
        events++;
        this.d.backoff.reset();
        this.apply(type, obj);
      };
      const query = {
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        ...(this.d.labelSelector ? { labelSelector: this.d.labelSelector } : {}),
        ...(this.d.watchTimeoutSeconds ? { timeoutSeconds: this.d.watchTimeoutSeconds } : {}),
      };
      this.d.limiter
        .take()
        .then(() => this.d.watch(collectionPath(this.d.spec, this.d.namespace), query, onEvent, done))
        .then((controller) => {
          if (finished || this.stopped) {
            controller.abort();
            return;
          }
          this.abort = controller;
          connected = true;
          // The watch is established: the API server answered 200.
          this.setStatus({ state: 'synced' });
        })
        .catch(done);
    });
  }

  private apply(type: string, raw: RawObject): void {
    const rv = rvOf(raw);
    if (type === 'BOOKMARK') {
      if (rv !== '') this.resourceVersion = rv;
      return;
    }
    if (type === 'ADDED' || type === 'MODIFIED') {
      const key = keyOf(raw);
      const prev = this.store.get(key);
      if (!prev || prev.resourceVersion !== rv || rv === '') {
        this.store.set(key, { resourceVersion: rv, result: this.d.decode(raw, this.d.spec) });
        this.d.onChange();
      }
    } else if (type === 'DELETED') {
      if (this.store.delete(keyOf(raw))) this.d.onChange();
    }
    if (rv !== '') this.resourceVersion = rv;
  }

  /** A full list: the store becomes exactly these objects (unchanged ones keep their decoded form). */
  private replace(items: readonly RawObject[]): void {
    let changed = false;
    const seen = new Set<string>();
    for (const raw of items) {
      const key = keyOf(raw);
      seen.add(key);
      const rv = rvOf(raw);
      const prev = this.store.get(key);
      if (prev && prev.resourceVersion === rv && rv !== '') continue;
      this.store.set(key, { resourceVersion: rv, result: this.d.decode(raw, this.d.spec) });
      changed = true;
    }
    for (const key of [...this.store.keys()]) {
      if (!seen.has(key)) {
        this.store.delete(key);
        changed = true;
      }
    }
    if (changed) this.d.onChange();
  }

  private setStatus(s: InformerStatus): void {
    const before = this.current;
    this.current = s;
    if (s.state === 'synced' && before.state === 'failed') this.d.backoff.reset();
    this.settle();
    const same =
      before.state === s.state &&
      (s.state !== 'failed' || (before.state === 'failed' && before.failure.reason === s.failure.reason && before.failure.message === s.failure.message));
    if (!same) this.d.onStatus(s);
  }

  /** Sleeps `ms`, or less if stop() is called meanwhile (or was already). */
  private async sleep(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }
}
