/**
 * Typed object builders for snapshot and picker tests. They produce the
 * normalised shapes of src/model/types.ts directly (defaults applied), so the
 * tests do not depend on the decoders.
 */
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import {
  EXPORT_ANNOTATION,
  GROUP_GATEWAY,
  GROUP_INFERENCE,
  GROUP_INFERENCE_X,
  type BackendRef,
  type FailureMode,
  type Gateway,
  type GatewayListener,
  type HTTPRoute,
  type HTTPRouteMatch,
  type HTTPRouteRule,
  type HTTPValueMatch,
  type InferencePool,
  type InferencePoolImport,
  type KubeObject,
  type ObjectMeta,
  type ParentReference,
  type ParentStatus,
  type PathMatchType,
  type Service,
  type UnsupportedField,
} from '../../src/model/types.js';
import type { ClusterState } from '../../src/sources/types.js';
import { buildSnapshot, type BuildResult } from '../../src/snapshot/build.js';

export const NS = 'example';
export const LOCAL = 'cluster-a';

export function meta(name: string, namespace = NS, extra: Partial<ObjectMeta> = {}): ObjectMeta {
  return { name, namespace, labels: {}, annotations: {}, ...extra };
}

export interface PoolOpts {
  ns?: string;
  epp?: string;
  eppPort?: number | null;
  eppKind?: string;
  eppGroup?: string;
  exported?: boolean | string;
  parents?: ParentReference[];
  failureMode?: FailureMode;
  targetPorts?: number[];
}

export function pool(name: string, o: PoolOpts = {}): InferencePool {
  const annotations: Record<string, string> = {};
  if (o.exported === true) annotations[EXPORT_ANNOTATION] = 'ClusterSet';
  else if (typeof o.exported === 'string') annotations[EXPORT_ANNOTATION] = o.exported;
  return {
    kind: 'InferencePool',
    apiVersion: `${GROUP_INFERENCE}/v1`,
    metadata: meta(name, o.ns, { annotations }),
    spec: {
      selector: { matchLabels: { app: name } },
      targetPorts: (o.targetPorts ?? [8000]).map((number) => ({ number })),
      appProtocol: 'http',
      endpointPickerRef: {
        group: o.eppGroup ?? '',
        kind: o.eppKind ?? 'Service',
        name: o.epp ?? `${name}-epp`,
        ...(o.eppPort === null ? {} : { port: { number: o.eppPort ?? 9002 } }),
        failureMode: o.failureMode ?? 'FailClose',
      },
    },
    status: { parents: (o.parents ?? []).map((parentRef) => ({ parentRef, conditions: [] })) },
  };
}

/** `controllers`: one list of exporting cluster names per status.controllers entry. */
export function poolImport(name: string, controllers: string[][], ns = NS): InferencePoolImport {
  return {
    kind: 'InferencePoolImport',
    apiVersion: `${GROUP_INFERENCE_X}/v1alpha1`,
    metadata: meta(name, ns),
    status: {
      controllers: controllers.map((clusters, i) => ({
        name: `example.com/controller-${i}`,
        exportingClusters: clusters.map((c) => ({ name: c })),
        parents: [],
        conditions: [],
      })),
    },
  };
}

export interface ServiceOpts {
  ns?: string;
  type?: string;
  clusterIP?: string;
  externalIPs?: string[];
  ingress?: { ip?: string; hostname?: string }[];
  ports?: number[];
}

export function service(name: string, o: ServiceOpts = {}): Service {
  return {
    kind: 'Service',
    apiVersion: 'v1',
    metadata: meta(name, o.ns),
    spec: {
      type: o.type ?? 'ClusterIP',
      ...(o.clusterIP === undefined ? { clusterIP: '10.96.0.10' } : o.clusterIP === '' ? {} : { clusterIP: o.clusterIP }),
      externalIPs: o.externalIPs ?? [],
      ports: (o.ports ?? [9002]).map((port) => ({ port, protocol: 'TCP' })),
    },
    status: { loadBalancer: { ingress: o.ingress ?? [] } },
  };
}

export function listener(name: string, o: Partial<GatewayListener> = {}): GatewayListener {
  return { name, port: 80, protocol: 'HTTP', allowedRoutes: { namespaces: { from: 'Same' } }, ...o };
}

export function gateway(name: string, o: { ns?: string; listeners?: GatewayListener[]; addresses?: (string | { type: string; value: string })[] } = {}): Gateway {
  return {
    kind: 'Gateway',
    apiVersion: `${GROUP_GATEWAY}/v1`,
    metadata: meta(name, o.ns),
    spec: { gatewayClassName: 'test', listeners: o.listeners ?? [listener('http')], addresses: [] },
    status: { addresses: (o.addresses ?? []).map((a) => (typeof a === 'string' ? { type: 'IPAddress', value: a } : a)) },
  };
}

export function parentRef(name: string, o: Partial<ParentReference> = {}): ParentReference {
  return { group: GROUP_GATEWAY, kind: 'Gateway', name, ...o };
}

export function poolRef(name: string, weight = 1, o: Partial<BackendRef> = {}): BackendRef {
  return { group: GROUP_INFERENCE, kind: 'InferencePool', name, weight, ...o };
}

export function importRef(name: string, weight = 1, o: Partial<BackendRef> = {}): BackendRef {
  return { group: GROUP_INFERENCE_X, kind: 'InferencePoolImport', name, weight, ...o };
}

export interface MatchOpts {
  path?: string;
  type?: PathMatchType;
  method?: string;
  headers?: Record<string, string> | HTTPValueMatch[];
  query?: Record<string, string> | HTTPValueMatch[];
}

function values(v: Record<string, string> | HTTPValueMatch[] | undefined): HTTPValueMatch[] {
  if (v === undefined) return [];
  if (Array.isArray(v)) return v;
  return Object.entries(v).map(([name, value]) => ({ type: 'Exact', name, value }));
}

export function match(o: MatchOpts = {}): HTTPRouteMatch {
  return {
    path: { type: o.type ?? 'PathPrefix', value: o.path ?? '/' },
    headers: values(o.headers),
    queryParams: values(o.query),
    ...(o.method !== undefined ? { method: o.method } : {}),
  };
}

export function rule(backendRefs: BackendRef[], matches: HTTPRouteMatch[] = [match()], name?: string, unsupported: UnsupportedField[] = []): HTTPRouteRule {
  return { matches, backendRefs, ...(name !== undefined ? { name } : {}), unsupported };
}

export interface RouteOpts {
  ns?: string;
  parentRefs?: ParentReference[];
  hostnames?: string[];
  created?: string;
  /** status.parents[] as the decoder would read it. */
  statusParents?: ParentStatus[];
}

export function route(name: string, rules: HTTPRouteRule[], o: RouteOpts = {}): HTTPRoute {
  return {
    kind: 'HTTPRoute',
    apiVersion: `${GROUP_GATEWAY}/v1`,
    metadata: meta(name, o.ns, o.created !== undefined ? { creationTimestamp: o.created } : {}),
    spec: { parentRefs: o.parentRefs ?? [parentRef('inf-gw')], hostnames: o.hostnames ?? [], rules },
    status: o.statusParents !== undefined ? { parents: o.statusParents } : {},
  };
}

type ClusterInput = { name: string; addressOverrides?: { services?: object[]; gateways?: object[] }; epp?: object; eppAnswers?: object };

/** A parsed RouterConfig: local cluster-a, members cluster-a and cluster-b, serving example/inf-gw. */
export function config(o: { mode?: 'Endpoint' | 'Parent'; clusters?: ClusterInput[]; gateways?: { namespace: string; name: string }[]; clusterName?: string; routes?: Record<string, unknown> } = {}): RouterConfig {
  const clusters = o.clusters ?? [{ name: LOCAL }, { name: 'cluster-b' }];
  return namedConfig(routerConfigSchema.parse({
    clusterName: o.clusterName ?? LOCAL,
    mode: o.mode ?? 'Endpoint',
    gateways: o.gateways ?? [{ namespace: NS, name: 'inf-gw' }],
    clusters: clusters.map((c) => ({ manifests: { paths: [`${c.name}/`] }, ...c })),
    ...(o.routes !== undefined ? { routes: o.routes } : {}),
  }));
}

export function state(cluster: string, objects: KubeObject[], o: Partial<ClusterState> = {}): ClusterState {
  return { cluster, objects, errors: [], stale: false, revision: `rev-${cluster}`, ...o };
}

/** Builds with a fixed clock; `clusters` maps cluster name -> objects. */
export function build(cfg: RouterConfig, clusters: Record<string, KubeObject[]>, version = 1): BuildResult {
  return buildSnapshot({
    config: cfg,
    clusters: Object.entries(clusters).map(([name, objs]) => state(name, objs)),
    version,
    now: new Date('2025-01-01T00:00:00Z'),
  });
}

/** A local pool with its EPP Service. */
export function localPool(name: string, o: PoolOpts & ServiceOpts = {}): KubeObject[] {
  return [pool(name, o), service(o.epp ?? `${name}-epp`, o)];
}

/** The served Gateway example/inf-gw with one HTTP listener accepting all namespaces. */
export function servedGateway(listeners?: GatewayListener[]): Gateway {
  return gateway('inf-gw', { listeners: listeners ?? [listener('http', { allowedRoutes: { namespaces: { from: 'All' } } })] });
}
