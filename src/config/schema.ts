/**
 * The router config file schema (YAML). Unknown keys are errors: a typo in the
 * router's own config must never be silently ignored. The parts live in
 * addresses.ts, signals-schema.ts and kubernetes-schema.ts; this module
 * assembles them and is what the rest of the router imports.
 */
import { z } from 'zod';
import { PICK_POLICIES } from './pick-policy.js';
import { isLoopbackListen, listenAddress, objectName } from './addresses.js';
import { exportAgentSchema } from './export-agent-schema.js';
import { exportControllerSchema } from './export-schema.js';
import { configClusterSchema, type failOpenSchema } from './cluster-schema.js';
import { fleetSchema } from './fleet-schema.js';
import { localEntry } from './local-cluster.js';
import { controllerSchema } from './kubernetes-schema.js';
import { streamBoundsShape } from './guard-schema.js';
import { adminServerSchema, manifestMaxFileBytes, routesSchema } from './limits-schema.js';
import { tracingSchema } from './tracing-schema.js';
import { endpointPickerSchema, pickerPortCollision } from './endpoint-picker-schema.js';
import { parentProbeSchema, type eppHealthSchema, type eppMetricsSchema, type scrapeTlsSchema, type tlsSchema } from './signals-schema.js';

export * from './addresses.js';
export * from './cluster-schema.js';
export * from './export-agent-schema.js';
export * from './export-schema.js';
export * from './fleet-schema.js';
export * from './guard-schema.js';
export * from './kubernetes-schema.js';
export * from './limits-schema.js';
export * from './signals-schema.js';
export * from './tracing-schema.js';
export * from './endpoint-picker-schema.js';
export * from './relay-schema.js';

const MIB = 1024 * 1024;

/** The data path: gRPC limits, failover, FailOpen, drain. */
export const extProcSchema = z
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
    /**
     * After an EPP's first answer reached Envoy: how long it may make no progress (send
     * nothing) while Envoy waits on it (body bytes to echo in FULL_DUPLEX_STREAMED, or a
     * message to answer) before it counts as failed ('timeout'); the router then answers
     * everything pending itself (the rest of the echo from its own copy) and the request
     * goes on without the EPP. Time the router spends not reading the EPP because Envoy is
     * slow does not count. 0 disables.
     */
    eppStallTimeoutMs: z.number().int().min(0).default(30_000),
    /**
     * A finished exchange whose EPP call both sides half-closed is left to the EPP to end
     * (no RST_STREAM, which would trip Node-based EPPs' rapid-reset limit); past this it is
     * cancelled.
     */
    releaseGraceMs: z.number().int().min(1).default(5_000),
    /** Failover: request messages kept to replay to the next candidate. Past this, a request gets no failover. 0 disables failover. */
    replayBufferBytes: z.number().int().min(0).default(8 * MIB),
    /** Failover: candidates tried per request, the first included. */
    maxAttempts: z.number().int().min(1).max(16).default(3),
    /** FailOpen: how long an endpoint an EPP returned stays a fail-open destination for its pool. */
    failOpenCacheTtlMs: z.number().int().min(0).default(300_000),
    /** On SIGTERM, how long in-flight streams may take to finish. */
    drainTimeoutMs: z.number().int().min(0).default(15000),
    /**
     * What carries the ext_proc data path (the Envoy-facing server and the calls to EPPs):
     * gRPC framing on Node's own HTTP/2 (less CPU per message), or grpc-js. Health probing
     * of EPPs always uses grpc-js.
     */
    transport: z.enum(['grpc-js', 'http2']).default('http2'),
    ...streamBoundsShape,
  });

/** Pool selection. A route overrides the policy with the HTTPRoute annotation mcip-router.dev/pick-policy. */
export const pickerSchema = z
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
  });

export const gatewayRefSchema = z.strictObject({
  namespace: objectName,
  name: objectName,
});

export const routerConfigSchema = z
  .strictObject({
    /**
     * This cluster's name in the ClusterSet; when set, one of clusters[].name. Optional when
     * something else names the cluster: its About API (the local cluster read from Kubernetes)
     * or its ClusterProfile (fleet.clusterProfiles.localProfile). Every source present must agree.
     */
    clusterName: objectName.optional(),
    mode: z.enum(['Endpoint', 'Parent']).default('Endpoint'),
    listen: z
      .strictObject({
        extProc: listenAddress.default('127.0.0.1:9002'),
        /** /healthz, /readyz and /metrics; also /debug/* when this address is loopback (or admin.exposeDebug). */
        admin: listenAddress.default('127.0.0.1:9901'),
        /** A separate listener for /debug/* only; loopback unless admin.exposeDebug. */
        debug: listenAddress.optional(),
        /**
         * The relay's token verifier: the ext_proc server the relay listener of this pod's Envoy
         * (envoy/relay.yaml) calls; needs endpointPicker.relay. Loopback: only that Envoy calls it.
         */
        relay: listenAddress.optional(),
      })
      .prefault({}),
    /** Admin HTTP server: connection bounds (limits-schema.ts) and where /debug/* may be served. */
    admin: adminServerSchema
      .extend({
        /** Serve the unauthenticated /debug/* pages on a non-loopback address (admin or debug listener). */
        exposeDebug: z.boolean().default(false),
      })
      .prefault({}),
    /** CA, certificate, key and token files of EPP TLS and scrapes. */
    credentials: z
      .strictObject({
        /** How often the files are checked for changes; new EPP streams and scrapes use the changed files. */
        pollIntervalMs: z.number().int().min(10).default(1000),
      })
      .prefault({}),
    /** Gateways in the local cluster whose HTTPRoutes this router serves (may be empty when only endpointPicker.ports serve). */
    gateways: z.array(gatewayRefSchema).default([]),
    /**
     * What the Envoy in front of the router serves: Gateway listeners asking for another protocol
     * or port are reported (diagnostics, listener status), never pretended.
     */
    gatewayListeners: z
      .strictObject({
        /** HTTPS only when your Envoy bootstrap terminates TLS itself (the bundled ones serve plain HTTP). */
        protocols: z.array(z.enum(['HTTP', 'HTTPS'])).min(1).default(['HTTP']),
        /** Ports clients reach the Envoy on (the Service's ports); empty: listener ports are not checked. */
        ports: z.array(z.number().int().min(1).max(65535)).default([]),
      })
      .prefault({}),
    /** ClusterSet members, the local cluster included. */
    clusters: z.array(configClusterSchema).min(1),
    /** More members, from a fleet manager (ClusterProfiles on a hub). */
    fleet: fleetSchema.prefault({}),
    extProc: extProcSchema.prefault({}),
    manifests: z
      .strictObject({
        /** Debounce for file change events before re-reading. */
        debounceMs: z.number().int().min(0).default(200),
        /** Fallback poll interval (catches changes fs.watch misses, e.g. ConfigMap symlink swaps). */
        pollIntervalMs: z.number().int().min(100).default(1000),
        /** Largest manifest file read; a larger one is a rejected change naming the file (the last good objects keep serving). */
        maxFileBytes: manifestMaxFileBytes,
      })
      .prefault({}),
    /** HTTPRoute matching: bounds on RegularExpression matches. */
    routes: routesSchema.prefault({}),
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
    /** Export-controller duties (hub topology): InferencePoolImports in every member for exported pools. */
    exportController: exportControllerSchema.prefault({}),
    /** The member agent of the push/pull topology (`mcip-router --export-agent`): records on a hub instead of a hub holding member credentials. */
    exportAgent: exportAgentSchema.optional(),
    /** Passive outlier detection, fed by the data path (EPP connect/stream errors, 503/429 answers). */
    outlier: z
      .strictObject({
        consecutiveFailures: z.number().int().min(1).default(5),
        baseEjectionMs: z.number().int().min(1).default(10_000),
        maxEjectionMs: z.number().int().min(1).default(300_000),
      })
      .prefault({}),
    picker: pickerSchema.prefault({}),
    /** The Endpoint Picker role: the gateway a team runs calls the router for its multi-cluster InferencePools (endpoint-picker-schema.ts). */
    endpointPicker: endpointPickerSchema.prefault({}),
    /** OpenTelemetry traces of the data path (OTLP); off unless an endpoint is configured here or in OTEL_* variables. */
    tracing: tracingSchema.prefault({}),
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
      const at = localEntry(cfg);
      if (!at.ok) ctx.addIssue({ code: 'custom', path: [...at.path], message: at.message });
      clusters.forEach((raw, i) => {
        const c = (raw ?? {}) as Partial<ClusterConfig>;
        if (typeof c.name === 'string') {
          if (names.has(c.name)) {
            ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: `duplicate cluster name "${c.name}"` });
          }
          names.add(c.name);
        } else if (!(at.ok && at.index === i)) {
          ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: 'required (only the local cluster\'s entry may leave its name to its About API or ClusterProfile)' });
        }
        if ((c.manifests === undefined) === (c.kubernetes === undefined)) {
          ctx.addIssue({ code: 'custom', path: ['clusters', i], message: 'a cluster needs exactly one object source: manifests or kubernetes' });
        }
      });
      const local = at.ok ? (clusters[at.index] as Partial<ClusterConfig> | undefined) : undefined;
      if (local && typeof cfg.clusterName !== 'string' && typeof local.name !== 'string' && local.kubernetes === undefined && typeof cfg.fleet?.clusterProfiles?.localProfile !== 'string') {
        ctx.addIssue({
          code: 'custom',
          path: ['clusterName'],
          message: 'required: nothing else can name the local cluster (its entry reads manifests, so it has no About API, and fleet.clusterProfiles.localProfile is not set); set clusterName',
        });
      }
      if (cfg.controller?.enabled === true && local && local.kubernetes === undefined) {
        ctx.addIssue({ code: 'custom', path: ['controller', 'enabled'], message: 'the import controller needs the local cluster to use a kubernetes source' });
      }
      const debug = cfg.listen?.debug;
      if (typeof debug === 'string' && cfg.admin?.exposeDebug !== true && !isLoopbackListen(debug)) {
        ctx.addIssue({ code: 'custom', path: ['listen', 'debug'], message: `"${debug}" is not a loopback address; /debug/* is unauthenticated: set admin.exposeDebug: true to serve it there` });
      }
      // The export agent (push/pull) serves no Gateway; its config may leave gateways empty.
      if (Array.isArray(cfg.gateways) && cfg.gateways.length === 0 && !(cfg.endpointPicker?.ports?.length > 0) && cfg.exportAgent === undefined) {
        ctx.addIssue({ code: 'custom', path: ['gateways'], message: 'list at least one Gateway to serve, or set endpointPicker.ports (the Endpoint Picker role)' });
      }
      const collision = cfg.endpointPicker === undefined ? undefined : pickerPortCollision(cfg.endpointPicker, cfg.listen?.extProc);
      if (collision !== undefined) ctx.addIssue({ code: 'custom', path: ['endpointPicker', 'ports'], message: collision });
      if (typeof cfg.listen?.relay === 'string' && typeof cfg.endpointPicker?.relay?.keyFile !== 'string') {
        ctx.addIssue({ code: 'custom', path: ['listen', 'relay'], message: 'the relay verifier (listen.relay) needs endpointPicker.relay.keyFile: the keys tokens are verified with' });
      }
    },
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );

/** The config as the file says it: the local cluster's name may still be open (local-cluster.ts). */
export type LoadedRouterConfig = z.output<typeof routerConfigSchema>;
/** A clusters[] entry, named. */
export type ClusterConfig = LoadedRouterConfig['clusters'][number] & { name: string };
/** The config every stage after start-up reads: clusterName resolved, the local entry named by it. */
export type RouterConfig = Omit<LoadedRouterConfig, 'clusterName' | 'clusters'> & { clusterName: string; clusters: ClusterConfig[] };
export type KubernetesSourceConfig = NonNullable<ClusterConfig['kubernetes']>;
export type ControllerConfig = RouterConfig['controller'];

/** controller.enabled, defaulted: on when the local cluster is read from Kubernetes. */
export function controllerEnabled(cfg: LoadedRouterConfig): boolean {
  const at = localEntry(cfg);
  return cfg.controller.enabled ?? (at.ok && cfg.clusters[at.index]?.kubernetes !== undefined);
}
export type TlsConfig = z.output<typeof tlsSchema>;
export type ScrapeTlsConfig = z.output<typeof scrapeTlsSchema>;
export type RoutingMode = RouterConfig['mode'];
export type EppHealthConfig = z.output<typeof eppHealthSchema>;
export type EppMetricsConfig = z.output<typeof eppMetricsSchema>;
export type ParentProbeConfig = z.output<typeof parentProbeSchema>;
export type OutlierConfig = RouterConfig['outlier'];
export type PickerConfig = RouterConfig['picker'];
export type FailOpenConfig = z.output<typeof failOpenSchema>;
