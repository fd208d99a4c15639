import { describe, expect, it } from 'vitest';
import { planImportStatuses, withTransitionTimes, type RawControllerEntry } from '../../src/controller/import-status.js';
import type { InferencePoolImport } from '../../src/model/types.js';
import type { BackendGroup, Candidate, Exclusion, RouteSummary } from '../../src/snapshot/types.js';

const ME = 'mcip-router.dev/import-controller';
const T0 = '2025-01-01T00:00:00Z';
const T1 = '2025-01-01T00:05:00Z';

function imp(name: string, controllers: InferencePoolImport['status']['controllers'] = [], generation = 1): InferencePoolImport {
  return {
    kind: 'InferencePoolImport',
    apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
    metadata: { name, namespace: 'default', generation, labels: {}, annotations: {} },
    status: { controllers },
  };
}

function candidate(cluster: string): Candidate {
  return { via: 'epp', id: `${cluster}/default/p`, cluster, namespace: 'default', pool: 'p', local: false, failureMode: 'FailClose', targetPorts: [8000] } as unknown as Candidate;
}

function group(name: string, clusters: string[], excluded: Exclusion[] = [], kind = 'InferencePoolImport'): BackendGroup {
  const g = kind === 'InferencePoolImport' ? 'inference.networking.x-k8s.io' : 'inference.networking.k8s.io';
  return { ref: { group: g, kind, namespace: 'default', name }, weight: 1, candidates: clusters.map(candidate), excluded };
}

function route(name: string, parents: string[], backends: BackendGroup[]): RouteSummary {
  return {
    route: { namespace: 'default', name },
    hostnames: [],
    parents,
    rules: [{ route: { namespace: 'default', name }, index: 0, backends, totalWeight: backends.length, matches: [] }],
  };
}

const plan = (imports: InferencePoolImport[], routes: RouteSummary[], now = T0) => planImportStatuses({ controllerName: ME, imports, routes, now });

describe('planImportStatuses', () => {
  it('referenced import: one parent per served Gateway, Accepted and ResolvedRefs True', () => {
    const [p] = plan([imp('llm', [], 3)], [route('r1', ['default/gw-a', 'default/gw-b'], [group('llm', ['cluster-b', 'cluster-c'])])]);
    expect(p?.desired?.name).toBe(ME);
    expect(p?.desired?.parents.map((x) => x.parentRef)).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw-a' },
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw-b' },
    ]);
    const conds = p?.desired?.parents[0]?.conditions;
    expect(conds).toEqual([
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'routable via exporting cluster(s): cluster-b, cluster-c', observedGeneration: 3, lastTransitionTime: T0 },
      { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: expect.any(String), observedGeneration: 3, lastTransitionTime: T0 },
    ]);
    expect(p?.desired?.parents[0]?.controllerName).toBe(ME);
  });

  it('no exporting clusters -> Accepted False NoExportingClusters, ResolvedRefs True', () => {
    const ex: Exclusion = { subject: 'InferencePoolImport default/llm', reason: 'NoExportingClusters', message: 'none' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'False', reason: 'NoExportingClusters' });
    expect(resolved).toMatchObject({ status: 'True' });
  });

  it('unresolvable EPP -> Accepted False NoUsableClusters, ResolvedRefs False with the exclusion reason', () => {
    const ex: Exclusion = { subject: 'cluster-b/default/llm', reason: 'ServiceNotFound', message: 'no Service default/llm-epp in cluster-b' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'False', reason: 'NoUsableClusters' });
    expect(accepted?.message).toContain('ServiceNotFound');
    expect(resolved).toMatchObject({ status: 'False', reason: 'ServiceNotFound' });
    expect(resolved?.message).toContain('cluster-b/default/llm');
  });

  it('partly resolvable -> Accepted True, ResolvedRefs False', () => {
    const ex: Exclusion = { subject: 'cluster-c/default/llm', reason: 'UnknownCluster', message: 'not configured' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(resolved).toMatchObject({ status: 'False', reason: 'UnknownCluster' });
  });

  it('keeps lastTransitionTime while a status is unchanged, even when the message changes', () => {
    const first = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'])])], T0)[0]?.desired as RawControllerEntry;
    const ours = { name: ME, exportingClusters: [], conditions: [], parents: first.parents.map((p) => ({ ...p, parentRef: { ...p.parentRef } })) };
    const again = plan([imp('llm', [ours])], [route('r1', ['default/gw'], [group('llm', ['cluster-b', 'cluster-c'])])], T1)[0]?.desired;
    expect(again?.parents[0]?.conditions.map((c) => c.lastTransitionTime)).toEqual([T0, T0]);
    const ex: Exclusion = { subject: 'x', reason: 'ServiceNotFound', message: 'm' };
    const flipped = plan([imp('llm', [ours])], [route('r1', ['default/gw'], [group('llm', [], [ex])])], T1)[0]?.desired;
    expect(flipped?.parents[0]?.conditions.map((c) => c.lastTransitionTime)).toEqual([T1, T1]);
  });

  it('unreferenced import carrying our entry -> removal plan; without it -> no plan', () => {
    const ours = { name: ME, exportingClusters: [], conditions: [], parents: [] };
    const other = { name: 'example.com/export', exportingClusters: [{ name: 'cluster-b' }], conditions: [], parents: [] };
    const plans = plan([imp('mine', [other, ours]), imp('theirs', [other])], [route('r1', ['default/gw'], [group('elsewhere', ['cluster-b'])])]);
    expect(plans).toEqual([{ namespace: 'default', name: 'mine', desired: undefined, droppedParents: 0 }]);
  });

  it('routes without served parents and InferencePool backends do not count', () => {
    const plans = plan([imp('llm')], [route('r1', [], [group('llm', ['cluster-b'])]), route('r2', ['default/gw'], [group('llm', ['cluster-a'], [], 'InferencePool')])]);
    expect(plans).toEqual([]);
  });

  it('a not-permitted reference is not a reference', () => {
    const ex: Exclusion = { subject: 'InferencePoolImport default/llm', reason: 'RefNotPermitted', message: 'cross-namespace' };
    expect(plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])])).toEqual([]);
  });

  it('parents are capped at 32, in a stable order', () => {
    const parents = Array.from({ length: 40 }, (_, i) => `default/gw-${String(i).padStart(2, '0')}`);
    const [p] = plan([imp('llm')], [route('r1', parents, [group('llm', ['cluster-b'])])]);
    expect(p?.desired?.parents).toHaveLength(32);
    expect(p?.droppedParents).toBe(8);
    expect(p?.desired?.parents[31]?.parentRef.name).toBe('gw-31');
  });

  it('withTransitionTimes is idempotent', () => {
    const e = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'])])], T0)[0]?.desired as RawControllerEntry;
    expect(withTransitionTimes(e, e, T1)).toEqual(e);
  });
});
