/**
 * Synthetic ClusterSets for the control-plane benchmark, built with the typed
 * test builders (test/snapshot/fixtures.ts). `routes` HTTPRoutes in the local
 * cluster, each splitting 50/50 between a local InferencePool and an
 * InferencePoolImport of the same name that `exporters` of the 19 remote
 * clusters export: pools + imports = routes * (2 + exporters), so 1,000 routes
 * with 8 exporters are 10,000 pools and imports (plus one EPP Service per pool).
 */
import type { RouterConfig } from '../../src/config/schema.js';
import type { KubeObject } from '../../src/model/types.js';
import type { ClusterState } from '../../src/sources/types.js';
import {
  config,
  importRef,
  localPool,
  match,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  servedGateway,
  service,
  state,
} from '../../test/snapshot/fixtures.js';

export const CLUSTERS = 20;
export const EXPORTERS = 8;

export const clusterName = (i: number): string => `cluster-${String(i).padStart(2, '0')}`;

export interface ClusterSetSpec {
  readonly routes: number;
  readonly clusters?: number;
  readonly exporters?: number;
}

export interface SyntheticSet {
  readonly config: RouterConfig;
  readonly states: ClusterState[];
  readonly counts: { routes: number; clusters: number; pools: number; imports: number; services: number; objects: number };
}

export function routeObject(i: number, localWeight = 50): KubeObject {
  return route(`route-${i}`, [rule([poolRef(`pool-${i}`, localWeight), importRef(`pool-${i}`, 100 - localWeight)], [match({ path: '/v1' })])], {
    hostnames: [`r${i}.example.com`],
  });
}

export function exportersOf(i: number, clusters: number, exporters: number): number[] {
  const remote = clusters - 1;
  return Array.from({ length: Math.min(exporters, remote) }, (_, k) => ((i + k) % remote) + 1);
}

export function syntheticClusterSet(spec: ClusterSetSpec): SyntheticSet {
  const clusters = spec.clusters ?? CLUSTERS;
  const exporters = spec.exporters ?? EXPORTERS;
  const names = Array.from({ length: clusters }, (_, i) => clusterName(i));
  const cfg = config({ clusters: names.map((name) => ({ name })), clusterName: names[0]! });
  const local: KubeObject[] = [servedGateway()];
  const remote: KubeObject[][] = names.map(() => []);
  let pools = 0;
  let services = 0;
  for (let i = 0; i < spec.routes; i++) {
    local.push(...localPool(`pool-${i}`));
    pools++;
    services++;
    const from = exportersOf(i, clusters, exporters);
    local.push(poolImport(`pool-${i}`, [from.map(clusterName)]));
    local.push(routeObject(i));
    for (const c of from) {
      remote[c]!.push(pool(`pool-${i}`, { exported: true }), service(`pool-${i}-epp`, { type: 'LoadBalancer', ingress: [{ ip: `203.0.113.${c}` }] }));
      pools++;
      services++;
    }
  }
  const states = names.map((name, c) => state(name, c === 0 ? local : remote[c]!));
  const objects = states.reduce((a, s) => a + s.objects.length, 0);
  return {
    config: cfg,
    states,
    counts: { routes: spec.routes, clusters, pools, imports: spec.routes, services, objects },
  };
}

/** The local cluster's state with route `i`'s weights changed (one object edited). */
export function withChangedRoute(s: ClusterState, i: number, localWeight: number, revision: string): ClusterState {
  const name = `route-${i}`;
  const objects = s.objects.map((o) => (o.kind === 'HTTPRoute' && o.metadata.name === name ? routeObject(i, localWeight) : o));
  return { ...s, objects, revision };
}

/** One rule with `n` candidates: a local pool and an import exported by n-1 remote clusters. */
export function pickerClusterSet(n: number): SyntheticSet {
  const clusters = n;
  const names = Array.from({ length: clusters }, (_, i) => clusterName(i));
  const cfg = config({ clusters: names.map((name) => ({ name })), clusterName: names[0]! });
  const from = names.slice(1);
  const local: KubeObject[] = [
    servedGateway(),
    ...localPool('llm'),
    poolImport('llm', [from]),
    route('llm', [rule([poolRef('llm', 50), importRef('llm', 50)])], { hostnames: ['llm.example.com'] }),
  ];
  const states = names.map((name, c) =>
    state(name, c === 0 ? local : [pool('llm', { exported: true }), service('llm-epp', { type: 'LoadBalancer', ingress: [{ ip: `203.0.113.${c % 250}` }] })]),
  );
  return {
    config: cfg,
    states,
    counts: { routes: 1, clusters, pools: clusters, imports: 1, services: clusters, objects: states.reduce((a, s) => a + s.objects.length, 0) },
  };
}
