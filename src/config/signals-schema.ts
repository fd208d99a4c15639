/** Config of the EPP transport and the live pool signals (health, metrics, parent probes). */
import { z } from 'zod';
import { objectName } from './addresses.js';

const MIB = 1024 * 1024;

/** Client certificate files (mTLS): both or neither. */
const clientCertFields = {
  /** Client certificate (PEM) presented to the server (mTLS); needs keyFile. */
  certFile: z.string().min(1).optional(),
  /** Private key (PEM) of certFile. */
  keyFile: z.string().min(1).optional(),
};

function certAndKeyTogether(t: { certFile?: string | undefined; keyFile?: string | undefined }, ctx: z.RefinementCtx): void {
  if ((t.certFile === undefined) !== (t.keyFile === undefined)) {
    const missing = t.certFile === undefined ? 'certFile' : 'keyFile';
    ctx.addIssue({ code: 'custom', path: [missing], message: 'certFile and keyFile must be set together (client certificate)' });
  }
}

/**
 * TLS to a member's EPPs. The server certificate is verified against the system CAs or
 * caFile, for serverName; CA, certificate and key files are re-read when they change.
 */
export const tlsSchema = z
  .strictObject({
    /** Use TLS to the EPP. GIE / llm-d EPPs serve TLS (a self-signed certificate unless given one). */
    enabled: z.boolean().default(true),
    /**
     * Accept any server certificate (encrypted, not authenticated), e.g. the one a stock EPP
     * generates at start, which no CA signs. Warned at start, by --check and on /debug/signals.
     * Ignored when caFile is set.
     */
    insecureSkipVerify: z.boolean().default(false),
    /** CA bundle (PEM) that signs the EPPs' certificates; default: the system CAs. */
    caFile: z.string().min(1).optional(),
    ...clientCertFields,
    /** SNI and the name verified; default: the address's host name, or <service>.<namespace>.svc when the address is an IP. */
    serverName: z.string().min(1).optional(),
  })
  .superRefine(certAndKeyTogether);

/** TLS of HTTPS scrapes: verified like the EPP connection, optionally with a client certificate. */
export const scrapeTlsSchema = z
  .strictObject({
    /** CA bundle (PEM) that signs the metrics endpoints' certificates; default: the system CAs. */
    caFile: z.string().min(1).optional(),
    /** Accept any server certificate. Logged as a warning at start. Ignored when caFile is set. */
    insecureSkipVerify: z.boolean().default(false),
    ...clientCertFields,
    /** SNI and the name verified; default: the host of the scraped address. */
    serverName: z.string().min(1).optional(),
  })
  .superRefine(certAndKeyTogether);

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
  /**
   * File holding the bearer token sent with each scrape; re-read when it changes. Default for a
   * member read from Kubernetes: that member's own credentials (its kubeconfig user's token, or
   * the service-account token in-cluster).
   */
  bearerTokenFile: z.string().min(1).optional(),
  /** Send the bearer token over plain http too (stock EPPs serve token-protected /metrics without TLS). Never by default. */
  allowTokenOverPlainHttp: z.boolean().default(false),
  tls: scrapeTlsSchema.prefault({}),
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
