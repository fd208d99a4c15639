/**
 * Rules Envoy enforces in code rather than in its protos, limited to the ones a
 * static sidecar bootstrap can break: addresses that must parse, cluster names
 * that must exist, ORIGINAL_DST constraints, HTTP/2 where gRPC runs, and the
 * router filter being last. Each mirrors an Envoy startup error.
 */
import net from 'node:net';
import { jsonName } from './proto-registry.js';
import type { ConfigError, WalkContext } from './validate-envoy-config.js';

/** A place in the config that names a cluster. */
export interface ClusterRef {
  readonly cluster: string;
  readonly path: string;
  /** Message.field that holds the name. */
  readonly via: string;
}

/**
 * Fields that name a cluster (`value`: the field's string value or each list
 * item; `keys`: the map's keys). Keyed by `<message full name>.<field>`.
 */
export const CLUSTER_REFS: Readonly<Record<string, 'value' | 'keys'>> = {
  'envoy.config.route.v3.RouteAction.cluster': 'value',
  'envoy.config.route.v3.WeightedCluster.ClusterWeight.name': 'value',
  'envoy.config.route.v3.RouteAction.RequestMirrorPolicy.cluster': 'value',
  'envoy.config.core.v3.GrpcService.EnvoyGrpc.cluster_name': 'value',
  'envoy.config.core.v3.HttpUri.cluster': 'value',
  'envoy.config.core.v3.ApiConfigSource.cluster_names': 'value',
  'envoy.config.bootstrap.v3.ClusterManager.local_cluster_name': 'value',
  'envoy.config.trace.v3.ZipkinConfig.collector_cluster': 'value',
  'envoy.config.trace.v3.DatadogConfig.collector_cluster': 'value',
  'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.cluster': 'value',
  'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy.WeightedCluster.ClusterWeight.name': 'value',
  // The health_check HTTP filter fails while a named cluster is below its healthy percentage.
  'envoy.extensions.filters.http.health_check.v3.HealthCheck.cluster_min_healthy_percentages': 'keys',
};

const HTTP_OPTIONS = 'envoy.extensions.upstreams.http.v3.HttpProtocolOptions';
const ROUTER = 'envoy.extensions.filters.http.router.v3.Router';
const CLUSTER_TYPES = ['STATIC', 'STRICT_DNS', 'LOGICAL_DNS', 'EDS', 'ORIGINAL_DST'];
// envoy.config.cluster.v3.Cluster.LbPolicy by number (4 is reserved).
const LB_POLICIES = ['ROUND_ROBIN', 'LEAST_REQUEST', 'RING_HASH', 'RANDOM', '', 'MAGLEV', 'CLUSTER_PROVIDED', 'LOAD_BALANCING_POLICY_CONFIG'];
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const join = (base: string, key: string): string => (base === '' ? key : `${base}.${key}`);

/** A field by proto name or JSON name, as Envoy accepts both. */
function get(o: unknown, field: string): unknown {
  if (!isObject(o)) return undefined;
  return o[field] ?? o[jsonName(field)];
}

/** Key actually used for a field (for error paths). */
function keyOf(o: Obj, field: string): string {
  return field in o ? field : jsonName(field);
}

function typeName(any: unknown): string | undefined {
  const url = get(any, '@type');
  return typeof url === 'string' ? url.slice(url.lastIndexOf('/') + 1) : undefined;
}

function enumName(v: unknown, names: readonly string[], dflt: string): string {
  if (v === undefined || v === null) return dflt;
  return typeof v === 'number' ? (names[v] ?? String(v)) : String(v);
}

/** True when the cluster speaks HTTP/2 to its hosts (needed for gRPC). */
export function clusterIsHttp2(cluster: unknown): boolean {
  const opts = get(get(cluster, 'typed_extension_protocol_options'), HTTP_OPTIONS);
  const explicit = get(opts, 'explicit_http_config');
  if (get(explicit, 'http2_protocol_options') !== undefined) return true;
  return get(get(opts, 'auto_config'), 'http2_protocol_options') !== undefined;
}

/** Checks run on each message after its fields were walked. */
export function checkMessageSemantics(name: string, v: Obj, path: string, ctx: WalkContext): void {
  const fail = (p: string, message: string): void => void ctx.errors.push({ path: p, message });
  switch (name) {
    case 'envoy.config.core.v3.SocketAddress': {
      const address = get(v, 'address');
      if (typeof address !== 'string' || address === '') return; // PGV reports the empty address
      const dnsOk = ctx.dnsCluster || typeof get(v, 'resolver_name') === 'string';
      if (net.isIP(address) === 0 && !(dnsOk && HOSTNAME.test(address))) {
        fail(join(path, 'address'), `"${address}" is not an IPv4 or IPv6 address${dnsOk ? ' or host name' : ''}`);
      }
      return;
    }
    case 'envoy.config.core.v3.Pipe': {
      const p = get(v, 'path');
      if (typeof p === 'string' && p !== '' && !p.startsWith('/') && !p.startsWith('@')) {
        fail(join(path, 'path'), `pipe path "${p}" must be absolute (or @abstract)`);
      }
      return;
    }
    case 'envoy.config.cluster.v3.Cluster':
      return checkCluster(v, path, fail);
    case 'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager': {
      const filters = get(v, 'http_filters');
      if (!Array.isArray(filters)) return;
      const key = keyOf(v, 'http_filters');
      filters.forEach((f, i) => {
        const t = typeName(get(f, 'typed_config'));
        const last = i === filters.length - 1;
        if (t === ROUTER && !last) fail(`${join(path, key)}[${i}]`, 'the router filter must be the last HTTP filter');
        if (last && t !== undefined && t !== ROUTER) fail(`${join(path, key)}[${i}]`, 'the last HTTP filter must be the router (terminal) filter');
      });
      return;
    }
    case 'xds.type.v3.TypedStruct':
    case 'udpa.type.v1.TypedStruct': {
      const url = get(v, 'type_url');
      if (typeof url !== 'string') return;
      ctx.validateAs(url.slice(url.lastIndexOf('/') + 1), get(v, 'value') ?? {}, join(path, 'value'));
      return;
    }
  }
}

function checkCluster(v: Obj, path: string, fail: (p: string, m: string) => void): void {
  const type = enumName(get(v, 'type'), CLUSTER_TYPES, 'STATIC');
  const lb = enumName(get(v, 'lb_policy'), LB_POLICIES, 'ROUND_ROBIN');
  if (type === 'ORIGINAL_DST') {
    if (lb !== 'CLUSTER_PROVIDED') fail(join(path, 'lb_policy'), 'an ORIGINAL_DST cluster needs lb_policy CLUSTER_PROVIDED');
    if (get(v, 'load_assignment') !== undefined) fail(join(path, 'load_assignment'), 'an ORIGINAL_DST cluster must not have a load_assignment');
    const od = get(v, 'original_dst_lb_config');
    if (get(od, 'http_header_name') && get(od, 'use_http_header') !== true) {
      fail(join(path, 'original_dst_lb_config'), 'http_header_name needs use_http_header: true');
    }
  } else if (lb === 'CLUSTER_PROVIDED' && get(v, 'cluster_type') === undefined) {
    fail(join(path, 'lb_policy'), `lb_policy CLUSTER_PROVIDED needs an ORIGINAL_DST (or custom) cluster, not ${type}`);
  }
  const hcs = get(v, 'health_checks');
  if (Array.isArray(hcs) && hcs.some((hc) => get(hc, 'grpc_health_check') !== undefined) && !clusterIsHttp2(v)) {
    fail(join(path, keyOf(v, 'health_checks')), 'gRPC health checks need an HTTP/2 cluster (typed_extension_protocol_options with http2_protocol_options)');
  }
  const tepo = get(v, 'typed_extension_protocol_options');
  if (isObject(tepo)) {
    for (const [key, any] of Object.entries(tepo)) {
      if (typeName(any) === HTTP_OPTIONS && key !== HTTP_OPTIONS) {
        fail(`${join(path, keyOf(v, 'typed_extension_protocol_options'))}[${JSON.stringify(key)}]`, `key must be "${HTTP_OPTIONS}" (Envoy finds the options by this name)`);
      }
    }
  }
}

/** Cross-checks names: clusters defined once, and every named cluster defined (and HTTP/2 when it carries gRPC). */
export function checkReferences(doc: Obj, refs: readonly ClusterRef[]): ConfigError[] {
  const errors: ConfigError[] = [];
  const staticResources = get(doc, 'static_resources');
  const clusters = get(staticResources, 'clusters');
  const defined = new Map<string, unknown>();
  if (Array.isArray(clusters)) {
    clusters.forEach((c, i) => {
      const name = get(c, 'name');
      if (typeof name !== 'string') return;
      if (defined.has(name)) errors.push({ path: `static_resources.clusters[${i}].name`, message: `duplicate cluster name "${name}"` });
      defined.set(name, c);
    });
  }
  const listeners = get(staticResources, 'listeners');
  if (Array.isArray(listeners)) {
    const seen = new Set<string>();
    listeners.forEach((l, i) => {
      const name = get(l, 'name');
      if (typeof name !== 'string') return;
      if (seen.has(name)) errors.push({ path: `static_resources.listeners[${i}].name`, message: `duplicate listener name "${name}"` });
      seen.add(name);
    });
  }
  // With CDS, clusters may arrive at runtime: names cannot be checked statically.
  if (get(get(doc, 'dynamic_resources'), 'cds_config') !== undefined) return errors;
  for (const ref of refs) {
    const cluster = defined.get(ref.cluster);
    if (cluster === undefined) {
      errors.push({ path: ref.path, message: `cluster "${ref.cluster}" is not defined in static_resources.clusters` });
    } else if (ref.via === 'envoy.config.core.v3.GrpcService.EnvoyGrpc.cluster_name' && !clusterIsHttp2(cluster)) {
      errors.push({ path: ref.path, message: `cluster "${ref.cluster}" carries gRPC but is not HTTP/2` });
    }
  }
  return errors;
}
