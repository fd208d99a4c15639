/**
 * SIMULATION: the Endpoint Picker (EPP) of one InferencePool, answering like a
 * Gateway API Inference Extension EPP:
 *
 * - ext_proc (envoy.service.ext_proc.v3.ExternalProcessor/Process), body mode
 *   FULL_DUPLEX_STREAMED: reads the whole request body, picks the least-loaded
 *   ready model server of its pool, answers request_headers with
 *   x-gateway-destination-endpoint (raw_value) + clear_route_cache + the
 *   envoy.lb dynamic metadata, then echoes the body as streamed_response;
 *   errors come back as immediate_response (400 bad body, 503 no ready pods).
 *   The response path is echoed the same way.
 * - grpc.health.v1.Health on the same port.
 * - Prometheus pool metrics on their own HTTP port (label name=<pool>), from
 *   the pods' live load.
 *
 * A real EPP learns its pods from the InferencePool selector and scrapes their
 * metrics; this one is handed its pod objects directly.
 */
import { createServer, type Server as HttpServer } from 'node:http';
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
} from '@grpc/grpc-js';
import { decodeRequest, encodeResponse, headerValue, type ProcessingRequest } from '../src/protocol/codec.js';
import { BodySendMode, EXT_PROC_SERVICE } from '../src/protocol/constants.js';
import {
  continueBody,
  continueTrailers,
  destinationHeadersResponse,
  headerOption,
  immediateResponse,
  streamedBody,
} from '../src/protocol/responses.js';
import { extProcRawService, healthService, HealthStatus, type HealthCheckRequest, type HealthCheckResponse } from '../src/protocol/services.js';
import { HOST } from './layout.js';
import type { SimulatedModelServer } from './sim-model-server.js';

export interface EppOptions {
  readonly cluster: string;
  /** InferencePool name: the `name` label of the pool metrics. */
  readonly pool: string;
  readonly port: number;
  readonly metricsPort: number;
  readonly pods: readonly SimulatedModelServer[];
}

/** Health services answered: "", what gateways probe, and GIE's own. */
const HEALTH_SERVICES = new Set(['', EXT_PROC_SERVICE, 'inference-extension']);
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const ECHO_CHUNK_BYTES = 64 * 1024;

export class SimulatedEpp {
  private grpc: Server | undefined;
  private metrics: HttpServer | undefined;
  private readonly streams = new Set<EppStream>();
  private readonly watchers = new Set<ServerWritableStream<HealthCheckRequest, HealthCheckResponse>>();
  picks = 0;

  constructor(readonly opts: EppOptions) {}

  get up(): boolean {
    return this.grpc !== undefined;
  }

  async start(): Promise<void> {
    if (this.grpc) return;
    const server = new Server({
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    });
    server.addService(extProcRawService, {
      Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
        const stream = new EppStream(call, this, () => this.streams.delete(stream));
        this.streams.add(stream);
      },
    });
    server.addService(healthService, {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, cb: sendUnaryData<HealthCheckResponse>) => {
        const service = call.request.service ?? '';
        if (!HEALTH_SERVICES.has(service)) return cb({ code: GrpcStatus.NOT_FOUND, details: `unknown service "${service}"` });
        cb(null, { status: this.readyPods().length > 0 ? HealthStatus.SERVING : HealthStatus.NOT_SERVING });
      },
      Watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
        call.write({ status: this.readyPods().length > 0 ? HealthStatus.SERVING : HealthStatus.NOT_SERVING });
        this.watchers.add(call);
        call.on('cancelled', () => this.watchers.delete(call));
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`${HOST}:${this.opts.port}`, ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.grpc = server;

    const metrics = createServer((req, res) => {
      if (req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(this.metricsText());
    });
    try {
      await new Promise<void>((resolve, reject) => {
        metrics.once('error', reject);
        metrics.listen({ port: this.opts.metricsPort, host: HOST, exclusive: true }, () => resolve());
      });
    } catch (err) {
      server.forceShutdown();
      this.grpc = undefined;
      throw err;
    }
    this.metrics = metrics;
  }

  /** Stops at once, like a killed EPP pod: open streams are reset, both ports close. */
  async stop(): Promise<void> {
    const server = this.grpc;
    const metrics = this.metrics;
    this.grpc = undefined;
    this.metrics = undefined;
    for (const w of this.watchers) w.end();
    this.watchers.clear();
    server?.forceShutdown();
    for (const s of [...this.streams]) s.abandon();
    if (metrics) {
      const closed = new Promise<void>((resolve) => metrics.close(() => resolve()));
      metrics.closeAllConnections();
      await closed;
    }
  }

  readyPods(): SimulatedModelServer[] {
    return this.opts.pods.filter((p) => p.up);
  }

  /** The least-loaded ready pod (ties: random), or undefined. */
  pick(): SimulatedModelServer | undefined {
    const now = Date.now();
    let best: SimulatedModelServer[] = [];
    let bestLoad = Infinity;
    for (const pod of this.readyPods()) {
      const load = pod.load(now);
      if (load < bestLoad) {
        best = [pod];
        bestLoad = load;
      } else if (load === bestLoad) best.push(pod);
    }
    const chosen = best[Math.floor(Math.random() * best.length)];
    if (chosen) {
      chosen.reserve();
      this.picks++;
    }
    return chosen;
  }

  /** GIE's pool gauges (label name = pool), averaged over ready pods. */
  metricsText(): string {
    const pods = this.readyPods();
    const avg = (f: (p: SimulatedModelServer) => number): number =>
      pods.length === 0 ? 0 : pods.reduce((sum, p) => sum + f(p), 0) / pods.length;
    const name = `name="${this.opts.pool}"`;
    const lines = [
      '# HELP inference_pool_ready_pods The number of ready pods in the inference server pool.',
      '# TYPE inference_pool_ready_pods gauge',
      `inference_pool_ready_pods{${name}} ${pods.length}`,
      '# HELP inference_pool_average_queue_size The average number of requests pending in the model server queue.',
      '# TYPE inference_pool_average_queue_size gauge',
      `inference_pool_average_queue_size{${name}} ${round(avg((p) => p.waitingRequests()))}`,
      '# HELP inference_pool_average_kv_cache_utilization The average kv cache utilization for an inference server pool.',
      '# TYPE inference_pool_average_kv_cache_utilization gauge',
      `inference_pool_average_kv_cache_utilization{${name}} ${round(avg((p) => p.kvCacheUtilization()))}`,
      '# HELP inference_pool_average_running_requests The average number of requests running in the model server.',
      '# TYPE inference_pool_average_running_requests gauge',
      `inference_pool_average_running_requests{${name}} ${round(avg((p) => p.runningRequests()))}`,
      '# HELP inference_pool_per_pod_queue_size The total number of requests pending in the model server queue for each underlying pod.',
      '# TYPE inference_pool_per_pod_queue_size gauge',
      ...pods.map((p) => `inference_pool_per_pod_queue_size{${name},model_server_pod="${p.pod}"} ${p.waitingRequests()}`),
    ];
    return `${lines.join('\n')}\n`;
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

type Phase = 'request_headers' | 'request_body' | 'request_trailers' | 'response_headers' | 'response_body' | 'response_trailers';

/** One ext_proc stream: GIE's request handling in FULL_DUPLEX_STREAMED, plain CONTINUE otherwise. */
class EppStream {
  private requestMode: number = BodySendMode.FULL_DUPLEX_STREAMED;
  private responseMode: number = BodySendMode.FULL_DUPLEX_STREAMED;
  private first = true;
  private method = '';
  private readonly body: Buffer[] = [];
  private decided = false;
  private done = false;

  constructor(
    private readonly call: ServerDuplexStream<Buffer, Buffer>,
    private readonly epp: SimulatedEpp,
    private readonly onClosed: () => void,
  ) {
    call.on('data', (msg: Buffer) => this.onMessage(msg));
    call.on('end', () => this.finish());
    call.on('cancelled', () => this.close());
    call.on('error', () => this.close());
  }

  /** The server is going away: forget the stream (forceShutdown resets it). */
  abandon(): void {
    this.close();
  }

  private onMessage(buf: Buffer): void {
    if (this.done) return;
    let msg: ProcessingRequest;
    try {
      msg = decodeRequest(buf);
    } catch {
      return this.fail('malformed ProcessingRequest');
    }
    if (this.first) {
      this.first = false;
      // Sent by Envoy 1.34+ on the first message; GIE assumes full duplex when it is absent.
      if (msg.protocol_config) {
        this.requestMode = msg.protocol_config.request_body_mode;
        this.responseMode = msg.protocol_config.response_body_mode;
      }
    }
    const fdRequest = this.requestMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const fdResponse = this.responseMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const phase = msg.request as Phase | undefined;
    switch (phase) {
      case 'request_headers': {
        this.method = headerValue(msg.request_headers?.headers, ':method') ?? '';
        // Without a body (or outside full duplex) the pick cannot wait for it.
        if (!fdRequest || msg.request_headers?.end_of_stream) this.decide(false);
        return;
      }
      case 'request_body': {
        const b = msg.request_body;
        if (!fdRequest) return this.send(continueBody('request_body'));
        if (this.decided) return this.send(streamedBody('request_body', b?.body ?? Buffer.alloc(0), b?.end_of_stream ?? false));
        this.body.push(Buffer.from(b?.body ?? Buffer.alloc(0)));
        if (b?.end_of_stream) this.decide(true);
        return;
      }
      case 'request_trailers':
        // In full duplex, trailers end a body that did not carry end_of_stream.
        if (fdRequest && !this.decided) this.decide(false);
        if (!this.done) this.send(encodeResponse({ request_trailers: {} }));
        return;
      case 'response_headers':
        return this.send(
          encodeResponse({
            response_headers: {
              response: { header_mutation: { set_headers: [headerOption('x-demo-picked-by', `${this.epp.opts.pool}-epp (${this.epp.opts.cluster})`)] } },
            },
          }),
        );
      case 'response_body': {
        const b = msg.response_body;
        if (!fdResponse) return this.send(continueBody('response_body'));
        return this.send(streamedBody('response_body', b?.body ?? Buffer.alloc(0), b?.end_of_stream ?? false));
      }
      case 'response_trailers':
        return this.send(continueTrailers('response_trailers'));
      default:
        return this.fail('ProcessingRequest without a request member');
    }
  }

  /** Checks the body, picks a pod, answers request_headers, then echoes what was read of the body. */
  private decide(bodyEnded: boolean): void {
    if (this.decided || this.done) return;
    this.decided = true;
    const fd = this.requestMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const body = Buffer.concat(this.body);
    if (fd && body.length > 0) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        return this.immediate(400, 'request body is not a JSON object');
      }
      if (typeof (parsed as { model?: unknown }).model !== 'string') return this.immediate(400, 'model not found in request body');
    } else if (fd && this.method === 'POST') {
      return this.immediate(400, 'model not found in request body');
    }
    const pod = this.epp.pick();
    if (!pod) return this.immediate(503, `no ready endpoints in InferencePool ${this.epp.opts.pool} (${this.epp.opts.cluster})`);
    this.send(destinationHeadersResponse('request_headers', pod.endpoint));
    if (fd && body.length > 0) {
      for (let off = 0; off < body.length; off += ECHO_CHUNK_BYTES) {
        const piece = body.subarray(off, off + ECHO_CHUNK_BYTES);
        this.send(streamedBody('request_body', piece, bodyEnded && off + piece.length >= body.length));
      }
    } else if (fd && bodyEnded) {
      this.send(streamedBody('request_body', Buffer.alloc(0), true));
    }
  }

  private immediate(status: number, message: string): void {
    this.send(immediateResponse({ status, body: { error: { message, type: 'epp_error' } }, details: `demo_epp_${status}` }));
    this.finish();
  }

  private send(msg: Buffer): void {
    if (!this.done) this.call.write(msg);
  }

  /** Ends the stream with OK, like an EPP returning from Process. */
  private finish(): void {
    if (this.done) return;
    this.call.end();
    this.close();
  }

  private fail(details: string): void {
    if (this.done) return;
    this.call.emit('error', Object.assign(new Error(details), { code: GrpcStatus.INVALID_ARGUMENT, details }));
    this.close();
  }

  private close(): void {
    if (this.done) return;
    this.done = true;
    this.onClosed();
  }
}
