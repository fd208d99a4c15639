import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/model/types.js';
import { buildSnapshot } from '../../src/snapshot/build.js';
import { snapshotToJson } from '../../src/snapshot/describe.js';
import { matchRequest } from '../../src/snapshot/match.js';
import { seededRandom } from '../helpers/random.js';
import {
  build,
  config,
  gateway,
  importRef,
  listener,
  LOCAL,
  NS,
  localPool,
  match,
  parentRef,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  servedGateway,
  service,
  state,
} from './fixtures.js';

const now = new Date('2025-01-01T00:00:00Z');

describe('buildSnapshot', () => {
  it('carries version, build time, local cluster, mode and per-cluster source state', () => {
    const { snapshot } = buildSnapshot({
      config: config({ mode: 'Parent' }),
      clusters: [state(LOCAL, [servedGateway()], { revision: 'r1' }), state('cluster-b', [], { stale: true, revision: 'r2' })],
      version: 42,
      now,
    });
    expect(snapshot).toMatchObject({ version: 42, builtAt: '2025-01-01T00:00:00.000Z', localCluster: LOCAL, mode: 'Parent' });
    expect(snapshot.clusters).toEqual([
      { name: LOCAL, revision: 'r1', stale: false, objects: 1 },
      { name: 'cluster-b', revision: 'r2', stale: true, objects: 0 },
    ]);
  });

  it('reports states of unknown clusters, unloaded and stale members, duplicate objects and source errors', () => {
    const { snapshot, diagnostics } = buildSnapshot({
      config: config({ clusters: [{ name: LOCAL }, { name: 'cluster-b' }, { name: 'cluster-c' }] }),
      clusters: [
        state(LOCAL, [servedGateway(), servedGateway()], {
          errors: [{ object: 'InferencePool example/bad', path: 'spec.targetPorts[0].number', message: 'must be 1..65535', origin: 'a.yaml#2' }],
        }),
        state(LOCAL, []),
        state('cluster-b', [], { stale: true }),
        state('cluster-x', []),
      ],
      version: 1,
      now,
    });
    const by = (reason: string) => diagnostics.filter((d) => d.reason === reason);
    expect(by('UnknownClusterState')[0]!.message).toContain('cluster-x');
    expect(by('ClusterNotLoaded')[0]!.subject).toBe('cluster cluster-c');
    expect(by('ClusterStale')[0]!.subject).toBe('cluster cluster-b');
    expect(by('DuplicateObject')[0]!.subject).toBe('cluster-a: Gateway example/inf-gw');
    expect(by('DuplicateClusterState')).toHaveLength(1);
    expect(by('InvalidObject')[0]).toMatchObject({ subject: 'cluster-a: InferencePool example/bad', path: 'spec.targetPorts[0].number' });
    expect(by('InvalidObject')[0]!.message).toContain('a.yaml#2');
    expect(snapshot.clusters.map((c) => c.name)).toEqual([LOCAL, 'cluster-b']);
  });

  it('returns the same diagnostics it stores, errors first', () => {
    const { snapshot, diagnostics } = build(config(), {
      [LOCAL]: [...localPool('p'), route('r', [rule([poolRef('missing')])])],
      'cluster-b': [],
    });
    expect(snapshot.diagnostics).toEqual(diagnostics);
    expect(diagnostics.map((d) => [d.severity, d.subject, d.reason])).toEqual([
      ['error', 'cluster-a: HTTPRoute example/r', 'BackendNotFound'],
      ['error', 'cluster-a: InferencePool example/missing', 'PoolNotFound'],
      ['info', 'cluster-a: Gateway example/inf-gw', 'GatewayNotFound'],
    ]);
  });

  it('is pure: frozen inputs are not mutated and equal inputs give equal snapshots', () => {
    const objects: KubeObject[] = [
      servedGateway(),
      ...localPool('llm-pool'),
      poolImport('llm-pool', [[LOCAL, 'cluster-b']]),
      route('r', [rule([poolRef('llm-pool', 50), importRef('llm-pool', 50)], [match({ path: '/v1' })])], { hostnames: ['*.model.com'] }),
    ];
    const remote = [pool('llm-pool', { exported: true, epp: 'e', parents: [parentRef('g')] }), service('e'), gateway('g', { addresses: ['192.0.2.1'] })];
    const deepFreeze = <T>(o: T): T => {
      if (o !== null && typeof o === 'object' && !Object.isFrozen(o)) {
        Object.freeze(o);
        for (const v of Object.values(o)) deepFreeze(v);
      }
      return o;
    };
    const input = deepFreeze({
      config: config({ mode: 'Parent' }),
      clusters: [state(LOCAL, objects), state('cluster-b', remote)],
      version: 3,
      now,
    });
    const one = buildSnapshot(input);
    const two = buildSnapshot(input);
    expect(snapshotToJson(one.snapshot)).toEqual(snapshotToJson(two.snapshot));
    expect(one.snapshot.candidates.get('cluster-b/example/llm-pool')?.via).toBe('parent');
    const m = matchRequest(one.snapshot, { authority: 'a.model.com', path: '/v1/x', method: 'GET', header: () => undefined });
    expect(m.type).toBe('matched');
  });

  it('never throws on odd objects (seeded fuzz)', () => {
    const random = seededRandom(99);
    const pickOf = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const names = ['p', 'q', 'gw-b', 'inf-gw', 'e', ''];
    const clusters = [LOCAL, 'cluster-b', 'cluster-z', ''];
    for (let i = 0; i < 200; i++) {
      const objs = (): KubeObject[] => {
        const out: KubeObject[] = [];
        const n = Math.floor(random() * 8);
        for (let j = 0; j < n; j++) {
          const name = pickOf(names);
          const kind = pickOf(['pool', 'import', 'svc', 'gw', 'route'] as const);
          if (kind === 'pool') out.push(pool(name, { exported: random() < 0.5, epp: pickOf(names), eppPort: pickOf([9002, null, 0]), parents: [parentRef(pickOf(names), { sectionName: pickOf(['http', 'x']) })], eppKind: pickOf(['Service', 'Pod']) }));
          if (kind === 'import') out.push(poolImport(name, [[pickOf(clusters), pickOf(clusters)], []]));
          if (kind === 'svc') out.push(service(name, { clusterIP: pickOf(['', 'None', '10.0.0.1', 'fd00::1']), type: pickOf(['ClusterIP', 'ExternalName']), ingress: pickOf([[], [{}], [{ hostname: 'x' }]]) }));
          if (kind === 'gw') out.push(gateway(name, { addresses: pickOf([[], ['1.2.3.4'], ['host'], [{ type: 'Hostname', value: '1.2.3.4' }]]), listeners: pickOf([[], [listener('http', { hostname: pickOf(['*.a.com', 'b.com', '']) })]]) }));
          if (kind === 'route') {
            out.push(route(name, [
              rule([poolRef(pickOf(names), pickOf([0, 1, -1, 1e6])), importRef(pickOf(names), 1, random() < 0.2 ? { namespace: 'x' } : {})], [
                match({ path: pickOf(['/', '/a/', '(', '']), type: pickOf(['Exact', 'PathPrefix', 'RegularExpression'] as const), headers: random() < 0.3 ? [{ type: 'RegularExpression', name: 'h', value: '[' }] : {} }),
              ]),
            ], { hostnames: pickOf([[], ['*.a.com'], ['B.COM.'], ['*']]), parentRefs: [parentRef(pickOf(names), { port: pickOf([undefined, 80, 81]) })] }));
          }
        }
        return out;
      };
      const cfg = config({ mode: pickOf(['Endpoint', 'Parent'] as const), clusters: [{ name: LOCAL }, { name: 'cluster-b' }] });
      expect(() => {
        const res = build(cfg, { [LOCAL]: objs(), 'cluster-b': objs() });
        matchRequest(res.snapshot, { authority: pickOf(['b.com', 'x.a.com:1', '[::1]', '']), path: pickOf(['/', '/a?h=1', '']), method: 'GET', header: () => 'v' });
      }).not.toThrow();
    }
  });

  it('pure modules import no I/O module', () => {
    const PURE_PACKAGES = new Set(['re2js']); // computation only (the RE2 regex engine)
    const dirs = ['../../src/snapshot/', '../../src/picker/'].map((d) => fileURLToPath(new URL(d, import.meta.url)));
    for (const dir of dirs) {
      for (const f of readdirSync(dir).filter((x) => x.endsWith('.ts'))) {
        const src = readFileSync(dir + f, 'utf8');
        const specs = [...src.matchAll(/^import\s[^;]*?from\s+'([^']+)'/gms)].map((m) => m[1]!);
        for (const s of specs) expect(s.startsWith('.') || PURE_PACKAGES.has(s), `${f} imports ${s}`).toBe(true);
      }
    }
  });

  it('lists the objects a source left out, one entry per field, as error diagnostics that do not stop the rest', () => {
    const cfg = config();
    const ref = { kind: 'HTTPRoute', namespace: NS, name: 'bad' };
    const errors = [
      { object: 'HTTPRoute example/bad', ref, path: 'spec.rules[0].backendRefs[0].weight', message: 'must be >= 0', origin: 'r.yaml#1' },
      { object: 'InferencePool example/dup', ref: { ...ref, kind: 'InferencePool', name: 'dup' }, reason: 'DuplicateObject', path: 'metadata.name', message: 'duplicate object' },
    ];
    const { snapshot, diagnostics } = buildSnapshot({
      config: cfg,
      clusters: [state(LOCAL, [servedGateway(), ...localPool('p1'), route('r', [rule([poolRef('p1')])])], { errors })],
      version: 1,
    });
    expect([...snapshot.candidates.keys()]).toEqual(['cluster-a/example/p1']);
    expect(snapshot.excludedObjects).toEqual([
      { cluster: LOCAL, kind: 'HTTPRoute', namespace: NS, name: 'bad', field: 'spec.rules[0].backendRefs[0].weight', reason: 'InvalidObject', message: 'must be >= 0', origin: 'r.yaml#1' },
      { cluster: LOCAL, kind: 'InferencePool', namespace: NS, name: 'dup', field: 'metadata.name', reason: 'DuplicateObject', message: 'duplicate object' },
    ]);
    expect(diagnostics.filter((d) => d.severity === 'error').map((d) => [d.subject, d.reason, d.status])).toEqual([
      // A local route left out carries the upstream reason and the route's Accepted condition.
      ['cluster-a: HTTPRoute example/bad', 'UnsupportedValue', { kind: 'HTTPRoute', namespace: NS, name: 'bad', condition: 'Accepted' }],
      ['cluster-a: InferencePool example/dup', 'DuplicateObject', undefined],
    ]);
    expect(snapshotToJson(snapshot).excludedObjects).toHaveLength(2);
  });
});

