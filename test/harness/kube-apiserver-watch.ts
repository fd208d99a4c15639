/**
 * One watch stream of the API server stand-in: newline-delimited JSON events
 * over a chunked HTTP response, with the real server's resourceVersion rules.
 *
 * - resourceVersion unset or "0": synthetic ADDED for every current object, then live events.
 * - resourceVersion N: every event after N, then live events; N older than the
 *   compacted history -> 410 Gone (an ERROR event in a 200 stream, or HTTP 410).
 * - allowWatchBookmarks=true: BOOKMARK events (on demand) carrying the current resourceVersion.
 * - timeoutSeconds: the server ends the stream cleanly after that long.
 * - labelSelector: only matching objects; an object that stops matching is DELETED for
 *   the stream, one that starts matching ADDED (as the real watch cache filters).
 * - lagMs: live events reach the stream that much after the change (a watch cache
 *   behind etcd, as a loaded real server's is); order is kept.
 */
import type { ServerResponse } from 'node:http';
import type { KubeObj, KubeStore, ResourceDef, StoreEvent } from './kube-apiserver-store.js';
import { apiVersionOf } from './kube-apiserver-store.js';
import { labelMatcher } from './kube-apiserver-selector.js';

export interface WatchStream {
  readonly plural: string;
  readonly namespace: string | undefined;
  bookmark(rv: number): void;
  close(how: 'destroy' | 'end'): void;
}

export interface WatchRequest {
  readonly def: ResourceDef;
  readonly namespace: string | undefined;
  readonly store: KubeStore;
  readonly query: URLSearchParams;
  readonly goneMode: 'event' | 'http';
  /** How far behind the store live events are delivered (read per event). */
  readonly lagMs?: () => number;
}

const GONE = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'too old resource version',
  reason: 'Expired',
  code: 410,
};

export function startWatch(res: ServerResponse, w: WatchRequest): WatchStream {
  const { def, namespace, store, query } = w;
  const rvParam = query.get('resourceVersion') ?? '';
  const bookmarks = query.get('allowWatchBookmarks') === 'true';
  const timeoutSeconds = Number(query.get('timeoutSeconds') ?? 0);
  const matches = labelMatcher(query.get('labelSelector'));
  const selected = (o: KubeObj | undefined): boolean => o !== undefined && matches(o.metadata.labels as Record<string, unknown> | undefined);
  /** The event this stream sees for a store event, if any. */
  const filtered = (e: StoreEvent): StoreEvent | undefined => {
    const now = selected(e.object);
    if (e.type !== 'MODIFIED') return now ? e : undefined;
    const before = selected(e.previous);
    if (now) return before ? e : { ...e, type: 'ADDED' };
    return before ? { ...e, type: 'DELETED' } : undefined;
  };
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** Live events not delivered yet (lagMs), oldest first. */
  const lagging: { due: number; type: string; object: object }[] = [];
  let lagTimer: NodeJS.Timeout | undefined;

  const write = (type: string, object: object): void => {
    if (!closed) res.write(`${JSON.stringify({ type, object })}\n`);
  };
  const deliverDue = (): void => {
    lagTimer = undefined;
    while (lagging.length > 0 && lagging[0]!.due <= Date.now()) {
      const e = lagging.shift()!;
      write(e.type, e.object);
    }
    if (lagging.length > 0 && !closed) lagTimer = setTimeout(deliverDue, lagging[0]!.due - Date.now());
  };
  const live = (type: string, object: object): void => {
    const lag = w.lagMs?.() ?? 0;
    if (lag <= 0 && lagging.length === 0) return write(type, object);
    // Never before an earlier event: the stream stays in resourceVersion order.
    lagging.push({ due: Math.max(Date.now() + lag, lagging.at(-1)?.due ?? 0), type, object });
    lagTimer ??= setTimeout(deliverDue, lagging[0]!.due - Date.now());
  };
  const finish = (how: 'destroy' | 'end'): void => {
    if (closed) return;
    closed = true;
    unsubscribe?.();
    if (timer) clearTimeout(timer);
    clearTimeout(lagTimer);
    if (how === 'destroy') res.destroy();
    else res.end();
  };
  const stream: WatchStream = {
    plural: def.plural,
    namespace,
    bookmark(rv) {
      if (bookmarks) write('BOOKMARK', { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(rv) } });
    },
    close: finish,
  };
  res.on('close', () => {
    closed = true;
    unsubscribe?.();
    if (timer) clearTimeout(timer);
    clearTimeout(lagTimer);
  });

  const from = rvParam === '' || rvParam === '0' ? undefined : Number(rvParam);
  if (from !== undefined && (!Number.isFinite(from) || from < store.compacted)) {
    if (w.goneMode === 'http') {
      const text = JSON.stringify(GONE);
      res.writeHead(410, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      closed = true;
      return stream;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    write('ERROR', GONE);
    finish('end');
    return stream;
  }

  res.writeHead(200, { 'content-type': 'application/json' });
  res.flushHeaders();
  // Replay and subscribe in the same tick: the store emits synchronously, so nothing falls in between.
  if (from === undefined) {
    for (const o of store.list(def.plural, namespace)) if (selected(o)) write('ADDED', withType(def, o));
  } else {
    for (const e of store.eventsSince(def.plural, from, namespace)) {
      const seen = filtered(e);
      if (seen) write(seen.type, withType(def, seen.object));
    }
  }
  unsubscribe = store.subscribe((e: StoreEvent) => {
    if (e.plural !== def.plural || (namespace !== undefined && e.namespace !== namespace)) return;
    const seen = filtered(e);
    if (seen) live(seen.type, withType(def, seen.object));
  });
  if (timeoutSeconds > 0) timer = setTimeout(() => finish('end'), timeoutSeconds * 1000);
  return stream;
}

function withType(def: ResourceDef, o: KubeObj): KubeObj {
  return { ...o, kind: def.kind, apiVersion: apiVersionOf(def) };
}
