/** Config of the EPP transport and the live pool signals (health, metrics, parent probes). */
import { z } from 'zod';
import { objectName } from './addresses.js';

const MIB = 1024 * 1024;

export const tlsSchema = z.strictObject({
  /** Use TLS to the EPP. GIE EPPs serve TLS with a self-signed certificate by default. */
  enabled: z.boolean().default(true),
  /** Skip server certificate verification (EPPs self-sign by default). Ignored when caFile is set. */
  insecureSkipVerify: z.boolean().default(true),
  caFile: z.string().min(1).optional(),
  certFile: z.string().min(1).optional(),
  keyFile: z.string().min(1).optional(),
  /** SNI / name to verify; defaults to the host of the address. */
  serverName: z.string().min(1).optional(),
});

/**
 * Default pool metric names, tried in order: the current llm-d EPP names, then
 * the deprecated names EPPs still emit beside them, then the names of the
 * llm-d router's pre-release EPPs.
 */
export const DEFAULT_POOL_METRIC_NAMES = {
  readyPods: ['llm_d_epp_ready_endpoints', 'inference_pool_ready_pods', 'llm_d_router_epp_ready_endpoints'],
  queueSize: ['llm_d_epp_average_queue_size', 'inference_pool_average_queue_size', 'llm_d_router_epp_average_queue_size'],
  kvCache: ['llm_d_epp_average_kv_cache_utilization', 'inference_pool_average_kv_cache_utilization', 'llm_d_router_epp_average_kv_cache_utilization'],
  runningRequests: ['llm_d_epp_average_running_requests', 'inference_pool_average_running_requests', 'llm_d_router_epp_average_running_requests'],
} as const;

const metricNameList = (defaults: readonly string[]) =>
  z
    .array(z.string().regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, 'must be a Prometheus metric name'))
    .min(1)
    .default([...defaults]);

/** gRPC health checks of each EPP (signals). */
export const eppHealthSchema = z.strictObject({
  /**
   * Port of the gRPC health service; default: the EPP's ext_proc port (a stock EPP serves Health there only with
   * --health-checking, and otherwise answers UNIMPLEMENTED: no health signal). Its health port is 9003.
   */
  port: z.number().int().min(1).max(65535).optional(),
  /** grpc.health.v1 service name to check; on an EPP's 9003 use "readiness" (SERVING only on the elected leader). */
  service: z.string().default('envoy.service.ext_proc.v3.ExternalProcessor'),
  /** 'inherit' uses the EPP's tls settings (as the ext_proc client); 'disabled' probes in plaintext (e.g. a separate plaintext health port). */
  tls: z.enum(['inherit', 'disabled']).default('inherit'),
  intervalMs: z.number().int().min(10).default(2000),
  timeoutMs: z.number().int().min(1).default(1000),
  healthyThreshold: z.number().int().min(1).default(2),
  unhealthyThreshold: z.number().int().min(1).default(3),
});

/** Prometheus scrape of each EPP's pool metrics (signals). */
export const eppMetricsSchema = z.strictObject({
  enabled: z.boolean().default(true),
  port: z.number().int().min(1).max(65535).default(9090),
  path: z.string().startsWith('/').default('/metrics'),
  scheme: z.enum(['http', 'https']).default('http'),
  /** File holding a bearer token (e.g. a projected service-account token); re-read when it changes. */
  bearerTokenFile: z.string().min(1).optional(),
  tls: z
    .strictObject({
      caFile: z.string().min(1).optional(),
      insecureSkipVerify: z.boolean().default(false),
    })
    .prefault({}),
  intervalMs: z.number().int().min(10).default(5000),
  timeoutMs: z.number().int().min(1).default(2000),
  /** A payload larger than this is a failed scrape. */
  maxBytes: z.number().int().min(1024).default(4 * MIB),
  /** Metric names per signal, tried in order; the first one with a series for the pool wins. */
  names: z
    .strictObject({
      readyPods: metricNameList(DEFAULT_POOL_METRIC_NAMES.readyPods),
      queueSize: metricNameList(DEFAULT_POOL_METRIC_NAMES.queueSize),
      kvCache: metricNameList(DEFAULT_POOL_METRIC_NAMES.kvCache),
      runningRequests: metricNameList(DEFAULT_POOL_METRIC_NAMES.runningRequests),
    })
    .prefault({}),
  /** Per EPP Service (namespace/name) metrics port and path overrides. */
  services: z
    .array(
      z.strictObject({
        namespace: objectName,
        name: objectName,
        port: z.number().int().min(1).max(65535).optional(),
        path: z.string().startsWith('/').optional(),
      }),
    )
    .default([]),
});

export const eppSchema = z.strictObject({
  tls: tlsSchema.prefault({}),
  health: eppHealthSchema.prefault({}),
  metrics: eppMetricsSchema.prefault({}),
});

/** Parent mode: probe of a remote parent Gateway, used when the remote EPP is not reachable. */
export const parentProbeSchema = z
  .strictObject({
    mode: z.enum(['tcp', 'http']).default('tcp'),
    /** HTTP health path (mode http), e.g. "/healthz". */
    path: z.string().startsWith('/').optional(),
    /** Scheme for mode http; https skips certificate verification (the probe carries no data). */
    scheme: z.enum(['http', 'https']).default('http'),
    intervalMs: z.number().int().min(10).default(2000),
    timeoutMs: z.number().int().min(1).default(1000),
    healthyThreshold: z.number().int().min(1).default(2),
    unhealthyThreshold: z.number().int().min(1).default(3),
  })
  .refine((p) => p.mode !== 'http' || p.path !== undefined, { message: 'mode http needs a path', path: ['path'] });
