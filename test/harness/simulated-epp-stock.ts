// The "stock llm-d EPP" behaviour of the simulated EPP: no Health service on the ext_proc
// port (grpc-js answers UNIMPLEMENTED for an unregistered service), Health on a separate
// port with the names a stock EPP's health server knows and its leader-election behaviour,
// and pool metrics under the current llm_d_epp_* names on a /metrics that demands a token.
import { POOL_METRIC_FAMILIES, poolMetricsText, startFakeMetricsServer, type FakeMetricsServer, type PoolMetricValues } from './fake-metrics-server.js';
import type { ServingStatus } from './protos.js';

export const EXT_PROC_SERVICE = 'envoy.service.ext_proc.v3.ExternalProcessor';

/** The services a stock EPP's health port answers; any other name gets NOT_FOUND. */
export const STOCK_HEALTH_SERVICES = ['liveness', 'readiness', '', EXT_PROC_SERVICE] as const;

/** Names that are SERVING only on the elected leader (liveness is SERVING on every replica). */
const LEADER_ONLY = ['readiness', '', EXT_PROC_SERVICE] as const;

export interface StockEppOptions {
  /** Pool name: the `name` label of every metric series (default "pool"). */
  pool?: string;
  /** This replica holds the leader lease (default true). */
  leader?: boolean;
  /** Bearer tokens /metrics accepts: none gets 401, any other 403. Empty or absent: /metrics is open. */
  metricsTokens?: readonly string[];
  /** Also export the deprecated inference_pool_* names beside llm_d_epp_* (default false). */
  deprecatedMetrics?: boolean;
  /** Pool metric values (default: ready endpoints = the EPP's endpoint count, everything else 0). */
  metrics?: PoolMetricValues;
}

export function stockOptions(stock: StockEppOptions | boolean | undefined): StockEppOptions | undefined {
  if (stock === undefined || stock === false) return undefined;
  return stock === true ? {} : stock;
}

/** Health statuses of a stock EPP's health port for a leader or a follower. */
export function stockHealth(leader: boolean): Map<string, ServingStatus> {
  const health = new Map<string, ServingStatus>(STOCK_HEALTH_SERVICES.map((s) => [s, 'SERVING']));
  for (const s of LEADER_ONLY) health.set(s, leader ? 'SERVING' : 'NOT_SERVING');
  return health;
}

export function leaderHealthUpdates(leader: boolean): [string, ServingStatus][] {
  return LEADER_ONLY.map((s) => [s, leader ? 'SERVING' : 'NOT_SERVING']);
}

/** The stock EPP's metrics endpoint: survives kill/restart on the same port. */
export class StockMetrics {
  private server: FakeMetricsServer | undefined;
  private port = 0;
  private values: PoolMetricValues;

  constructor(
    private readonly o: StockEppOptions,
    private readonly endpointCount: () => number,
  ) {
    this.values = { ...o.metrics };
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get metricsPort(): number {
    return this.port;
  }

  /** Requests refused for a missing (401) or unknown (403) token since the last (re)start. */
  get unauthorized(): number {
    return this.server?.unauthorized ?? 0;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const tokens = this.o.metricsTokens?.length ? { tokens: this.o.metricsTokens } : {};
    this.server = await startFakeMetricsServer({ port: this.port, payload: this.text(), ...tokens });
    this.port = this.server.port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    await s?.stop();
  }

  set(values: PoolMetricValues): void {
    this.values = { ...values };
    this.refresh();
  }

  /** Re-renders the payload (after the endpoints changed). */
  refresh(): void {
    this.server?.setPayload(this.text());
  }

  private text(): string {
    const v = { readyPods: this.endpointCount(), queueSize: 0, kvCache: 0, runningRequests: 0, ...this.values };
    const pool = this.o.pool ?? 'pool';
    const families: (keyof typeof POOL_METRIC_FAMILIES)[] = this.o.deprecatedMetrics ? ['epp', 'gie'] : ['epp'];
    return families.map((f) => poolMetricsText(pool, v, f)).join('');
  }
}
