/**
 * The project's Kubernetes access layer: a KubeConfig whose every request to
 * the API server is bounded in time, so a half-open connection or a server
 * that accepts and never answers turns into a reported failure within seconds.
 *
 * - Generated API clients (`kc.makeApiClient(...)`: list pages, get, create,
 *   patch, update, delete, Leases) abort after requestTimeoutMs, covering
 *   connect, response headers and body alike, and read at most
 *   maxResponseBytes of an answer, and of all pages of one list together
 *   (response-bound.ts): a member that streams an endless body, or pages
 *   without end, fails the request instead of filling the heap.
 * - watch(): the connect (until the 200) is bounded by requestTimeoutMs; once
 *   streaming, an idle watchdog (no byte, events and bookmarks alike, for
 *   watchIdleTimeoutMs) and a lifetime bound (the server-side timeoutSeconds
 *   plus requestTimeoutMs) end it. Those ends are routine: done(null), and the
 *   caller resumes from its last resourceVersion. A watch's events are bounded
 *   per line (MAX_WATCH_EVENT_CHARS), the Status body of a refused watch to
 *   MAX_ERROR_BODY_BYTES.
 */
import { HttpMethod, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { type Dispatcher, fetch, getGlobalDispatcher } from 'undici';
import { DispatcherCache } from './dispatcher-cache.js';
import { IDENTITY_ENCODING, boundResponses, currentList } from './response-bound.js';

export interface RequestBounds {
  readonly requestTimeoutMs: number;
  readonly watchIdleTimeoutMs: number;
  /** Largest answer read from the API server (watches excepted). */
  readonly maxResponseBytes: number;
}

/** What a bounded request rejects with when the API server did not answer in time. */
export class RequestTimeoutError extends Error {
  override readonly name = 'TimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no answer from the API server within ${timeoutMs} ms (request timed out)`);
  }
}

/** The HTTP status of a watch request the server refused, with its Status body. */
export class WatchRequestError extends Error {
  override readonly name = 'WatchRequestError';
  constructor(
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(`watch refused: HTTP ${statusCode}`);
  }
}

/**
 * A bearer token that changes (a credential plugin's): asked for on every request, told when
 * the API server refused it (401) so the next request gets a new one.
 */
export interface BearerCredential {
  get(): Promise<string>;
  invalidate(): void;
}

/** The bearer credential could not give a token: the request was not sent. */
export class CredentialError extends Error {
  override readonly name = 'CredentialError';
}

export type WatchEventHandler = (type: string, object: Record<string, unknown>) => void;
/** `established`: the server had answered 200 (an end after that is routine, whatever ended it). */
export type WatchDone = (err: unknown, established: boolean) => void;

/**
 * Starts a watch; resolves once the server answered 200 (or the attempt failed,
 * `done` having been called with the error). `done` is called exactly once.
 */
export type WatchFn = (path: string, query: Readonly<Record<string, string | number | boolean>>, onEvent: WatchEventHandler, done: WatchDone) => Promise<AbortController>;

/** An AbortSignal that fires a RequestTimeoutError after `ms` (its timer does not hold the process open). */
export function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new RequestTimeoutError(ms)), ms).unref();
  return controller.signal;
}

export class BoundedKubeConfig extends KubeConfig {
  /** `bearer`: a token for every request instead of the kubeconfig user's credentials. */
  constructor(
    readonly bounds: RequestBounds,
    private readonly bearer?: BearerCredential,
  ) {
    super();
  }

  private readonly dispatchers = new DispatcherCache();

  /** The kubeconfig user's credentials, or the bearer credential's token; the kept dispatcher (dispatcher-cache.ts). */
  private async authenticate(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const kept = this.dispatchers.for(this);
    if (kept) context.setDispatcher(kept as Parameters<RequestContext['setDispatcher']>[0]);
    if (!this.bearer) return;
    let token: string;
    try {
      token = await this.bearer.get();
    } catch (err) {
      throw new CredentialError(err instanceof Error ? err.message : String(err));
    }
    context.setHeaderParam('Authorization', `Bearer ${token}`);
  }

  private readonly refused = (statusCode: number): void => {
    if (statusCode === 401) this.bearer?.invalidate();
  };

  /**
   * Called by the generated clients for every request: adds the timeout and the size bound next
   * to the credentials. The bound wraps the dispatcher client-node chose (TLS, client certificate,
   * proxy), or the global one it would otherwise have used.
   */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.authenticate(context);
    if (!context.getSignal()) context.setSignal(timeoutSignal(this.bounds.requestTimeoutMs));
    context.setHeaderParam(IDENTITY_ENCODING.name, IDENTITY_ENCODING.value);
    const chosen = (context.getDispatcher() as Dispatcher | undefined) ?? getGlobalDispatcher();
    // A page of a list (asOneList) counts against the list's bound with its other pages.
    const bounded = boundResponses(chosen, this.bounds.maxResponseBytes, currentList(), this.bearer ? this.refused : undefined);
    context.setDispatcher(bounded as Parameters<RequestContext['setDispatcher']>[0]);
  }

  readonly watch: WatchFn = async (path, query, onEvent, done) => {
    const server = this.getCurrentCluster()?.server;
    if (!server) throw new Error('the kubeconfig has no current cluster');
    const url = new URL(server + path);
    url.searchParams.set('watch', 'true');
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
    const { requestTimeoutMs, watchIdleTimeoutMs } = this.bounds;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let lifetime: NodeJS.Timeout | undefined;
    let finished = false;
    let established = false;
    /** Our own routine end (idle or lifetime): not an error. */
    let routine = false;
    const arm = (ms: number, onFire: () => void): void => {
      clearTimeout(timer);
      timer = setTimeout(onFire, ms);
      timer.unref();
    };
    const finish = (err: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      clearTimeout(lifetime);
      controller.abort();
      done(err, established);
    };
    const endRoutinely = (): void => {
      routine = true;
      controller.abort();
    };
    const context = new RequestContext(url.toString(), HttpMethod.GET);
    try {
      await this.authenticate(context);
    } catch (err) {
      finish(err);
      return controller;
    }
    arm(requestTimeoutMs, () => controller.abort(new RequestTimeoutError(requestTimeoutMs)));
    try {
      const response = await fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher(), signal: controller.signal });
      this.refused(response.status);
      if (response.status !== 200) throw new WatchRequestError(response.status, (await readPrefix(response.body, MAX_ERROR_BODY_BYTES)).slice(0, 2000));
      const body = response.body;
      if (!body) throw new Error('watch response has no body');
      established = true;
      const seconds = Number(query.timeoutSeconds);
      if (seconds > 0) {
        lifetime = setTimeout(endRoutinely, seconds * 1000 + requestTimeoutMs);
        lifetime.unref();
      }
      arm(watchIdleTimeoutMs, endRoutinely);
      void pump(body, onEvent, () => arm(watchIdleTimeoutMs, endRoutinely)).then(
        () => finish(null),
        (err: unknown) => finish(routine || controller.signal.aborted ? null : err),
      );
    } catch (err) {
      finish(err);
    }
    return controller;
  };
}

/**
 * Longest watch event line accepted (etcd stores objects of at most 1.5 MiB by default). A
 * member's API server that streams a longer line ends the watch with an error (the informer
 * reconnects with backoff) instead of growing the heap without bound.
 */
export const MAX_WATCH_EVENT_CHARS = 16 * 1024 * 1024;

/** Most of a refused watch's body read for its Status message; the rest is not read. */
export const MAX_ERROR_BODY_BYTES = 64 * 1024;

/** At most `maxBytes` of a body as text; the stream is cancelled after that. */
async function readPrefix(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<string> {
  if (!body) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.length;
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  return new TextDecoder().decode(Buffer.concat(chunks).subarray(0, maxBytes));
}

/** Reads newline-delimited watch events; `onData` on every chunk (the idle watchdog). */
async function pump(body: AsyncIterable<Uint8Array>, onEvent: WatchEventHandler, onData: () => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
    onData();
    // Search only the new text for line ends: rescanning a long partial line per chunk is quadratic.
    let from = buffered.length;
    buffered += decoder.decode(chunk, { stream: true });
    let start = 0;
    let newline: number;
    while ((newline = buffered.indexOf('\n', from)) >= 0) {
      const line = buffered.slice(start, newline);
      start = from = newline + 1;
      if (line.trim() === '') continue;
      let event: { type?: unknown; object?: unknown };
      try {
        event = JSON.parse(line) as { type?: unknown; object?: unknown };
      } catch {
        continue; // a line that is not JSON carries no event
      }
      if (typeof event.type === 'string' && event.object && typeof event.object === 'object') onEvent(event.type, event.object as Record<string, unknown>);
    }
    buffered = buffered.slice(start);
    if (buffered.length > MAX_WATCH_EVENT_CHARS) {
      throw new Error(`watch event longer than ${MAX_WATCH_EVENT_CHARS} characters: the API server's stream was cut`);
    }
  }
}
