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
  readonly unauthorized: number;
  /** Distinct TCP connections accepted (keep-alive check). */
  readonly connections: number;
  readonly lastAuthorization: string | undefined;
  setPayload(p: string | Buffer): void;
  setStatus(s: number): void;
  setDelayMs(ms: number): void;
  setHang(v: boolean): void;
  setToken(t: string | undefined): void;
  stop(): Promise<void>;
}

/** Prometheus text for one pool, in the GIE names (`family: 'gie'`) or the llm-d router names. */
export function poolMetricsText(
  pool: string,
  v: { readyPods?: number; queueSize?: number; kvCache?: number; runningRequests?: number },
  family: 'gie' | 'llmd' = 'gie',
): string {
  const names =
    family === 'gie'
      ? ['inference_pool_ready_pods', 'inference_pool_average_queue_size', 'inference_pool_average_kv_cache_utilization', 'inference_pool_average_running_requests']
      : ['llm_d_router_epp_ready_endpoints', 'llm_d_router_epp_average_queue_size', 'llm_d_router_epp_average_kv_cache_utilization', 'llm_d_router_epp_average_running_requests'];
  const values = [v.readyPods, v.queueSize, v.kvCache, v.runningRequests];
  const lines: string[] = [];
  names.forEach((name, i) => {
    const value = values[i];
    if (value === undefined) return;
    lines.push(`# HELP ${name} ${name} help`, `# TYPE ${name} gauge`, `${name}{name="${pool}"} ${value}`);
  });
  return lines.join('\n') + '\n';
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
      if (o.token !== undefined && req.headers.authorization !== `Bearer ${o.token}`) {
        unauthorized++;
        res.writeHead(401, { 'content-type': 'text/plain' }).end('unauthorized\n');
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
    async stop() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
