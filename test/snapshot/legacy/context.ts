// Frozen copy of src/snapshot/context.ts as of commit 9580a0d (before the build-performance work), kept only as
// the reference for test/snapshot/equivalence.test.ts. Do not edit it, and do not import it from src/.
/**
 * The builder's working state: every member's objects indexed by
 * namespace/name, the per-cluster config (TLS, address overrides) and a
 * deduplicating diagnostic sink.
 */
import type { ClusterConfig, RouterConfig } from '../../../src/config/schema.js';
import type { Gateway, HTTPRoute, InferencePool, InferencePoolImport, KubeObject, Service } from '../../../src/model/types.js';
import type { ClusterState } from '../../../src/sources/types.js';
import type { Diagnostic } from '../../../src/snapshot/types.js';

export interface ClusterObjects {
  readonly name: string;
  /** Keyed by "namespace/name". */
  readonly pools: ReadonlyMap<string, InferencePool>;
  readonly imports: ReadonlyMap<string, InferencePoolImport>;
  readonly services: ReadonlyMap<string, Service>;
  readonly gateways: ReadonlyMap<string, Gateway>;
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
}

export function nsName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
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

function indexObjects(state: ClusterState, sink: DiagnosticSink): ClusterObjects {
  const pools = new Map<string, InferencePool>();
  const imports = new Map<string, InferencePoolImport>();
  const services = new Map<string, Service>();
  const gateways = new Map<string, Gateway>();
  const routes: HTTPRoute[] = [];
  const seen = new Set<string>();
  const put = <T extends KubeObject>(map: Map<string, T>, o: T): void => {
    map.set(nsName(o.metadata.namespace, o.metadata.name), o);
  };
  for (const o of state.objects) {
    const id = `${o.kind} ${nsName(o.metadata.namespace, o.metadata.name)}`;
    if (seen.has(id)) {
      sink.add({
        severity: 'warning',
        subject: `${state.cluster}: ${id}`,
        reason: 'DuplicateObject',
        message: `${id} appears more than once in cluster ${state.cluster}; the first copy is used, remove the others`,
      });
      continue;
    }
    seen.add(id);
    switch (o.kind) {
      case 'InferencePool': put(pools, o); break;
      case 'InferencePoolImport': put(imports, o); break;
      case 'Service': put(services, o); break;
      case 'Gateway': put(gateways, o); break;
      case 'HTTPRoute': routes.push(o); break;
      default: {
        const never: never = o;
        void never;
      }
    }
  }
  return { name: state.cluster, pools, imports, services, gateways, routes };
}

/** Indexes the configured members' states and reports what does not fit the config. */
export function createContext(config: RouterConfig, states: readonly ClusterState[]): BuildContext {
  const diagnostics = new DiagnosticSink();
  const clusterConfigs = new Map(config.clusters.map((c) => [c.name, c] as const));
  const clusters = new Map<string, ClusterObjects>();
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
    clusters.set(state.cluster, indexObjects(state, diagnostics));
    for (const e of state.errors) {
      diagnostics.add({
        severity: 'warning',
        subject: `${state.cluster}: ${e.object}`,
        path: e.path,
        reason: 'InvalidObject',
        message: `${e.message}${e.origin ? ` (${e.origin})` : ''}; the object is left out`,
      });
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
  return { config, localCluster: config.clusterName, mode: config.mode, clusters, clusterConfigs, diagnostics };
}

export type AddressOverride = ClusterConfig['addressOverrides']['services'][number];

export function findOverride(
  ctx: BuildContext,
  cluster: string,
  which: 'services' | 'gateways',
  namespace: string,
  name: string,
): AddressOverride | undefined {
  const list = ctx.clusterConfigs.get(cluster)?.addressOverrides[which] ?? [];
  return list.find((o) => o.namespace === namespace && o.name === name);
}
