import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/model/types.js';
import type { BackendGroup, Candidate } from '../../src/snapshot/types.js';
import {
  build,
  config,
  importRef,
  LOCAL,
  localPool,
  match,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  servedGateway,
} from './fixtures.js';

const cfg3 = config({ clusters: [{ name: LOCAL }, { name: 'cluster-b' }, { name: 'cluster-c' }] });

function groups(local: KubeObject[], remote: Record<string, KubeObject[]> = {}, cfg = cfg3) {
  const res = build(cfg, { [LOCAL]: [servedGateway(), ...local], ...remote });
  const backends: readonly BackendGroup[] = res.snapshot.routes[0]?.rules[0]?.backends ?? [];
  return { ...res, backends };
}

const ids = (cs: readonly Candidate[]) => cs.map((c) => c.id);

describe('backendRef expansion', () => {
  it('an InferencePool backendRef is one local candidate', () => {
    const { backends } = groups([...localPool('llm-pool', { failureMode: 'FailOpen', targetPorts: [8000, 8001] }), route('r', [rule([poolRef('llm-pool', 3)])])]);
    expect(backends).toHaveLength(1);
    expect(backends[0]!.weight).toBe(3);
    expect(backends[0]!.ref).toEqual({ group: 'inference.networking.k8s.io', kind: 'InferencePool', namespace: 'example', name: 'llm-pool' });
    const c = backends[0]!.candidates[0]!;
    expect(c).toMatchObject({ id: 'cluster-a/example/llm-pool', cluster: LOCAL, local: true, via: 'epp', failureMode: 'FailOpen', targetPorts: [8000, 8001] });
  });

  it('an InferencePoolImport backendRef is one candidate per exporting cluster, deduplicated across controllers', () => {
    const { backends } = groups(
      [poolImport('llm-pool', [['cluster-b', 'cluster-c'], ['cluster-b']]), route('r', [rule([importRef('llm-pool')])])],
      { 'cluster-b': localPool('llm-pool', { exported: true }), 'cluster-c': localPool('llm-pool', { exported: true }) },
    );
    expect(ids(backends[0]!.candidates)).toEqual(['cluster-b/example/llm-pool', 'cluster-c/example/llm-pool']);
    expect(backends[0]!.candidates.every((c) => !c.local && c.via === 'epp')).toBe(true);
    expect(backends[0]!.excluded).toEqual([]);
  });

  it('the local cluster listed by an import is the local pool (no export annotation needed)', () => {
    const { backends } = groups(
      [...localPool('llm-pool'), poolImport('llm-pool', [[LOCAL, 'cluster-b']]), route('r', [rule([importRef('llm-pool')])])],
      { 'cluster-b': localPool('llm-pool', { exported: true }) },
    );
    expect(backends[0]!.candidates.map((c) => [c.id, c.local])).toEqual([
      ['cluster-a/example/llm-pool', true],
      ['cluster-b/example/llm-pool', false],
    ]);
  });

  it('excludes an exporting cluster that is not a configured member (UnknownCluster)', () => {
    const { backends, diagnostics } = groups(
      [poolImport('llm-pool', [['cluster-b', 'cluster-z']]), route('r', [rule([importRef('llm-pool')])])],
      { 'cluster-b': localPool('llm-pool', { exported: true }) },
    );
    expect(ids(backends[0]!.candidates)).toEqual(['cluster-b/example/llm-pool']);
    expect(backends[0]!.excluded).toEqual([expect.objectContaining({ subject: 'cluster-z/example/llm-pool', reason: 'UnknownCluster' })]);
    const d = diagnostics.find((x) => x.reason === 'UnknownCluster');
    expect(d).toMatchObject({ severity: 'warning', subject: 'cluster-a: InferencePoolImport example/llm-pool', path: 'status.controllers[0].exportingClusters[1]' });
    expect(d!.message).toContain('config clusters[]');
  });

  it('reports every unknown exporting cluster separately', () => {
    const { backends, diagnostics } = groups([poolImport('llm-pool', [['cluster-y'], ['cluster-z', 'cluster-y']]), route('r', [rule([importRef('llm-pool')])])]);
    expect(backends[0]!.excluded.map((x) => x.subject)).toEqual(['cluster-y/example/llm-pool', 'cluster-z/example/llm-pool']);
    expect(diagnostics.filter((x) => x.reason === 'UnknownCluster').map((x) => [x.severity, x.path])).toEqual([
      ['error', 'status.controllers[0].exportingClusters[0]'],
      ['error', 'status.controllers[1].exportingClusters[0]'],
    ]);
  });

  it('excludes a remote pool without the export annotation (NotExported)', () => {
    const { backends } = groups(
      [poolImport('llm-pool', [['cluster-b', 'cluster-c']]), route('r', [rule([importRef('llm-pool')])])],
      { 'cluster-b': localPool('llm-pool'), 'cluster-c': localPool('llm-pool', { exported: 'Cluster' }) },
    );
    expect(backends[0]!.candidates).toEqual([]);
    expect(backends[0]!.excluded.map((x) => [x.subject, x.reason])).toEqual([
      ['cluster-b/example/llm-pool', 'NotExported'],
      ['cluster-c/example/llm-pool', 'NotExported'],
    ]);
    expect(backends[0]!.excluded[1]!.message).toContain('found "Cluster"');
  });

  it('reports a missing import (ImportNotFound) and an import without exporting clusters (NoExportingClusters)', () => {
    const missing = groups([route('r', [rule([importRef('llm-pool')])])]);
    expect(missing.backends[0]!.excluded.map((x) => x.reason)).toEqual(['ImportNotFound']);
    const empty = groups([poolImport('llm-pool', [[]]), route('r', [rule([importRef('llm-pool')])])]);
    expect(empty.backends[0]!.excluded.map((x) => x.reason)).toEqual(['NoExportingClusters']);
  });

  it('reports a missing pool locally and remotely (PoolNotFound), naming unloaded clusters', () => {
    const local = groups([route('r', [rule([poolRef('nope')])])]);
    expect(local.backends[0]!.excluded).toEqual([expect.objectContaining({ subject: 'cluster-a/example/nope', reason: 'PoolNotFound' })]);
    const remote = groups([poolImport('llm-pool', [['cluster-b', 'cluster-c']]), route('r', [rule([importRef('llm-pool')])])], { 'cluster-b': [] });
    expect(remote.backends[0]!.excluded.map((x) => x.reason)).toEqual(['PoolNotFound', 'PoolNotFound']);
    expect(remote.backends[0]!.excluded[1]!.message).toContain('no objects are loaded for cluster cluster-c');
  });

  it('refuses other kinds and groups (InvalidKind)', () => {
    const { backends, diagnostics } = groups([
      ...localPool('llm-pool'),
      route('r', [rule([
        { group: '', kind: 'Service', name: 'svc', weight: 1 },
        poolRef('llm-pool', 1, { group: 'inference.networking.x-k8s.io' }),
        importRef('llm-pool', 1, { group: 'inference.networking.k8s.io' }),
      ])]),
    ]);
    expect(backends.map((b) => b.excluded.map((x) => x.reason))).toEqual([['InvalidKind'], ['InvalidKind'], ['InvalidKind']]);
    const d = diagnostics.filter((x) => x.reason === 'InvalidKind');
    expect(d.map((x) => x.path)).toEqual(['spec.rules[0].backendRefs[0]', 'spec.rules[0].backendRefs[1]', 'spec.rules[0].backendRefs[2]']);
    expect(d[0]!.subject).toBe('cluster-a: HTTPRoute example/r');
    expect(d.map((x) => x.status)).toEqual(Array(3).fill({ kind: 'HTTPRoute', namespace: 'example', name: 'r', condition: 'ResolvedRefs' }));
    // The refusal is the route's own diagnostic: no second BackendNotFound for the same backendRef.
    expect(diagnostics.filter((x) => x.reason === 'BackendNotFound')).toEqual([]);
  });

  it('refuses cross-namespace backendRefs (RefNotPermitted; no ReferenceGrant support)', () => {
    const { backends, diagnostics } = groups([...localPool('llm-pool', { ns: 'other' }), route('r', [rule([poolRef('llm-pool', 1, { namespace: 'other' })])])]);
    expect(backends[0]!.ref.namespace).toBe('other');
    expect(backends[0]!.excluded[0]!.reason).toBe('RefNotPermitted');
    expect(backends[0]!.excluded[0]!.message).toContain('ReferenceGrant');
    expect(diagnostics.find((x) => x.reason === 'RefNotPermitted')?.status).toEqual({ kind: 'HTTPRoute', namespace: 'example', name: 'r', condition: 'ResolvedRefs' });
  });

  it('an unresolvable backendRef keeps its weight with no candidates; its diagnostics are errors', () => {
    const { snapshot, backends, diagnostics } = groups([...localPool('good'), route('r', [rule([poolRef('good', 70), poolRef('missing', 30)])])]);
    expect(backends.map((b) => [b.weight, b.candidates.length])).toEqual([[70, 1], [30, 0]]);
    expect(snapshot.routes[0]!.rules[0]!.totalWeight).toBe(100);
    const d = diagnostics.find((x) => x.reason === 'PoolNotFound');
    expect(d?.severity).toBe('error');
    expect(d?.message).toContain('HTTP 500');
    // The route's own diagnostic turns its ResolvedRefs condition False (upstream reason BackendNotFound).
    expect(diagnostics.filter((x) => x.reason === 'BackendNotFound')).toEqual([{
      severity: 'error',
      subject: 'cluster-a: HTTPRoute example/r',
      path: 'spec.rules[0].backendRefs[1]',
      reason: 'BackendNotFound',
      message: 'backendRef InferencePool example/missing has no usable pool (cluster-a/example/missing: PoolNotFound); its share of requests gets HTTP 500',
      status: { kind: 'HTTPRoute', namespace: 'example', name: 'r', condition: 'ResolvedRefs' },
    }]);
  });

  it('exclusions that leave other candidates are warnings; weight-0 groups stay', () => {
    const { backends, diagnostics } = groups(
      [...localPool('a'), poolImport('b', [['cluster-b', 'cluster-z']]), route('r', [rule([poolRef('a', 1), importRef('b', 0), poolRef('gone', 0)])])],
      { 'cluster-b': localPool('b', { exported: true }) },
    );
    expect(backends.map((b) => b.weight)).toEqual([1, 0, 0]);
    expect(diagnostics.find((x) => x.reason === 'UnknownCluster')?.severity).toBe('warning');
    expect(diagnostics.find((x) => x.reason === 'PoolNotFound')?.severity).toBe('warning');
    // Only the weight-0 ref without any pool fails to resolve; the import keeps its cluster-b pool.
    expect(diagnostics.filter((x) => x.reason === 'BackendNotFound').map((x) => [x.severity, x.path])).toEqual([['warning', 'spec.rules[0].backendRefs[2]']]);
  });

  it('negative weights are treated as 0', () => {
    const { backends } = groups([...localPool('a'), route('r', [rule([poolRef('a', -5)])])]);
    expect(backends[0]!.weight).toBe(0);
  });

  it('shares one Candidate object per pool across rules, routes and import/direct refs', () => {
    const { snapshot } = build(cfg3, {
      [LOCAL]: [
        servedGateway(),
        ...localPool('llm-pool'),
        poolImport('llm-pool', [[LOCAL, 'cluster-b']]),
        route('r1', [rule([poolRef('llm-pool')]), rule([importRef('llm-pool')], [match({ path: '/x' })])]),
        route('r2', [rule([poolRef('llm-pool', 5), importRef('llm-pool', 5)])]),
      ],
      'cluster-b': localPool('llm-pool', { exported: true }),
    });
    const all = snapshot.routes.flatMap((r) => r.rules.flatMap((ru) => ru.backends.flatMap((b) => b.candidates)));
    const local = all.filter((c) => c.id === 'cluster-a/example/llm-pool');
    expect(local).toHaveLength(4);
    for (const c of local) expect(c).toBe(snapshot.candidates.get('cluster-a/example/llm-pool'));
    expect([...snapshot.candidates.keys()]).toEqual(['cluster-a/example/llm-pool', 'cluster-b/example/llm-pool']);
    const remote = all.filter((c) => c.id === 'cluster-b/example/llm-pool');
    expect(new Set(remote).size).toBe(1);
  });

  it('keeps rule names and rule indices', () => {
    const { snapshot } = build(cfg3, { [LOCAL]: [servedGateway(), ...localPool('a'), route('r', [rule([poolRef('a')], [match()], 'first'), rule([])])] });
    expect(snapshot.routes[0]!.rules.map((x) => [x.index, x.name, x.totalWeight])).toEqual([[0, 'first', 1], [1, undefined, 0]]);
  });

  it('excluded pools are not in snapshot.candidates', () => {
    const { snapshot } = build(cfg3, { [LOCAL]: [servedGateway(), pool('a'), route('r', [rule([poolRef('a')])])] });
    expect(snapshot.candidates.size).toBe(0);
  });

  it('manifest mode derives an import nobody wrote from the members\' exported pools (source: derived)', () => {
    const { backends, diagnostics } = groups([...localPool('llm-pool'), route('r', [rule([importRef('llm-pool')])])], {
      'cluster-b': localPool('llm-pool', { exported: true }),
      'cluster-c': localPool('llm-pool', { exported: 'Nope' }),
    });
    expect(backends[0]!.import).toEqual({ source: 'derived', exportingClusters: ['cluster-b'] });
    expect(ids(backends[0]!.candidates)).toEqual(['cluster-b/example/llm-pool']);
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    // An import object without status (what kubectl apply leaves) is derived the same way.
    const empty = groups([poolImport('llm-pool', []), route('r', [rule([importRef('llm-pool')])])], { 'cluster-b': localPool('llm-pool', { exported: true }) });
    expect(empty.backends[0]!.import).toEqual({ source: 'derived', exportingClusters: ['cluster-b'] });
  });

  it('an import object that lists exporting clusters is honoured as written (source: object)', () => {
    const { backends } = groups([poolImport('llm-pool', [['cluster-c']]), route('r', [rule([importRef('llm-pool')])])], {
      'cluster-b': localPool('llm-pool', { exported: true }),
      'cluster-c': localPool('llm-pool', { exported: true }),
    });
    expect(backends[0]!.import).toEqual({ source: 'object', exportingClusters: ['cluster-c'] });
    expect(ids(backends[0]!.candidates)).toEqual(['cluster-c/example/llm-pool']);
  });

  it('derives nothing when no member exports the pool, or when the local member reads a Kubernetes API', () => {
    const none = groups([route('r', [rule([importRef('llm-pool')])])], { 'cluster-b': localPool('llm-pool') });
    expect(none.backends[0]!.excluded.map((x) => x.reason)).toEqual(['ImportNotFound']);
    expect(none.backends[0]!.excluded[0]!.message).toMatch(/no member exports InferencePool example\/llm-pool/);
    const kube = config({ clusters: [{ name: LOCAL, manifests: undefined, kubernetes: { inCluster: true } } as never, { name: 'cluster-b' }] });
    const k = groups([route('r', [rule([importRef('llm-pool')])])], { 'cluster-b': localPool('llm-pool', { exported: true }) }, kube);
    expect(k.backends[0]!.import).toBeUndefined();
    expect(k.backends[0]!.excluded.map((x) => x.reason)).toEqual(['ImportNotFound']);
  });

  it('a pool without endpointPickerRef is left out (EndpointPickerRefMissing) while the route\'s other backendRef serves', () => {
    const bare = pool('bare');
    const { endpointPickerRef: _, ...spec } = bare.spec;
    const { backends, snapshot } = groups([...localPool('ok'), { ...bare, spec }, route('r', [rule([poolRef('ok'), poolRef('bare')])])]);
    expect(ids(backends[0]!.candidates)).toEqual(['cluster-a/example/ok']);
    expect(backends[1]!.excluded.map((x) => x.reason)).toEqual(['EndpointPickerRefMissing']);
    expect(snapshot.excludedObjects).toMatchObject([
      { cluster: LOCAL, kind: 'InferencePool', namespace: 'example', name: 'bare', field: 'spec.endpointPickerRef', reason: 'EndpointPickerRefMissing' },
    ]);
  });
});

