/**
 * The router config file schema (YAML). Unknown keys are errors: a typo in the
 * router's own config must never be silently ignored.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';
import { PICK_POLICIES } from '../picker/policy.js';

const MIB = 1024 * 1024;

const objectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lower-case RFC 1123 name');

/** "host:port", "[v6]:port", or a unix socket "unix:/path" / "unix:///path". */
export const listenAddress = z
  .string()
  .min(1)
  .refine(
    (s) =>
      s.startsWith('unix:')
        ? s.replace(/^unix:(\/\/)?/, '') !== ''
        : /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(s) && Number(s.slice(s.lastIndexOf(':') + 1)) <= 65535,
    'must be host:port (port 0-65535), [ipv6]:port or unix:/path/to.sock',
  );

/** "host:port" or a bare host (the port then comes from the referencing object). */
export const targetAddress = z
  .string()
  .min(1)
  .refine((s) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]/]+)(?::(\d{1,5}))?$/.exec(s);
    return m !== null && (m[2] === undefined || (Number(m[2]) >= 1 && Number(m[2]) <= 65535));
  }, 'must be host, host:port or [ipv6]:port (port 1-65535)');

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

/** Default pool metric names, newest GIE names first, then the llm-d router names. */
export const DEFAULT_POOL_METRIC_NAMES = {
  readyPods: ['inference_pool_ready_pods', 'llm_d_router_epp_ready_endpoints'],
  queueSize: ['inference_pool_average_queue_size', 'llm_d_router_epp_average_queue_size'],
  kvCache: ['inference_pool_average_kv_cache_utilization', 'llm_d_router_epp_average_kv_cache_utilization'],
  runningRequests: ['inference_pool_average_running_requests', 'llm_d_router_epp_average_running_requests'],
} as const;

const metricNameList = (defaults: readonly string[]) =>
  z
    .array(z.string().regex(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, 'must be a Prometheus metric name'))
    .min(1)
    .default([...defaults]);

/** gRPC health checks of each EPP (signals). */
export const eppHealthSchema = z.strictObject({
  /** Port of the gRPC health service; default: the EPP's ext_proc port (GIE also serves health on 9003). */
  port: z.number().int().min(1).max(65535).optional(),
  /** grpc.health.v1 service name to check (GIE's 9003 health server answers "inference-extension"). */
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

export const manifestSourceSchema = z.strictObject({
  /** Files or directories of multi-document Kubernetes YAML, relative to the config file. */
  paths: z.array(z.string().min(1)).min(1),
});

/** Gateway API ControllerName: DOMAIN "/" PATH (the pattern of the InferencePoolImport CRD). */
export const CONTROLLER_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;

/** A member cluster read from its Kubernetes API. */
export const kubernetesSourceSchema = z
  .strictObject({
    /** Use the pod's service account (the local cluster, when the router runs in it). */
    inCluster: z.boolean().optional(),
    /** kubeconfig file (e.g. mounted from a Secret), relative to the config file. Neither this nor inCluster: KUBECONFIG / ~/.kube/config / in-cluster. */
    kubeconfig: z.string().min(1).optional(),
    /** Context in the kubeconfig; default its current-context. */
    context: z.string().min(1).optional(),
    /** Namespaces to watch; empty = all namespaces. */
    namespaces: z.array(objectName).default([]),
    /** Client-side rate limit (token bucket) for this member's list and watch requests; absent = unlimited. */
    qps: z.number().positive().optional(),
    burst: z.number().int().min(1).optional(),
  })
  .superRefine((k, ctx) => {
    if (k.inCluster && k.kubeconfig !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['kubeconfig'], message: 'inCluster and kubeconfig are mutually exclusive' });
    }
    if (k.inCluster && k.context !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['context'], message: 'context needs a kubeconfig (not inCluster)' });
    }
  });

export const controllerSchema = z.strictObject({
  /** Maintain our status.controllers[] entry on referenced InferencePoolImports. Default: on when the local cluster uses a kubernetes source. */
  enabled: z.boolean().optional(),
  /** Our controller name in InferencePoolImport status (domain/path). */
  name: z
    .string()
    .min(1)
    .max(253)
    .regex(CONTROLLER_NAME_PATTERN, 'must be a domain/path controller name, e.g. example.com/import-controller')
    .default('mcip-router.dev/import-controller'),
  /** How often every import is re-checked even without changes (writes happen only on difference). */
  resyncMs: z.number().int().min(1000).default(60_000),
  leaderElection: z
    .strictObject({
      /** Off: every replica writes status (only sensible with one replica). */
      enabled: z.boolean().default(true),
      leaseName: objectName.default('mcip-router-import-controller'),
      /** Default: the pod's namespace (service account), else "default". */
      leaseNamespace: objectName.optional(),
      leaseDurationMs: z.number().int().min(1000).default(15_000),
      renewDeadlineMs: z.number().int().min(100).default(10_000),
      retryPeriodMs: z.number().int().min(10).default(2_000),
      /** Default: hostname + "_" + pid. */
      identity: z.string().min(1).max(128).optional(),
    })
    .prefault({})
    .refine((l) => l.renewDeadlineMs < l.leaseDurationMs, { message: 'renewDeadlineMs must be less than leaseDurationMs', path: ['renewDeadlineMs'] })
    .refine((l) => l.retryPeriodMs < l.renewDeadlineMs, { message: 'retryPeriodMs must be less than renewDeadlineMs', path: ['retryPeriodMs'] }),
});

export const addressOverrideSchema = z.strictObject({
  namespace: objectName,
  name: objectName,
  address: targetAddress,
});

/** "ip:port" or "[ipv6]:port": what Envoy's ORIGINAL_DST cluster accepts in the destination header. */
export const ipPort = z
  .string()
  .refine((s) => {
    const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9a-fA-F:.]+)\]):(\d{1,5})$/.exec(s);
    if (m === null || Number(m[3]) < 1 || Number(m[3]) > 65535) return false;
    return m[1] !== undefined ? isIPv4(m[1]) : isIPv6(m[2]!);
  }, 'must be ip:port or [ipv6]:port (Envoy ORIGINAL_DST takes IP addresses only)');

/** FailOpen endpoints listed statically for a pool of this cluster. */
export const failOpenSchema = z.strictObject({
  /** Used when every EPP attempt failed for a FailOpen pool and no endpoint its EPP returned recently is known. */
  endpoints: z
    .array(z.strictObject({ namespace: objectName, pool: objectName, endpoints: z.array(ipPort).min(1) }))
    .default([]),
});

export const clusterSchema = z.strictObject({
  name: objectName,
  manifests: manifestSourceSchema.optional(),
  /** Read this cluster from its Kubernetes API (exactly one of manifests | kubernetes). */
  kubernetes: kubernetesSourceSchema.optional(),
  /** Transport settings for this cluster's EPPs. */
  epp: eppSchema.prefault({}),
  /** Parent mode: how to probe this cluster's parent Gateways. */
  parentProbe: parentProbeSchema.prefault({}),
  /** FailOpen pools of this cluster: static endpoints to route to when their EPPs fail. */
  failOpen: failOpenSchema.prefault({}),
  addressOverrides: z
    .strictObject({
      /** EPP Service address overrides (used instead of the Service's own addresses). */
      services: z.array(addressOverrideSchema).default([]),
      /** Parent Gateway address overrides (Parent mode). Must resolve to ip:port. */
      gateways: z.array(addressOverrideSchema).default([]),
    })
    .prefault({}),
});

export const gatewayRefSchema = z.strictObject({
  namespace: objectName,
  name: objectName,
});

export const routerConfigSchema = z
  .strictObject({
    /** This cluster's name; must be one of clusters[].name. */
    clusterName: objectName,
    mode: z.enum(['Endpoint', 'Parent']).default('Endpoint'),
    listen: z
      .strictObject({
        extProc: listenAddress.default('127.0.0.1:9002'),
        admin: listenAddress.default('127.0.0.1:9901'),
      })
      .prefault({}),
    /** Gateways in the local cluster whose HTTPRoutes this router serves. */
    gateways: z.array(gatewayRefSchema).min(1),
    /** ClusterSet members, the local cluster included. */
    clusters: z.array(clusterSchema).min(1),
    extProc: z
      .strictObject({
        /** gRPC max send/receive message size, Envoy side and EPP side. A 4 MiB BUFFERED body needs more than 4 MiB. */
        maxMessageBytes: z.number().int().min(64 * 1024).default(16 * MIB),
        /** When an EPP returns a list of endpoints: put only the primary in the header (Envoy ORIGINAL_DST needs one ip:port) or the whole list. */
        destinationHeader: z.enum(['primary', 'list']).default('primary'),
        /** Time allowed to connect to an EPP before the attempt counts as failed. */
        eppConnectTimeoutMs: z.number().int().min(1).default(2000),
        /**
         * Failover: how long an EPP may take to answer (request headers or an immediate response)
         * before the next candidate is tried. In FULL_DUPLEX_STREAMED EPPs hold that answer until
         * the request body is complete, so the time counts from the end of the request body; in
         * the other modes from the first message. 0 disables the timeout.
         */
        attemptTimeoutMs: z.number().int().min(0).default(10_000),
        /** Failover: request messages kept to replay to the next candidate. Past this, a request gets no failover. 0 disables failover. */
        replayBufferBytes: z.number().int().min(0).default(8 * MIB),
        /** Failover: candidates tried per request, the first included. */
        maxAttempts: z.number().int().min(1).max(16).default(3),
        /** FailOpen: how long an endpoint an EPP returned stays a fail-open destination for its pool. */
        failOpenCacheTtlMs: z.number().int().min(0).default(300_000),
        /** On SIGTERM, how long in-flight streams may take to finish. */
        drainTimeoutMs: z.number().int().min(0).default(15000),
      })
      .prefault({}),
    manifests: z
      .strictObject({
        /** Debounce for file change events before re-reading. */
        debounceMs: z.number().int().min(0).default(200),
        /** Fallback poll interval (catches changes fs.watch misses, e.g. ConfigMap symlink swaps). */
        pollIntervalMs: z.number().int().min(100).default(1000),
      })
      .prefault({}),
    /** Kubernetes sources (clusters[].kubernetes). */
    kubernetes: z
      .strictObject({
        /** Trailing debounce: a burst of watch events becomes one new cluster state. */
        coalesceMs: z.number().int().min(0).max(1000).default(100),
        /** Upper bound on how long a continuous burst can hold back a new state (changes reach the data path within 1 s). */
        coalesceMaxMs: z.number().int().min(0).max(1000).default(500),
        /** start() waits this long for the first list of every resource; a cluster not synced by then counts as unreachable. */
        initialSyncTimeoutMs: z.number().int().min(100).default(10_000),
        /** Reconnect backoff (exponential with jitter) after list/watch failures, missing CRDs and denied access. */
        backoffInitialMs: z.number().int().min(1).default(500),
        backoffMaxMs: z.number().int().min(1).default(30_000),
      })
      .prefault({}),
    /** InferencePoolImport import-controller duties (status.controllers[]), Kubernetes mode only. */
    controller: controllerSchema.prefault({}),
    /** Passive outlier detection, fed by the data path (EPP connect/stream errors, 503/429 answers). */
    outlier: z
      .strictObject({
        consecutiveFailures: z.number().int().min(1).default(5),
        baseEjectionMs: z.number().int().min(1).default(10_000),
        maxEjectionMs: z.number().int().min(1).default(300_000),
      })
      .prefault({}),
    /** Pool selection. A route overrides the policy with the HTTPRoute annotation mcip-router.dev/pick-policy. */
    picker: z
      .strictObject({
        defaultPolicy: z.enum(PICK_POLICIES).default('weighted'),
        /** Over either threshold a pool is saturated: it gets new requests only when no unsaturated pool is left. */
        saturation: z
          .strictObject({
            /** Average queue size per ready pod (GIE's saturation default: 5). */
            queueSize: z.number().min(0).default(5),
            /** Average KV-cache utilization, 0-1. */
            kvCache: z.number().min(0).max(1).default(0.9),
          })
          .prefault({}),
      })
      .prefault({}),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
  })
  // Cross-field checks run even when other fields are invalid (`when`), so one run reports every
  // problem; the value may then be partly parsed, hence the defensive reads.
  .superRefine(
    (cfg, ctx) => {
      const clusters: unknown[] = Array.isArray(cfg.clusters) ? cfg.clusters : [];
      const names = new Set<string>();
      clusters.forEach((raw, i) => {
        const c = (raw ?? {}) as Partial<ClusterConfig>;
        if (typeof c.name === 'string') {
          if (names.has(c.name)) {
            ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: `duplicate cluster name "${c.name}"` });
          }
          names.add(c.name);
        }
        if ((c.manifests === undefined) === (c.kubernetes === undefined)) {
          ctx.addIssue({ code: 'custom', path: ['clusters', i], message: 'a cluster needs exactly one object source: manifests or kubernetes' });
        }
      });
      const local = clusters.find((c) => (c as Partial<ClusterConfig> | undefined)?.name === cfg.clusterName) as
        | Partial<ClusterConfig>
        | undefined;
      if (cfg.controller?.enabled === true && local && local.kubernetes === undefined) {
        ctx.addIssue({ code: 'custom', path: ['controller', 'enabled'], message: 'the import controller needs the local cluster to use a kubernetes source' });
      }
      if (typeof cfg.clusterName === 'string' && names.size > 0 && !names.has(cfg.clusterName)) {
        ctx.addIssue({
          code: 'custom',
          path: ['clusterName'],
          message: `"${cfg.clusterName}" is not one of clusters[].name (${[...names].join(', ')})`,
        });
      }
    },
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );

export type RouterConfig = z.output<typeof routerConfigSchema>;
export type ClusterConfig = RouterConfig['clusters'][number];
export type KubernetesSourceConfig = NonNullable<ClusterConfig['kubernetes']>;
export type ControllerConfig = RouterConfig['controller'];

/** controller.enabled, defaulted: on when the local cluster is read from Kubernetes. */
export function controllerEnabled(cfg: RouterConfig): boolean {
  const local = cfg.clusters.find((c) => c.name === cfg.clusterName);
  return cfg.controller.enabled ?? local?.kubernetes !== undefined;
}
export type TlsConfig = z.output<typeof tlsSchema>;
export type RoutingMode = RouterConfig['mode'];
export type EppHealthConfig = z.output<typeof eppHealthSchema>;
export type EppMetricsConfig = z.output<typeof eppMetricsSchema>;
export type ParentProbeConfig = z.output<typeof parentProbeSchema>;
export type OutlierConfig = RouterConfig['outlier'];
export type PickerConfig = RouterConfig['picker'];
export type FailOpenConfig = z.output<typeof failOpenSchema>;
