/**
 * The builder's caches (per-ClusterState indexes and resolutions, keyed by
 * object identity) must never change its answer: a build that hits them must
 * equal a build of the same inputs as fresh objects, where every cache misses.
 * On seeded random ClusterSets both must produce the same /debug/routes JSON
 * (byte for byte, key order included), the same routing table text and the same
 * route matches: cold, when nothing changes (every cache hit), after one member
 * changes, and when only the config object changes.
 * (When the caches were introduced, the same comparison was also made against a
 * frozen copy of the previous builder; see the history of this file.)
 */
import { describe, expect, it } from 'vitest';
import type { RouterConfig } from '../../src/config/schema.js';
import type { KubeObject } from '../../src/model/types.js';
import { PICK_POLICY_ANNOTATION } from '../../src/config/pick-policy.js';
import type { ClusterState } from '../../src/sources/types.js';
import { buildSnapshot, type BuildResult } from '../../src/snapshot/build.js';
import { formatRoutingTable, snapshotToJson } from '../../src/snapshot/describe.js';
import { matchRequest } from '../../src/snapshot/match.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';
import { syntheticClusterSet, withChangedRoute } from '../../bench/lib/synthetic.js';
import { seededRandom } from '../helpers/random.js';
import {
  config,
  gateway,
  importRef,
  listener,
  match,
  parentRef,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  service,
  state,
} from './fixtures.js';

const now = new Date('2025-01-01T00:00:00Z');

type Random = () => number;

/** Cluster names chosen so that "name/" order differs from name order ("a-b/" < "a.b/" < "a/"). */
const CLUSTER_NAMES = ['a', 'a-b', 'a.b', 'ab', 'cluster-b'];
const NAMESPACES = ['example', 'example-2'];
const POOLS = ['p', 'p-1', 'p.1', 'llm'];

function generator(random: Random) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const chance = (p: number): boolean => random() < p;
  const some = <T>(xs: readonly T[], p: number): T[] => xs.filter(() => chance(p));

  function objectsFor(cluster: string, local: boolean, members: readonly string[]): KubeObject[] {
    const out: KubeObject[] = [];
    if (local || chance(0.3)) {
      out.push(gateway('inf-gw', {
        listeners: chance(0.85)
          ? [listener('http', { allowedRoutes: { namespaces: { from: 'All' } } })]
          : pick([[listener('http', { allowedRoutes: { namespaces: { from: 'Same' } }, hostname: '*.example.com' })], [listener('tcp', { protocol: 'TCP' })]]),
        addresses: pick([['192.0.2.10'], ['192.0.2.10'], [], ['gw.example.com'], ['2001:db8::1']]),
      }));
    }
    for (const g of some(['gw-a', 'gw-b'], 0.5)) {
      out.push(gateway(g, { ns: pick(NAMESPACES), addresses: pick([['192.0.2.20'], [], [{ type: 'Hostname', value: 'x.example' }]]), listeners: pick([[listener('http', { port: 8080 })], []]) }));
    }
    // Most pools of the universe exist in most clusters, mostly usable.
    for (const ns of NAMESPACES) {
      for (const name of POOLS) {
        if (!chance(0.6)) continue;
        const epp = chance(0.9) ? `${name}-epp` : pick(['shared-epp', 'missing-epp']);
        out.push(pool(name, {
          ns,
          epp,
          exported: chance(0.85) ? true : pick([false, 'Local']),
          eppPort: chance(0.9) ? 9002 : pick([9003, null]),
          eppKind: chance(0.97) ? 'Service' : 'Pod',
          failureMode: pick(['FailClose', 'FailOpen'] as const),
          targetPorts: pick([[8000], [8000], [8000, 8001], []]),
          parents: chance(0.7) ? [parentRef('inf-gw', { namespace: 'example' })] : some([parentRef('gw-a', { namespace: ns }), parentRef('gw-b', { sectionName: 'http' })], 0.5),
        }));
        if (chance(0.9)) {
          out.push(service(epp, {
            ns,
            type: chance(0.9) ? pick(['ClusterIP', 'LoadBalancer']) : 'ExternalName',
            clusterIP: chance(0.85) ? pick(['10.96.0.10', 'fd00::10']) : pick(['', 'None']),
            externalIPs: pick([[], [], ['198.51.100.7']]),
            ingress: pick([[], [], [{ ip: '203.0.113.9' }], [{ hostname: 'lb.example.com' }], [{}]]),
            ports: chance(0.85) ? [9002] : pick([[9003], [], [9002, 9003]]),
          }));
        }
      }
    }
    if (chance(0.1)) out.push(...out.slice(0, 2)); // duplicates
    if (local) {
      for (const ns of NAMESPACES) {
        for (const name of POOLS) {
          if (!chance(0.5)) continue;
          const exporters = [some([...members, 'unknown-cluster'], 0.6), ...(chance(0.3) ? [some(members, 0.5)] : [])];
          out.push(poolImport(name, chance(0.05) ? [] : exporters, ns));
        }
      }
      const routes = 1 + Math.floor(random() * 6);
      for (let i = 0; i < routes; i++) {
        const ns = chance(0.7) ? 'example' : pick(NAMESPACES);
        const rules = Array.from({ length: 1 + Math.floor(random() * 2) }, (_, r) =>
          rule(
            Array.from({ length: Math.floor(random() * 4) }, () => {
              const ref = chance(0.5) ? poolRef : importRef;
              const opts = chance(0.05) ? { namespace: pick(NAMESPACES) } : chance(0.03) ? { kind: 'Service', group: '' } : {};
              return ref(pick(POOLS), pick([0, 1, 1, 10, 50]), opts);
            }),
            chance(0.8) ? [match({ path: '/v1' })] : some([match({ path: `/r${i}`, type: 'Exact' }), match({ path: '/x', headers: { 'x-model': 'm' } }), match({ path: '(', type: 'RegularExpression' })], 0.5),
            chance(0.2) ? `rule-${r}` : undefined,
          ),
        );
        const rt = route(`route-${pick(['a', 'b', 'c', 'd'])}-${i}`, rules, {
          ns,
          hostnames: pick([[], ['llm.example.com'], ['*.example.com'], ['a.example.com', 'b.example.com']]),
          parentRefs: chance(0.9) ? [parentRef('inf-gw', { namespace: 'example' })] : pick([[parentRef('inf-gw', { namespace: 'example', port: 81 })], [parentRef('other-gw')]]),
          ...(chance(0.3) ? { created: pick(['2024-01-01T00:00:00Z', '2024-06-01T00:00:00Z']) } : {}),
        });
        out.push(chance(0.3) ? { ...rt, metadata: { ...rt.metadata, annotations: { [PICK_POLICY_ANNOTATION]: pick(['weighted', 'prefer-local', 'least-loaded', 'bogus']) } } } : rt);
      }
    }
    return out;
  }

  function clusterSet(): { cfg: RouterConfig; states: ClusterState[] } {
    const members = some(CLUSTER_NAMES, 0.7);
    if (members.length === 0) members.push('a');
    const localCluster = pick(members);
    const overrides = (cluster: string) =>
      chance(0.3)
        ? {
            addressOverrides: {
              services: some([{ namespace: 'example', name: 'p-epp', address: pick(['192.0.2.50', '192.0.2.50:9100', '[2001:db8::5]:9100']) }, { namespace: 'other', name: 'llm-epp', address: 'epp.example.com' }], 0.5),
              gateways: some([{ namespace: 'example', name: 'inf-gw', address: pick(['192.0.2.60:80', '192.0.2.61', 'gw.example.com:80']) }], 0.5),
            },
          }
        : {};
    const cfg = config({
      mode: pick(['Endpoint', 'Parent'] as const),
      clusterName: localCluster,
      clusters: members.map((name) => ({ name, ...overrides(name) })),
    });
    const states: ClusterState[] = [];
    for (const cluster of members) {
      if (chance(0.08)) continue; // not loaded
      states.push(state(cluster, objectsFor(cluster, cluster === localCluster, members), {
        stale: chance(0.1),
        revision: `rev-${Math.floor(random() * 1000)}`,
        errors: chance(0.1) ? [{ object: 'InferencePool example/bad', path: 'spec.targetPorts', message: 'is required', origin: `${cluster}: pools.yaml#1` }] : [],
      }));
    }
    if (chance(0.1)) states.push(state('not-a-member', objectsFor('not-a-member', false, members)));
    if (chance(0.1) && states[0]) states.push(state(states[0].cluster, []));
    return { cfg, states: states.sort(() => random() - 0.5) };
  }

  return { pick, chance, objectsFor, clusterSet };
}

const json = (s: RoutingSnapshot): string => JSON.stringify(snapshotToJson(s));

const REQUESTS = ['llm.example.com', 'a.example.com', 'x.example.com', 'other.test'].flatMap((authority) =>
  ['/v1/chat', '/r0', '/r1', '/x', '/'].map((path) => ({ authority, path, method: 'POST', header: (h: string) => (h === 'x-model' ? 'm' : undefined) })),
);

function expectSame(actual: BuildResult, expected: BuildResult, label: string): void {
  expect(json(actual.snapshot), label).toBe(json(expected.snapshot));
  expect(formatRoutingTable(actual.snapshot, actual.diagnostics), label).toBe(formatRoutingTable(expected.snapshot, expected.diagnostics));
  for (const req of REQUESTS) {
    const a = matchRequest(actual.snapshot, req);
    const e = matchRequest(expected.snapshot, req);
    const key = (m: typeof a) => (m.type === 'matched' ? `${m.rule.route.namespace}/${m.rule.route.name}#${m.rule.index}` : m.type);
    expect(key(a), `${label} ${req.authority}${req.path}`).toBe(key(e));
  }
  // One Candidate object per id, shared by every group that uses it.
  for (const r of actual.snapshot.routes) {
    for (const rl of r.rules) for (const g of rl.backends) for (const c of g.candidates) expect(actual.snapshot.candidates.get(c.id)).toBe(c);
  }
}

/** The same inputs as new objects: no cache keyed by their identity can hit. */
const fresh = (cfg: RouterConfig, states: readonly ClusterState[], version: number): BuildResult =>
  buildSnapshot({ config: { ...cfg }, clusters: states.map((s) => ({ ...s })), version, now });

const both = (cfg: RouterConfig, states: readonly ClusterState[], version: number) => ({
  actual: buildSnapshot({ config: cfg, clusters: states, version, now }),
  expected: fresh(cfg, states, version),
});

describe('buildSnapshot answers the same with and without its caches', () => {
  it('on 400 seeded random ClusterSets: cold, every cache hit, one member changed, config changed', () => {
    for (let seed = 1; seed <= 400; seed++) {
      const random = seededRandom(seed);
      const gen = generator(random);
      const { cfg, states } = gen.clusterSet();
      const label = `seed ${seed}`;

      const cold = both(cfg, states, 1);
      expectSame(cold.actual, cold.expected, `${label} cold`);

      const again = both(cfg, states, 2); // the same state objects: indexes and resolutions come from the caches
      expectSame(again.actual, again.expected, `${label} cached`);

      if (states.length > 0) {
        const i = Math.floor(random() * states.length);
        const s = states[i]!;
        const changed = state(s.cluster, gen.objectsFor(s.cluster, s.cluster === cfg.clusterName, cfg.clusters.map((c) => c.name)), { revision: 'changed' });
        const next = states.map((x, k) => (k === i ? changed : x));
        const one = both(cfg, next, 3);
        expectSame(one.actual, one.expected, `${label} one member changed`);
      }

      // Same states, new config object (a different mode): cached resolutions must not leak across configs.
      const cfg2 = config({ mode: cfg.mode === 'Parent' ? 'Endpoint' : 'Parent', clusterName: cfg.clusterName, clusters: cfg.clusters.map((c) => ({ name: c.name, addressOverrides: c.addressOverrides })) });
      const reconfigured = both(cfg2, states, 4);
      expectSame(reconfigured.actual, reconfigured.expected, `${label} config changed`);
    }
  });

  it('on the benchmark ClusterSet (1,000 routes, 20 clusters), cold and after route edits', () => {
    const set = syntheticClusterSet({ routes: 1000 });
    const cold = both(set.config, set.states, 1);
    expectSame(cold.actual, cold.expected, 'cold');
    expect(cold.actual.snapshot.candidates.size).toBe(9000);
    let local = set.states[0]!;
    for (let k = 0; k < 3; k++) {
      local = withChangedRoute(local, k * 7, 30 + k, `edit-${k}`);
      const res = both(set.config, [local, ...set.states.slice(1)], 2 + k);
      expectSame(res.actual, res.expected, `edit ${k}`);
      // Unchanged members' candidates are reused as they are.
      const id = 'cluster-01/example/pool-0';
      expect(res.actual.snapshot.candidates.get(id)).toBe(cold.actual.snapshot.candidates.get(id));
    }
  });
});
