// A small Prometheus /metrics HTTP server for signal tests: real HTTP on
// 127.0.0.1:0 (or a fixed port for restarts), settable payload, status, delay,
// hang and bearer-token check, with request counters.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeMetricsServerOptions {
  payload?: string | Buffer;
  status?: number;
  delayMs?: number;
  hang?: boolean;
  /** When set, requests without `Authorization: Bearer <token>` get 401. */
  token?: string;
  /** Like an EPP's metrics auth: these bearer tokens are accepted; no token gets 401, any other token 403. */
  tokens?: readonly string[];
  path?: string; // default /metrics
  port?: number; // default 0
  /** Serve HTTPS with this certificate and key. */
  tls?: { cert: Buffer; key: Buffer };
}

export interface FakeMetricsServer {
  readonly port: number;
  readonly origin: string; // http(s)://127.0.0.1:port
  /** Requests served (all paths), unauthorized ones included. */
  readonly requests: number;
  /** Requests refused with 401 or 403. */
  readonly unauthorized: number;
  /** Distinct TCP connections accepted (keep-alive check). */
  readonly connections: number;
  readonly lastAuthorization: string | undefined;
  setPayload(p: string | Buffer): void;
  setStatus(s: number): void;
  setDelayMs(ms: number): void;
  setHang(v: boolean): void;
  setToken(t: string | undefined): void;
  setTokens(t: readonly string[] | undefined): void;
  stop(): Promise<void>;
}

/** Pool metric names by family: the current llm-d EPP names, the deprecated GIE names, the pre-release llm-d router names. */
export const POOL_METRIC_FAMILIES = {
  epp: ['llm_d_epp_ready_endpoints', 'llm_d_epp_average_queue_size', 'llm_d_epp_average_kv_cache_utilization', 'llm_d_epp_average_running_requests'],
  gie: ['inference_pool_ready_pods', 'inference_pool_average_queue_size', 'inference_pool_average_kv_cache_utilization', 'inference_pool_average_running_requests'],
  llmd: ['llm_d_router_epp_ready_endpoints', 'llm_d_router_epp_average_queue_size', 'llm_d_router_epp_average_kv_cache_utilization', 'llm_d_router_epp_average_running_requests'],
} as const;

export interface PoolMetricValues {
  readyPods?: number;
  queueSize?: number;
  kvCache?: number;
  runningRequests?: number;
}

/** Prometheus text for one pool in one family of names. */
export function poolMetricsText(pool: string, v: PoolMetricValues, family: keyof typeof POOL_METRIC_FAMILIES = 'gie'): string {
  const names = POOL_METRIC_FAMILIES[family];
  const values = [v.readyPods, v.queueSize, v.kvCache, v.runningRequests];
  const lines: string[] = [];
  names.forEach((name, i) => {
    const value = values[i];
    if (value === undefined) return;
    lines.push(`# HELP ${name} ${name} help`, `# TYPE ${name} gauge`, `${name}{name="${pool}"} ${value}`);
  });
  return lines.join('\n') + '\n';
}

/** 401 without a bearer token (or, with `token`, without that one), 403 for a token not in `tokens`; undefined when allowed. */
function authFailure(authorization: string | undefined, o: Pick<FakeMetricsServerOptions, 'token' | 'tokens'>): 401 | 403 | undefined {
  if (o.token !== undefined && authorization !== `Bearer ${o.token}`) return 401;
  if (o.tokens === undefined) return undefined;
  const m = /^Bearer (.+)$/.exec(authorization ?? '');
  if (!m) return 401;
  return o.tokens.includes(m[1]!) ? undefined : 403;
}

export async function startFakeMetricsServer(opts: FakeMetricsServerOptions = {}): Promise<FakeMetricsServer> {
  const o = { status: 200, delayMs: 0, hang: false, path: '/metrics', payload: '' as string | Buffer, ...opts };
  let requests = 0;
  let unauthorized = 0;
  let connections = 0;
  let lastAuthorization: string | undefined;
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    requests++;
    lastAuthorization = req.headers.authorization;
    if (o.hang) return; // never answers; the socket stays open until stop()
    const answer = () => {
      const refused = authFailure(req.headers.authorization, o);
      if (refused !== undefined) {
        unauthorized++;
        res.writeHead(refused, { 'content-type': 'text/plain' }).end(refused === 401 ? 'unauthorized\n' : 'forbidden\n');
        return;
      }
      if (req.url !== o.path) {
        res.writeHead(404).end('not found\n');
        return;
      }
      res.writeHead(o.status, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(o.payload);
    };
    if (o.delayMs > 0) {
      const t = setTimeout(() => {
        timers.delete(t);
        answer();
      }, o.delayMs);
      timers.add(t);
    } else {
      answer();
    }
  };

  const server: Server = o.tls ? createHttpsServer({ cert: o.tls.cert, key: o.tls.key }, handle) : createServer(handle);
  server.on(o.tls ? 'secureConnection' : 'connection', (s: Socket) => {
    connections++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(o.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    origin: `${o.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    get requests() { return requests; },
    get unauthorized() { return unauthorized; },
    get connections() { return connections; },
    get lastAuthorization() { return lastAuthorization; },
    setPayload(p) { o.payload = p; },
    setStatus(s) { o.status = s; },
    setDelayMs(ms) { o.delayMs = ms; },
    setHang(v) { o.hang = v; },
    setToken(t) { o.token = t; },
    setTokens(t) { o.tokens = t; },
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
