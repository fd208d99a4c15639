/**
 * A Kubernetes API server stand-in over real HTTP (127.0.0.1, port 0), behaving
 * like kube-apiserver for what mcip-router uses: list (ListMeta resourceVersion,
 * limit/continue), chunked watch streams (ADDED/MODIFIED/DELETED/BOOKMARK, 410
 * Gone), GET/PUT/PATCH/POST/DELETE on objects and on /status with
 * resourceVersion conflicts, Leases, per-resource 403, "CRD not installed" 404,
 * dropped watches, watches lagging behind writes (a slow watch cache),
 * whole-server down/up on the same port, and requests that
 * are read and never answered (a half-open server); a test may answer chosen
 * requests itself (answerWith).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { ApiState, ObjectCountQuota, RequestRecord, Responder, WriteContext } from './kube-apiserver-http.js';
import { handleRequest, sendError } from './kube-apiserver-http.js';
import type { KubeObj, ResourceDef } from './kube-apiserver-store.js';
import { KubeStore, RESOURCES } from './kube-apiserver-store.js';
import type { WatchStream } from './kube-apiserver-watch.js';

export { RESOURCES, type KubeObj, type ObjectCountQuota, type RequestRecord, type Responder, type WriteContext };
export { writeKubeconfig, type KubeconfigOptions } from './kube-apiserver-kubeconfig.js';

/** A LIST request (for hang()). */
export const isList = (r: RequestRecord): boolean => r.method === 'GET' && !r.watch && r.name === undefined;

export interface KubeApiServerOptions {
  /** Require "Authorization: Bearer <token>" (401 otherwise). */
  readonly token?: string;
  /** How an expired resourceVersion on watch is answered: an ERROR event in a 200 stream (default, like the watch cache) or HTTP 410. */
  readonly goneMode?: 'event' | 'http';
  /** Serve HTTPS with this certificate (PEM), as a real API server does; default plain HTTP. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
}

export class KubeApiServer {
  readonly store = new KubeStore();
  readonly requests: RequestRecord[] = [];
  private server: Server | undefined;
  private port = 0;
  private readonly sockets = new Set<Socket>();
  /** Connections accepted so far (a client that reuses its connections opens few). */
  connectionsAccepted = 0;
  private readonly watches = new Set<WatchStream>();
  private readonly uninstalled = new Set<string>();
  private readonly forbidden = new Set<string>();
  private readonly quotas: ObjectCountQuota[] = [];
  private readonly writeHooks: ((ctx: WriteContext) => void | Promise<void>)[] = [];
  private readonly hangFilters = new Set<(r: RequestRecord) => boolean>();
  private readonly responders = new Set<{ filter: (r: RequestRecord) => boolean; respond: Responder }>();
  private readonly held = new Set<ServerResponse>();
  goneMode: 'event' | 'http';
  private watchLagMs = 0;
  private token: string | undefined;
  private authorizer: ((token: string, r: RequestRecord) => boolean) | undefined;
  private readonly tls: KubeApiServerOptions['tls'];

  constructor(options: KubeApiServerOptions = {}) {
    this.goneMode = options.goneMode ?? 'event';
    this.token = options.token;
    this.tls = options.tls;
  }

  /** From now on only this bearer token is accepted (a rotated or revoked credential); open watches keep running, as on a real server. */
  acceptToken(token: string | undefined): void {
    this.token = token;
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  async start(): Promise<string> {
    await this.listen();
    return this.url;
  }

  /** Closes the listener and every connection (watches included): the cluster is unreachable. */
  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    for (const w of this.watches) w.close('destroy');
    for (const res of this.held) res.destroy();
    for (const sock of this.sockets) sock.destroy();
    await new Promise<void>((r) => s.close(() => r()));
  }

  /** Listens again on the same port; the stored objects and resourceVersions are kept. */
  async up(): Promise<void> {
    if (this.server) return;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.listen();
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }

  async close(): Promise<void> {
    await this.down();
  }

  /** Drops open watch connections (all, or one resource's): 'destroy' resets the socket, 'end' closes the stream cleanly. */
  dropWatches(plural?: string, how: 'destroy' | 'end' = 'destroy'): number {
    let n = 0;
    for (const w of [...this.watches]) {
      if (plural === undefined || w.plural === plural) {
        w.close(how);
        n++;
      }
    }
    return n;
  }

  /** Open watch streams (per resource, or all). */
  watchCount(plural?: string): number {
    return [...this.watches].filter((w) => plural === undefined || w.plural === plural).length;
  }

  /** Sends a BOOKMARK to every watch that asked for them. */
  bookmark(): void {
    for (const w of this.watches) w.bookmark(this.store.resourceVersion);
  }

  /**
   * Watches deliver live events `ms` after the change, in order (a watch cache behind
   * etcd, as on a loaded real server): a write is answered before its event arrives.
   * 0 ends the lag (events already delayed keep their time).
   */
  lagWatches(ms: number): void {
    this.watchLagMs = ms;
  }

  /** Drops the event history: resuming a watch from an older resourceVersion now gets 410. */
  compact(): void {
    this.store.compact();
  }

  /** "Uninstalls" a CRD: every request for it gets 404, its watches end, its objects are gone. */
  uninstall(plural: string): void {
    this.uninstalled.add(plural);
    this.store.purge(plural);
    this.dropWatches(plural, 'end');
  }

  install(plural: string): void {
    this.uninstalled.delete(plural);
  }

  /**
   * RBAC: from now on a request is answered 403 unless `allowed(token, request)` (the bearer
   * token names the user); undefined lifts it. Open watches keep running, as on a real server.
   */
  authorize(allowed: ((token: string, r: RequestRecord) => boolean) | undefined): void {
    this.authorizer = allowed;
  }

  /** A ResourceQuota's object counts (`count/<resource>.<group>`): creates past them get 403, as quota admission answers. */
  quota(q: ObjectCountQuota): void {
    this.quotas.push(q);
  }

  /** Every request for the resource gets 403 until allow(). Open watches end. */
  forbid(plural: string): void {
    this.forbidden.add(plural);
    this.dropWatches(plural, 'end');
  }

  allow(plural: string): void {
    this.forbidden.delete(plural);
  }

  /**
   * Requests matching `filter` (default: every request) are accepted and read but
   * never answered; their connections stay open until the client gives up. E.g.
   * `hang()`: the server accepts connections and never answers; `hang(isList)`:
   * everything but lists is answered. Returns a remover (held requests stay held).
   */
  hang(filter: (r: RequestRecord) => boolean = () => true): () => void {
    this.hangFilters.add(filter);
    return () => this.hangFilters.delete(filter);
  }

  /**
   * Requests matching `filter` are answered by `respond` instead of the stand-in (e.g. a
   * hostile answer: an endless body). Returns a remover.
   */
  answerWith(filter: (r: RequestRecord) => boolean, respond: Responder): () => void {
    const entry = { filter, respond };
    this.responders.add(entry);
    return () => this.responders.delete(entry);
  }

  /** Requests currently held unanswered by hang(). */
  get heldCount(): number {
    return this.held.size;
  }

  /** Runs before each write request is applied (e.g. to make a concurrent change that causes a 409). Returns a remover. */
  onWrite(hook: (ctx: WriteContext) => void | Promise<void>): () => void {
    this.writeHooks.push(hook);
    return () => {
      const i = this.writeHooks.indexOf(hook);
      if (i >= 0) this.writeHooks.splice(i, 1);
    };
  }

  writes(plural?: string, subresource?: string): RequestRecord[] {
    return this.requests.filter(
      (r) => ['PUT', 'PATCH', 'POST', 'DELETE'].includes(r.method) && (plural === undefined || r.plural === plural) && r.subresource === subresource,
    );
  }

  // ---- object helpers for tests (no HTTP) ----

  def(plural: string): ResourceDef {
    const d = RESOURCES.find((r) => r.plural === plural);
    if (!d) throw new Error(`unknown resource ${plural}`);
    return d;
  }

  create(plural: string, obj: object): KubeObj {
    return this.store.create(this.def(plural), obj as KubeObj);
  }

  /** Replaces spec/metadata (no resourceVersion check unless the object carries one). */
  update(plural: string, obj: object): KubeObj {
    return this.store.update(this.def(plural), obj as KubeObj);
  }

  /** Status written to `plural` keeps only what `prune` returns, as the installed CRD's schema would (pruning). */
  pruneStatus(plural: string, prune: (status: unknown) => unknown): void {
    this.def(plural);
    this.store.statusPruners.set(plural, prune);
  }

  updateStatus(plural: string, obj: object): KubeObj {
    return this.store.update(this.def(plural), obj as KubeObj, 'status');
  }

  delete(plural: string, namespace: string, name: string): KubeObj {
    return this.store.delete(this.def(plural), namespace, name);
  }

  get(plural: string, namespace: string, name: string): KubeObj | undefined {
    return this.store.get(plural, namespace, name);
  }

  // ---- HTTP ----

  private listen(): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      handleRequest(this.state, req, res).catch((err: unknown) => sendError(res, err));
    };
    const server: Server = this.tls ? createTlsServer({ cert: this.tls.cert, key: this.tls.key }, handler) : createServer(handler);
    server.on('connection', (sock) => {
      this.connectionsAccepted++;
      this.sockets.add(sock);
      sock.on('close', () => this.sockets.delete(sock));
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        const addr = server.address();
        if (addr && typeof addr === 'object') this.port = addr.port;
        this.server = server;
        resolve();
      });
    });
  }

  private get state(): ApiState {
    return {
      store: this.store,
      requests: this.requests,
      token: this.token,
      goneMode: this.goneMode,
      watchLagMs: () => this.watchLagMs,
      uninstalled: this.uninstalled,
      forbidden: this.forbidden,
      quotas: this.quotas,
      ...(this.authorizer ? { authorize: this.authorizer } : {}),
      runHooks: async (ctx) => {
        for (const h of [...this.writeHooks]) await h(ctx);
      },
      hangs: (r) => [...this.hangFilters].some((f) => f(r)),
      responder: (r) => [...this.responders].find((e) => e.filter(r))?.respond,
      hold: (res) => {
        this.held.add(res);
        res.on('close', () => this.held.delete(res));
      },
      addWatch: (w: WatchStream, res: ServerResponse) => {
        this.watches.add(w);
        res.on('close', () => this.watches.delete(w));
      },
    };
  }
}
