// Simulated GIE Endpoint Picker: a real grpc-js server on 127.0.0.1 serving
// envoy.service.ext_proc.v3.ExternalProcessor (see epp-stream.ts) and grpc.health.v1.Health,
// with faults switchable at runtime, counters for leak checks, kill and restart.
// With `stock`, it behaves like a stock llm-d EPP (simulated-epp-stock.ts).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import {
  EppStream,
  type CrashMode,
  type EppStreamHost,
  type ImmediateSpec,
  type PickContext,
  type PickResult,
  type StreamEnd,
  type StreamRecord,
} from './epp-stream.js';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  ExternalProcessorService,
  HealthService,
  SERVING_STATUS,
  type PbProcessingRequest,
  type PbProcessingResponse,
  type RequestCase,
  type ServingStatus,
} from './protos.js';
import { leaderHealthUpdates, stockHealth, StockMetrics, stockOptions, type StockEppOptions } from './simulated-epp-stock.js';

export { DESTINATION_HEADER, SUBSET_KEY, SUBSET_NAMESPACE, SERVED_KEY } from './epp-stream.js';
export type { CrashMode, ImmediateSpec, PickContext, PickResult, StreamEnd, StreamRecord, StockEppOptions };
export { STOCK_HEALTH_SERVICES } from './simulated-epp-stock.js';

const TLS_DIR = fileURLToPath(new URL('../fixtures/tls/', import.meta.url));
/** The self-signed test certificate (CN localhost, SAN 127.0.0.1, ::1) and key. */
export const TLS_FIXTURES = {
  certPath: `${TLS_DIR}cert.pem`,
  keyPath: `${TLS_DIR}key.pem`,
  cert: readFileSync(`${TLS_DIR}cert.pem`),
  key: readFileSync(`${TLS_DIR}key.pem`),
};

export const HEALTH_SERVICES = ['', 'envoy.service.ext_proc.v3.ExternalProcessor', 'inference-extension'] as const;

export interface SimulatedEppOptions {
  endpoints: string[];
  /** Custom choice; ctx.eligible already honours the subset hint. Default round-robin. */
  picker?: (ctx: PickContext) => PickResult;
  /** Return this many endpoints, comma-separated, primary first (default 1). */
  listSize?: number;
  requireModel?: boolean;
  /** TLS with the self-signed fixture certificate (true), or with this certificate and key. */
  tls?: boolean | { readonly cert: Buffer; readonly key: Buffer };
  port?: number; // default 0
  /** Also serve Health on a second port (like an EPP's 9003). Health is always on the main port too. */
  separateHealthPort?: boolean;
  maxMessageBytes?: number; // default 16 MiB
  /** Streamed-response piece size when echoing a body in full duplex (default 64 KiB). */
  echoChunkBytes?: number;
  immediate?: ImmediateSpec;
  delayMs?: number;
  hang?: boolean;
  /** Answer as usual but never end a stream on the client's half-close: only a cancel ends it (a stuck EPP). */
  ignoreHalfClose?: boolean;
  /** Accept each stream, then never read from it (a stuck EPP, or a partition after connect): flow control stalls the sender. */
  stallReads?: boolean;
  crash?: CrashMode;
  /** Headers the EPP sets on response_headers (default none). */
  responseHeaders?: Record<string, string>;
  /** Initial health per service (default SERVING for HEALTH_SERVICES). */
  health?: Record<string, ServingStatus>;
  /** How many stream records to keep (default 200). */
  keepStreams?: number;
  /**
   * Behave like a stock llm-d EPP: every stream answered as in full duplex whatever mode is
   * announced, no Health on the ext_proc port (UNIMPLEMENTED), Health on a
   * separate port (STOCK_HEALTH_SERVICES, leader election), metrics under llm_d_epp_* on
   * `metricsOrigin`/metrics, optionally token-protected. `health` still overrides single names.
   */
  stock?: StockEppOptions | boolean;
}

export interface EppCounters {
  streamsOpened: number;
  openStreams: number;
  /**
   * Ended streams by how they ended (epp-stream.ts StreamEnd), counted once the call and its
   * HTTP/2 stream both closed (a moment after openStreams drops): the EPP ended them with OK
   * and the client never reset them ...
   */
  streamsEndedOk: number;
  /** ... the client cancelled them: before the EPP's status, or by an RST_STREAM after it ... */
  streamsCancelled: number;
  /** ... or the EPP failed them / the call errored. */
  streamsFailed: number;
  messages: Record<RequestCase, number>;
  picks: Record<string, number>;
  immediateResponses: number;
  /** grpc.health.v1.Health/Check calls received (on any port), answered or not. */
  healthChecks: number;
}

export interface SimulatedEpp {
  readonly address: string; // 127.0.0.1:port
  readonly port: number;
  readonly healthAddress: string;
  /** Stock mode: the metrics endpoint's port and origin (http://127.0.0.1:port); undefined otherwise. */
  readonly metricsPort: number | undefined;
  readonly metricsOrigin: string | undefined;
  /** Stock mode: scrapes refused for a missing or unknown token (401/403). */
  readonly metricsUnauthorized: number;
  readonly counters: EppCounters;
  /** Most recent streams, oldest first. */
  readonly streams: StreamRecord[];
  setEndpoints(endpoints: string[]): void;
  setPicker(picker: SimulatedEppOptions['picker']): void;
  setListSize(n: number): void;
  setRequireModel(v: boolean): void;
  setImmediate(spec: ImmediateSpec | undefined): void;
  setDelayMs(ms: number): void;
  setHang(v: boolean): void;
  setIgnoreHalfClose(v: boolean): void;
  setCrash(mode: CrashMode | undefined): void;
  setResponseHeaders(h: Record<string, string> | undefined): void;
  setHealth(service: string, status: ServingStatus): void;
  /** Stock mode: win or lose the leader lease (readiness, "" and ext_proc follow; liveness stays SERVING). */
  setLeader(leader: boolean): void;
  /** Stock mode: the pool metrics it exports (ready endpoints default to the endpoint count). */
  setPoolMetrics(v: NonNullable<StockEppOptions['metrics']>): void;
  resetCounters(): void;
  /** forceShutdown: every open stream is reset, the port closes. */
  kill(): Promise<void>;
  /** Serve again on the same port(s) after kill(). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A subset entry is `ip:port`, or a bare IP matching any port of that IP. */
function matchesSubset(endpoint: string, entry: string): boolean {
  if (entry === endpoint) return true;
  if (!entry.includes(':')) return endpoint.startsWith(`${entry}:`);
  return !entry.startsWith('[') && endpoint.startsWith(`[${entry}]:`);
}

function zeroCounters(): EppCounters {
  return {
    streamsOpened: 0,
    openStreams: 0,
    streamsEndedOk: 0,
    streamsCancelled: 0,
    streamsFailed: 0,
    messages: { request_headers: 0, request_body: 0, request_trailers: 0, response_headers: 0, response_body: 0, response_trailers: 0 },
    picks: {},
    healthChecks: 0,
    immediateResponses: 0,
  };
}

export async function startSimulatedEpp(opts: SimulatedEppOptions): Promise<SimulatedEpp> {
  const o = { ...opts };
  let counters = zeroCounters();
  const streams: StreamRecord[] = [];
  let nextId = 1;
  let rr = 0;
  const stock = stockOptions(o.stock);
  const health = stock ? stockHealth(stock.leader ?? true) : new Map<string, ServingStatus>(HEALTH_SERVICES.map((s) => [s, 'SERVING']));
  const metrics = stock ? new StockMetrics(stock, () => o.endpoints.length) : undefined;
  for (const [k, v] of Object.entries(o.health ?? {})) health.set(k, v);
  const watchers = new Map<string, Set<grpc.ServerWritableStream<unknown, unknown>>>();
  const max = o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;

  const host: EppStreamHost = {
    get requireModel() { return o.requireModel ?? false; },
    get echoChunkBytes() { return o.echoChunkBytes ?? 64 * 1024; },
    get immediate() { return o.immediate; },
    get delayMs() { return o.delayMs ?? 0; },
    get hang() { return o.hang ?? false; },
    get ignoreHalfClose() { return o.ignoreHalfClose ?? false; },
    ignoresAnnouncedMode: stock !== undefined,
    get crash() { return o.crash; },
    get responseHeaders() { return o.responseHeaders; },
    pick(ctx) {
      const eligible = ctx.subset
        ? o.endpoints.filter((e) => ctx.subset!.some((s) => matchesSubset(e, s)))
        : o.endpoints.slice();
      const full: PickContext = { ...ctx, eligible };
      let result: PickResult;
      if (o.picker) result = o.picker(full);
      else if (eligible.length === 0) result = undefined;
      else {
        const start = rr++ % eligible.length;
        const n = Math.min(Math.max(1, o.listSize ?? 1), eligible.length);
        result = Array.from({ length: n }, (_, i) => eligible[(start + i) % eligible.length]!);
      }
      const primary = Array.isArray(result) ? result[0] : typeof result === 'string' ? result.split(',')[0] : undefined;
      if (primary !== undefined) counters.picks[primary] = (counters.picks[primary] ?? 0) + 1;
      return result;
    },
    onMessage(type) { counters.messages[type]++; },
    onImmediate() { counters.immediateResponses++; },
    onClosed() { counters.openStreams--; },
    onEnded(end: StreamEnd) {
      if (end === 'ok') counters.streamsEndedOk++;
      else if (end === 'cancelled') counters.streamsCancelled++;
      else counters.streamsFailed++;
    },
  };

  const process = (call: grpc.ServerDuplexStream<PbProcessingRequest, PbProcessingResponse>): void => {
    counters.streamsOpened++;
    counters.openStreams++;
    const record: StreamRecord = { id: nextId++, peer: call.getPeer(), grpcMetadata: call.metadata.getMap(), received: [], sent: [], closed: false };
    streams.push(record);
    if (streams.length > (o.keepStreams ?? 200)) streams.shift();
    new EppStream(call, host, record);
    if (o.stallReads) call.pause();
  };

  const statusOf = (service: string) => SERVING_STATUS[health.get(service) ?? 'SERVICE_UNKNOWN'];
  const healthImpl: grpc.UntypedServiceImplementation = {
    Check(call: grpc.ServerUnaryCall<{ service?: string }, unknown>, cb: grpc.sendUnaryData<unknown>) {
      counters.healthChecks++;
      const s = call.request.service ?? '';
      if (!health.has(s)) return cb({ code: grpc.status.NOT_FOUND, details: `unknown service ${s}` });
      cb(null, { status: statusOf(s) });
    },
    Watch(call: grpc.ServerWritableStream<{ service?: string }, unknown>) {
      const s = call.request.service ?? '';
      const set = watchers.get(s) ?? new Set();
      watchers.set(s, set);
      set.add(call as grpc.ServerWritableStream<unknown, unknown>);
      call.on('cancelled', () => set.delete(call as grpc.ServerWritableStream<unknown, unknown>));
      call.write({ status: statusOf(s) });
    },
  };

  const serverOptions: grpc.ServerOptions = {
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
  };
  const creds = (): grpc.ServerCredentials =>
    o.tls
      ? grpc.ServerCredentials.createSsl(null, [o.tls === true ? { cert_chain: TLS_FIXTURES.cert, private_key: TLS_FIXTURES.key } : { cert_chain: o.tls.cert, private_key: o.tls.key }], false)
      : grpc.ServerCredentials.createInsecure();

  const bind = (server: grpc.Server, port: number, c: grpc.ServerCredentials): Promise<number> =>
    new Promise((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, c, (err, p) => (err ? reject(err) : resolve(p))));

  let server: grpc.Server | undefined;
  let healthServer: grpc.Server | undefined;
  let port = o.port ?? 0;
  let healthPort = 0;
  const listen = async (): Promise<void> => {
    server = new grpc.Server(serverOptions);
    server.addService(ExternalProcessorService, { Process: process as grpc.handleBidiStreamingCall<unknown, unknown> });
    if (!stock) server.addService(HealthService, healthImpl);
    port = await bind(server, port, creds());
    await metrics?.start();
    if (o.separateHealthPort || stock) {
      healthServer = new grpc.Server();
      healthServer.addService(HealthService, healthImpl);
      healthPort = await bind(healthServer, healthPort, grpc.ServerCredentials.createInsecure());
    }
  };
  const shutdown = async (): Promise<void> => {
    for (const set of watchers.values()) for (const w of set) w.end();
    watchers.clear();
    server?.forceShutdown();
    healthServer?.forceShutdown();
    server = healthServer = undefined;
    await metrics?.stop();
  };
  const setHealth = (service: string, status: ServingStatus): void => {
    health.set(service, status);
    for (const w of watchers.get(service) ?? []) w.write({ status: SERVING_STATUS[status] });
  };
  await listen();

  return {
    get address() { return `127.0.0.1:${port}`; },
    get port() { return port; },
    get healthAddress() { return `127.0.0.1:${o.separateHealthPort || stock ? healthPort : port}`; },
    get metricsPort() { return metrics?.metricsPort; },
    get metricsOrigin() { return metrics?.origin; },
    get metricsUnauthorized() { return metrics?.unauthorized ?? 0; },
    get counters() { return counters; },
    streams,
    setEndpoints(e) {
      o.endpoints = e.slice();
      metrics?.refresh();
    },
    setPicker(p) { o.picker = p; },
    setListSize(n) { o.listSize = n; },
    setRequireModel(v) { o.requireModel = v; },
    setImmediate(spec) { o.immediate = spec; },
    setDelayMs(ms) { o.delayMs = ms; },
    setHang(v) { o.hang = v; },
    setIgnoreHalfClose(v) { o.ignoreHalfClose = v; },
    setCrash(mode) { o.crash = mode; },
    setResponseHeaders(h) { o.responseHeaders = h; },
    setHealth,
    setLeader(leader) {
      for (const [s, status] of leaderHealthUpdates(leader)) setHealth(s, status);
    },
    setPoolMetrics(v) {
      if (!metrics) throw new Error('setPoolMetrics needs a stock EPP');
      metrics.set(v);
    },
    resetCounters() { counters = { ...zeroCounters(), openStreams: counters.openStreams }; },
    async kill() { await shutdown(); },
    async restart() { if (!server) await listen(); },
    async stop() { await shutdown(); },
  };
}
