/**
 * SIMULATION: the Endpoint Picker (EPP) of one InferencePool, answering like a
 * Gateway API Inference Extension EPP:
 *
 * - ext_proc (envoy.service.ext_proc.v3.ExternalProcessor/Process), one
 *   EppStream per request (sim-epp-stream.ts), picking the least-loaded ready
 *   model server of its pool;
 * - grpc.health.v1.Health on the same port.
 * - Prometheus pool metrics on their own HTTP port (label name=<pool>), from
 *   the pods' live load, under llm_d_epp_* (and the deprecated inference_pool_*).
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
import { EXT_PROC_SERVICE } from '../src/protocol/constants.js';
import { extProcRawService, healthService, HealthStatus, type HealthCheckRequest, type HealthCheckResponse } from '../src/protocol/services.js';
import { HOST, listen } from './layout.js';
import { EppStream } from './sim-epp-stream.js';
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
        cb(null, { status: this.health() });
      },
      Watch: (call: ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
        call.write({ status: this.health() });
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
      await listen(metrics, this.opts.metricsPort);
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

  /** SERVING while a pod of the pool is ready. */
  private health(): HealthStatus {
    return this.readyPods().length > 0 ? HealthStatus.SERVING : HealthStatus.NOT_SERVING;
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

  /**
   * The pool gauges (label name = pool), averaged over ready pods: under the
   * current llm-d EPP names, and the deprecated GIE names EPPs still emit beside them.
   */
  metricsText(): string {
    const pods = this.readyPods();
    const avg = (f: (p: SimulatedModelServer) => number): number =>
      pods.length === 0 ? 0 : pods.reduce((sum, p) => sum + f(p), 0) / pods.length;
    const name = `name="${this.opts.pool}"`;
    const gauges: [current: string, deprecated: string, help: string, value: number][] = [
      ['llm_d_epp_ready_endpoints', 'inference_pool_ready_pods', 'The number of ready endpoints in the pool.', pods.length],
      ['llm_d_epp_average_queue_size', 'inference_pool_average_queue_size', 'The average number of requests pending in the model server queue.', round(avg((p) => p.waitingRequests()))],
      ['llm_d_epp_average_kv_cache_utilization', 'inference_pool_average_kv_cache_utilization', 'The average kv cache utilization of the pool.', round(avg((p) => p.kvCacheUtilization()))],
      ['llm_d_epp_average_running_requests', 'inference_pool_average_running_requests', 'The average number of requests running in the model server.', round(avg((p) => p.runningRequests()))],
    ];
    const lines: string[] = [];
    for (const [current, deprecated, help, value] of gauges) {
      for (const metric of [current, deprecated]) lines.push(`# HELP ${metric} ${help}`, `# TYPE ${metric} gauge`, `${metric}{${name}} ${value}`);
    }
    lines.push(
      '# HELP inference_pool_per_pod_queue_size The total number of requests pending in the model server queue for each underlying pod.',
      '# TYPE inference_pool_per_pod_queue_size gauge',
      ...pods.map((p) => `inference_pool_per_pod_queue_size{${name},model_server_pod="${p.pod}"} ${p.waitingRequests()}`),
    );
    return `${lines.join('\n')}\n`;
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
