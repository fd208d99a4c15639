/**
 * The builder's working state: every member's objects indexed by
 * namespace, then name, the per-cluster config (TLS, address overrides) and a
 * deduplicating diagnostic sink.
 */
import type { ClusterConfig, RouterConfig } from '../config/schema.js';
import type { FieldError, Gateway, GatewayClass, HTTPRoute, InferencePool, InferencePoolImport, KubeObject, Service } from '../model/types.js';
import type { ClusterState } from '../sources/types.js';
import type { Diagnostic, ExcludedObject, StatusTarget } from './types.js';

/** Objects of one kind by namespace, then name (no joined-string keys on the hot path). */
export type ByName<T> = ReadonlyMap<string, ReadonlyMap<string, T>>;

/** The object `namespace/name` of a {@link ByName} index. */
export function lookup<T>(index: ByName<T>, namespace: string, name: string): T | undefined {
  const inNamespace = index.get(namespace);
  return inNamespace === undefined ? undefined : inNamespace.get(name);
}

export interface ClusterObjects {
  readonly name: string;
  readonly pools: ByName<InferencePool>;
  readonly imports: ByName<InferencePoolImport>;
  readonly services: ByName<Service>;
  readonly gateways: ByName<Gateway>;
  /** Cluster-scoped: by name. */
  readonly gatewayClasses: ReadonlyMap<string, GatewayClass>;
  readonly routes: readonly HTTPRoute[];
}

export interface BuildContext {
  readonly config: RouterConfig;
  readonly localCluster: string;
  readonly mode: RouterConfig['mode'];
  /** Configured members only; a member without a state has no entry. */
  readonly clusters: ReadonlyMap<string, ClusterObjects>;
  readonly clusterConfigs: ReadonlyMap<string, ClusterConfig>;
  readonly diagnostics: DiagnosticSink;
  /** Objects left out as a whole: invalid ones the sources reported, pools without an Endpoint Picker (the build adds refused EPP Services). */
  readonly excludedObjects: readonly ExcludedObject[];
}

export function nsName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** The HTTPRoute condition a diagnostic turns False: for one parentRef (its index), or for every parent when absent. */
export function routeStatus(
  route: { readonly namespace: string; readonly name: string },
  condition: 'Accepted' | 'ResolvedRefs',
  parentRefIndex?: number,
): StatusTarget {
  return { kind: 'HTTPRoute', namespace: route.namespace, name: route.name, condition, ...(parentRefIndex !== undefined ? { parentRefIndex } : {}) };
}

/** Upstream Gateway API route condition reasons the builder reports with. */
export const ROUTE_REASONS = {
  unsupportedValue: 'UnsupportedValue',
  backendNotFound: 'BackendNotFound',
  invalidKind: 'InvalidKind',
  refNotPermitted: 'RefNotPermitted',
  noMatchingParent: 'NoMatchingParent',
} as const;

/** The upstream condition reason for a pool without spec.endpointPickerRef. */
export const ENDPOINT_PICKER_REF_MISSING = 'EndpointPickerRefMissing';

export function endpointPickerRefMissing(pool: InferencePool, cluster: string): string {
  return `InferencePool ${nsName(pool.metadata.namespace, pool.metadata.name)} in cluster ${cluster} has no spec.endpointPickerRef (optional since InferencePool v1.6); the router needs an Endpoint Picker to route to a pool, so the pool is left out`;
}

const SEVERITY_RANK: Record<Diagnostic['severity'], number> = { info: 0, warning: 1, error: 2 };

/** Collects diagnostics once per subject/path/reason, keeping the highest severity. */
export class DiagnosticSink {
  private readonly byKey = new Map<string, Diagnostic>();

  add(d: Diagnostic): void {
    const key = `${d.subject}\u0000${d.path ?? ''}\u0000${d.reason}`;
    const prev = this.byKey.get(key);
    if (prev === undefined || SEVERITY_RANK[d.severity] > SEVERITY_RANK[prev.severity]) this.byKey.set(key, d);
  }

  list(): Diagnostic[] {
    return [...this.byKey.values()];
  }
}

interface IndexedState {
  readonly objects: ClusterObjects;
  /** DuplicateObject warnings, in the order the duplicates appear. */
  readonly duplicates: readonly Diagnostic[];
  /** The state's invalid objects and its pools without endpointPickerRef, with their diagnostics. */
  readonly excluded: readonly { readonly object: ExcludedObject; readonly diagnostic: Diagnostic }[];
}

/** Adds `o` under its namespace and name unless a same-named object is there already (returns false). */
function put<T extends KubeObject>(index: Map<string, Map<string, T>>, o: T): boolean {
  const { namespace, name } = o.metadata;
  let inNamespace = index.get(namespace);
  if (inNamespace === undefined) {
    inNamespace = new Map();
    index.set(namespace, inNamespace);
  } else if (inNamespace.has(name)) {
    return false;
  }
  inNamespace.set(name, o);
  return true;
}

function indexObjects(state: ClusterState): IndexedState {
  const pools = new Map<string, Map<string, InferencePool>>();
  const imports = new Map<string, Map<string, InferencePoolImport>>();
  const services = new Map<string, Map<string, Service>>();
  const gateways = new Map<string, Map<string, Gateway>>();
  const gatewayClasses = new Map<string, GatewayClass>();
  const routes: HTTPRoute[] = [];
  const routeNames = new Map<string, Map<string, HTTPRoute>>();
  const duplicates: Diagnostic[] = [];
  for (const o of state.objects) {
    let first: boolean;
    switch (o.kind) {
      case 'InferencePool': first = put(pools, o); break;
      case 'InferencePoolImport': first = put(imports, o); break;
      case 'Service': first = put(services, o); break;
      case 'Gateway': first = put(gateways, o); break;
      case 'GatewayClass':
        first = !gatewayClasses.has(o.metadata.name);
        if (first) gatewayClasses.set(o.metadata.name, o);
        break;
      case 'HTTPRoute':
        first = put(routeNames, o);
        if (first) routes.push(o);
        break;
      default: {
        const never: never = o;
        void never;
        continue;
      }
    }
    if (!first) {
      const id = `${o.kind} ${nsName(o.metadata.namespace, o.metadata.name)}`;
      duplicates.push({
        severity: 'warning',
        subject: `${state.cluster}: ${id}`,
        reason: 'DuplicateObject',
        message: `${id} appears more than once in cluster ${state.cluster}; the first copy is used, remove the others`,
      });
    }
  }
  const excluded = state.errors.map((e) => invalidObject(state.cluster, e));
  for (const o of state.objects) if (o.kind === 'InferencePool' && o.spec.endpointPickerRef === undefined) excluded.push(pickerMissing(state.cluster, o));
  return { objects: { name: state.cluster, pools, imports, services, gateways, gatewayClasses, routes }, duplicates, excluded };
}

/** "Kind namespace/name" of a FieldError without a ref (a source that could not name the object). */
const DESCRIBED = /^(\S+) ([^/\s]+)\/(\S+)$/;

function invalidObject(cluster: string, e: FieldError): { object: ExcludedObject; diagnostic: Diagnostic } {
  const m = e.ref === undefined ? DESCRIBED.exec(e.object) : null;
  const ref = e.ref ?? { kind: m?.[1] ?? '?', namespace: m?.[2] ?? '?', name: m?.[3] ?? e.object };
  const reason = e.reason ?? 'InvalidObject';
  const where = e.origin ? ` (${e.origin})` : '';
  return {
    object: { cluster, ...ref, field: e.path, reason, message: e.message, ...(e.origin !== undefined ? { origin: e.origin } : {}) },
    diagnostic: {
      severity: 'error',
      subject: `${cluster}: ${e.object}`,
      path: e.path,
      reason,
      message: `${e.message}${where}; the object is left out, the rest of cluster ${cluster} keeps serving`,
    },
  };
}

function pickerMissing(cluster: string, pool: InferencePool): { object: ExcludedObject; diagnostic: Diagnostic } {
  const { namespace, name } = pool.metadata;
  const message = endpointPickerRefMissing(pool, cluster);
  return {
    object: { cluster, kind: 'InferencePool', namespace, name, field: 'spec.endpointPickerRef', reason: ENDPOINT_PICKER_REF_MISSING, message },
    diagnostic: { severity: 'warning', subject: `${cluster}: InferencePool ${nsName(namespace, name)}`, path: 'spec.endpointPickerRef', reason: ENDPOINT_PICKER_REF_MISSING, message },
  };
}

/**
 * A local HTTPRoute left out for a field it cannot take is not Accepted by the
 * served Gateways: its diagnostic carries the upstream reason UnsupportedValue
 * and the route's Accepted condition (the excluded object keeps InvalidObject).
 */
function refusedRoute(x: { readonly object: ExcludedObject; readonly diagnostic: Diagnostic }): Diagnostic {
  const o = x.object;
  if (o.kind !== 'HTTPRoute' || o.reason !== 'InvalidObject') return x.diagnostic;
  return { ...x.diagnostic, reason: ROUTE_REASONS.unsupportedValue, status: routeStatus(o, 'Accepted') };
}

/**
 * Build-to-build cache of each ClusterState's index, keyed by the state
 * object's identity (src/snapshot/expand.ts keys its pool resolutions by the
 * index in turn).
 * A ClusterState is immutable once emitted (src/sources/types.ts), and the
 * SnapshotStore passes an unchanged member's state again as the same object,
 * so a rebuild after one member changed re-indexes and re-resolves that member
 * only. Weakly held: an entry lives exactly as long as its state does, so the
 * cache is bounded by the states the caller keeps. Invisible in the output.
 */
const indexCache = new WeakMap<ClusterState, IndexedState>();

function indexed(state: ClusterState): IndexedState {
  let entry = indexCache.get(state);
  if (entry === undefined) {
    entry = indexObjects(state);
    indexCache.set(state, entry);
  }
  return entry;
}

/** Indexes the configured members' states and reports what does not fit the config. */
export function createContext(config: RouterConfig, states: readonly ClusterState[]): BuildContext {
  const diagnostics = new DiagnosticSink();
  const clusterConfigs = new Map(config.clusters.map((c) => [c.name, c] as const));
  const clusters = new Map<string, ClusterObjects>();
  const excludedObjects: ExcludedObject[] = [];
  for (const state of states) {
    if (!clusterConfigs.has(state.cluster)) {
      diagnostics.add({
        severity: 'warning',
        subject: `cluster ${state.cluster}`,
        reason: 'UnknownClusterState',
        message: `objects were supplied for cluster "${state.cluster}", which is not in config clusters[]; they are ignored`,
      });
      continue;
    }
    if (clusters.has(state.cluster)) {
      diagnostics.add({
        severity: 'warning',
        subject: `cluster ${state.cluster}`,
        reason: 'DuplicateClusterState',
        message: `more than one object set was supplied for cluster "${state.cluster}"; the first is used`,
      });
      continue;
    }
    const { objects, duplicates, excluded } = indexed(state);
    for (const d of duplicates) diagnostics.add(d);
    clusters.set(state.cluster, objects);
    const local = state.cluster === config.clusterName;
    for (const x of excluded) {
      diagnostics.add(local ? refusedRoute(x) : x.diagnostic);
      excludedObjects.push(x.object);
    }
    if (state.stale) {
      diagnostics.add({
        severity: 'warning',
        subject: `cluster ${state.cluster}`,
        reason: 'ClusterStale',
        message: `the source of cluster ${state.cluster} lost contact; routing uses its last known objects (revision ${state.revision})`,
      });
    }
  }
  for (const c of config.clusters) {
    if (!clusters.has(c.name)) {
      diagnostics.add({
        severity: 'warning',
        subject: `cluster ${c.name}`,
        reason: 'ClusterNotLoaded',
        message: `no objects are loaded for cluster ${c.name}; every pool in it is unresolvable until its source delivers`,
      });
    }
  }
  return { config, localCluster: config.clusterName, mode: config.mode, clusters, clusterConfigs, diagnostics, excludedObjects };
}

export type AddressOverride = ClusterConfig['addressOverrides']['services'][number];

/** The cluster's address override for Service/Gateway `namespace/name`, if any. */
export function findOverride(
  clusterConfig: ClusterConfig | undefined,
  which: 'services' | 'gateways',
  namespace: string,
  name: string,
): AddressOverride | undefined {
  if (clusterConfig === undefined) return undefined;
  const list = clusterConfig.addressOverrides[which];
  for (let i = 0; i < list.length; i++) {
    const o = list[i]!;
    if (o.namespace === namespace && o.name === name) return o;
  }
  return undefined;
}
