/**
 * Admin HTTP server: liveness, readiness, Prometheus metrics and debug views.
 * /healthz, /readyz and /metrics may listen on the pod IP; the unauthenticated
 * /debug/* pages (routing table, sources, signals) are served only on loopback
 * unless the operator exposes them (debugPlacement).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { parseListenAddress } from '../config/listen-address.js';
import { isLoopbackListen } from '../config/addresses.js';

export type AdminHandler = (url: URL, req: IncomingMessage) => AdminReply | Promise<AdminReply>;

export interface AdminReply {
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
}

export interface AdminDeps {
  readonly registry: Registry;
  /** Ready: the first snapshot is built and the router is not draining. */
  readonly ready: () => { ready: boolean; reason?: string };
  /** Extra routes, e.g. "/debug/routes". */
  readonly routes: Readonly<Record<string, AdminHandler>>;
  readonly logger: Logger;
  /** The answer (404) to /debug/* paths this listener does not serve. */
  readonly debugElsewhere?: string;
  /** Connection bounds (config `admin`); Node's own defaults when unset. */
  readonly limits?: AdminServerLimits;
}

export interface AdminServerLimits {
  readonly maxConnections: number;
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxHeaderBytes: number;
}

/** Where /debug/* is served: on the admin listener, on a listener of its own, or nowhere. */
export interface DebugPlacement {
  readonly onAdmin: boolean;
  /** The separate debug listener (listen.debug). */
  readonly listen?: string;
  /** Why /debug/* is not on the admin listener, for its 404 answer. */
  readonly reason?: string;
}

/**
 * listen.debug, when set, serves /debug/* (the config refuses a non-loopback address
 * there unless admin.exposeDebug). Otherwise /debug/* shares the admin listener when
 * that is loopback (or exposeDebug is set), and is not served at all when the admin
 * listener is reachable from the network.
 */
export function debugPlacement(listen: { admin: string; debug?: string | undefined }, exposeDebug: boolean): DebugPlacement {
  if (listen.debug !== undefined) {
    return { onAdmin: false, listen: listen.debug, reason: `/debug/* is served on the debug listener (listen.debug ${listen.debug})` };
  }
  if (exposeDebug || isLoopbackListen(listen.admin)) return { onAdmin: true };
  return {
    onAdmin: false,
    reason: `/debug/* is not served on the non-loopback admin address ${listen.admin}: set listen.debug to a loopback address (e.g. 127.0.0.1:9902), or admin.exposeDebug: true`,
  };
}

export interface AdminServer {
  /** "host:port" or the unix socket path actually bound. */
  readonly address: string;
  close(): Promise<void>;
}

export function json(status: number, value: unknown): AdminReply {
  return { status, body: `${JSON.stringify(value, null, 2)}\n`, contentType: 'application/json' };
}

export async function startAdminServer(listen: string, deps: AdminDeps): Promise<AdminServer> {
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    void handle(req, res, deps);
  };
  const l = deps.limits;
  // Node checks the headers/request timeouts on an interval (30 s by default): check often enough
  // that a client trickling its headers is cut close to headersTimeoutMs.
  const server = l
    ? createServer(
        {
          maxHeaderSize: l.maxHeaderBytes,
          headersTimeout: l.headersTimeoutMs,
          requestTimeout: l.requestTimeoutMs,
          keepAliveTimeout: l.keepAliveTimeoutMs,
          connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(l.headersTimeoutMs / 4))),
        },
        handler,
      )
    : createServer(handler);
  if (l) server.maxConnections = l.maxConnections;
  const address = await listenOn(server, listen);
  deps.logger.info({ address }, 'admin server listening');
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, deps: AdminDeps): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://admin');
  try {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, { status: 405, body: 'method not allowed\n' });
    }
    switch (url.pathname) {
      case '/healthz':
        return send(res, { status: 200, body: 'ok\n' });
      case '/readyz': {
        const r = deps.ready();
        return send(res, r.ready ? { status: 200, body: 'ready\n' } : { status: 503, body: `not ready: ${r.reason ?? 'starting'}\n` });
      }
      case '/metrics':
        return send(res, { status: 200, body: await deps.registry.metrics(), contentType: deps.registry.contentType });
    }
    const route = deps.routes[url.pathname];
    if (route) return send(res, await route(url, req));
    if (deps.debugElsewhere !== undefined && url.pathname.startsWith('/debug/')) {
      return send(res, { status: 404, body: `${deps.debugElsewhere}\n` });
    }
    return send(res, { status: 404, body: `no such admin endpoint: ${url.pathname}\n` });
  } catch (err) {
    deps.logger.error({ err, path: url.pathname }, 'admin request failed');
    return send(res, { status: 500, body: 'internal error\n' });
  }
}

function send(res: ServerResponse, reply: AdminReply): void {
  res.writeHead(reply.status, { 'content-type': reply.contentType ?? 'text/plain; charset=utf-8' });
  res.end(reply.body);
}

function listenOn(server: Server, listen: string): Promise<string> {
  const target = parseListenAddress(listen);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const done = (): void => {
      server.off('error', reject);
      const addr = server.address();
      if (typeof addr === 'string') resolve(addr);
      else {
        const a = addr as AddressInfo;
        resolve(a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
      }
    };
    if (target.type === 'unix') server.listen(target.path, done);
    else server.listen(target.port, target.host, done);
  });
}
