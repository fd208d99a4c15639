/**
 * The router config file schema (YAML). Unknown keys are errors: a typo in the
 * router's own config must never be silently ignored.
 */
import { z } from 'zod';

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
    (s) => s.startsWith('unix:') || /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(s),
    'must be host:port, [ipv6]:port or unix:/path/to.sock',
  );

/** "host:port" or a bare host (the port then comes from the referencing object). */
export const targetAddress = z
  .string()
  .min(1)
  .refine((s) => /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]/]+)(:\d{1,5})?$/.test(s), 'must be host, host:port or [ipv6]:port');

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

export const eppSchema = z.strictObject({
  tls: tlsSchema.prefault({}),
});

export const manifestSourceSchema = z.strictObject({
  /** Files or directories of multi-document Kubernetes YAML, relative to the config file. */
  paths: z.array(z.string().min(1)).min(1),
});

export const addressOverrideSchema = z.strictObject({
  namespace: objectName,
  name: objectName,
  address: targetAddress,
});

export const clusterSchema = z.strictObject({
  name: objectName,
  manifests: manifestSourceSchema.optional(),
  /** Transport settings for this cluster's EPPs. */
  epp: eppSchema.prefault({}),
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
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      })
      .prefault({}),
  })
  .superRefine((cfg, ctx) => {
    const names = new Set<string>();
    cfg.clusters.forEach((c, i) => {
      if (names.has(c.name)) {
        ctx.addIssue({ code: 'custom', path: ['clusters', i, 'name'], message: `duplicate cluster name "${c.name}"` });
      }
      names.add(c.name);
      if (!c.manifests) {
        ctx.addIssue({ code: 'custom', path: ['clusters', i], message: 'a cluster needs an object source: manifests' });
      }
    });
    if (!names.has(cfg.clusterName)) {
      ctx.addIssue({
        code: 'custom',
        path: ['clusterName'],
        message: `"${cfg.clusterName}" is not one of clusters[].name (${[...names].join(', ')})`,
      });
    }
  });

export type RouterConfig = z.output<typeof routerConfigSchema>;
export type ClusterConfig = RouterConfig['clusters'][number];
export type TlsConfig = z.output<typeof tlsSchema>;
export type RoutingMode = RouterConfig['mode'];
