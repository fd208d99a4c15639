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
    attachments: parents.map((gateway) => ({ parentRefIndex: 0, gateway, listeners: [] })),
    rules: [{ route: { namespace: 'default', name }, index: 0, backends, totalWeight: backends.length, matches: [] }],
  };
}

const plan = (imports: InferencePoolImport[], routes: RouteSummary[], now = T0) => planImportStatuses({ controllerName: ME, imports, routes, now });

describe('planImportStatuses', () => {
  it('referenced import: one parent per served Gateway, Accepted and ResolvedRefs True, controller-level Accepted True', () => {
    const [p] = plan([imp('llm', [], 3)], [route('r1', ['default/gw-a', 'default/gw-b'], [group('llm', ['cluster-b', 'cluster-c'])])]);
    expect(p?.desired?.name).toBe(ME);
    expect(p?.desired?.parents.map((x) => x.parentRef)).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw-a' },
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw-b' },
    ]);
    const conds = p?.desired?.parents[0]?.conditions;
    expect(conds).toEqual([
      {
        type: 'Accepted',
        status: 'True',
        reason: 'Accepted',
        message: 'an HTTPRoute attached to this Gateway routes to the import; routable via exporting cluster(s) cluster-b, cluster-c',
        observedGeneration: 3,
        lastTransitionTime: T0,
      },
      { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: expect.any(String), observedGeneration: 3, lastTransitionTime: T0 },
    ]);
    expect(p?.desired?.parents[0]?.controllerName).toBe(ME);
    expect(p?.desired?.conditions).toEqual([
      { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'ready: routable via exporting cluster(s) cluster-b, cluster-c', observedGeneration: 3, lastTransitionTime: T0 },
    ]);
  });

  it('every reason written is upstream vocabulary', () => {
    const exs: Exclusion[] = [
      { subject: 'InferencePoolImport default/a', reason: 'NoExportingClusters', message: 'none' },
      { subject: 'cluster-b/default/b', reason: 'ServiceNotFound', message: 'm' },
      { subject: 'cluster-c/default/c', reason: 'UnknownCluster', message: 'm' },
    ];
    const routes = [route('r1', ['default/gw'], [group('a', [], [exs[0]!]), group('b', [], [exs[1]!]), group('c', ['cluster-b'], [exs[2]!]), group('d', ['cluster-b'])])];
    const entries = plan(['a', 'b', 'c', 'd'].map((n) => imp(n)), routes).map((p) => p.desired!);
    const used = new Set(entries.flatMap((e) => [...e.conditions, ...e.parents.flatMap((p) => p.conditions)].map((c) => `${c.type}/${c.reason}`)));
    expect([...used].sort()).toEqual(['Accepted/Accepted', 'Accepted/InvalidExtensionRef', 'ResolvedRefs/InvalidExtensionRef', 'ResolvedRefs/ResolvedRefs']);
  });

  it('no exporting clusters -> parent Accepted True, ResolvedRefs False InvalidExtensionRef, not ready', () => {
    const ex: Exclusion = { subject: 'InferencePoolImport default/llm', reason: 'NoExportingClusters', message: 'none' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(resolved).toMatchObject({ status: 'False', reason: 'InvalidExtensionRef', message: 'no cluster exports this pool yet (status.controllers[].exportingClusters is empty)' });
    expect(p?.desired?.conditions[0]).toMatchObject({ type: 'Accepted', status: 'False', reason: 'InvalidExtensionRef' });
    expect(p?.desired?.conditions[0]?.message).toContain('no cluster exports this pool yet');
  });

  it('unresolvable EPP -> ResolvedRefs False InvalidExtensionRef naming the exclusion, not ready', () => {
    const ex: Exclusion = { subject: 'cluster-b/default/llm', reason: 'ServiceNotFound', message: 'no Service default/llm-epp in cluster-b' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(resolved).toMatchObject({ status: 'False', reason: 'InvalidExtensionRef' });
    expect(resolved?.message).toBe('cluster-b/default/llm: ServiceNotFound: no Service default/llm-epp in cluster-b');
    expect(p?.desired?.conditions[0]).toMatchObject({ status: 'False', reason: 'InvalidExtensionRef' });
    expect(p?.desired?.conditions[0]?.message).toContain('ServiceNotFound');
  });

  it('partly resolvable -> ResolvedRefs False, but ready (controller-level Accepted True)', () => {
    const ex: Exclusion = { subject: 'cluster-c/default/llm', reason: 'UnknownCluster', message: 'not configured' };
    const [p] = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'], [ex])])]);
    const [accepted, resolved] = p?.desired?.parents[0]?.conditions ?? [];
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(resolved).toMatchObject({ status: 'False', reason: 'InvalidExtensionRef' });
    expect(resolved?.message).toContain('UnknownCluster');
    expect(p?.desired?.conditions[0]).toMatchObject({ status: 'True', reason: 'Accepted' });
  });

  it('keeps lastTransitionTime while a status is unchanged, even when the message changes', () => {
    const first = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'])])], T0)[0]?.desired as RawControllerEntry;
    const ours = { name: ME, exportingClusters: [], conditions: first.conditions, parents: first.parents.map((p) => ({ ...p, parentRef: { ...p.parentRef } })) };
    const again = plan([imp('llm', [ours])], [route('r1', ['default/gw'], [group('llm', ['cluster-b', 'cluster-c'])])], T1)[0]?.desired;
    expect(again?.parents[0]?.conditions.map((c) => c.lastTransitionTime)).toEqual([T0, T0]);
    expect(again?.conditions.map((c) => c.lastTransitionTime)).toEqual([T0]);
    const ex: Exclusion = { subject: 'x', reason: 'ServiceNotFound', message: 'm' };
    const flipped = plan([imp('llm', [ours])], [route('r1', ['default/gw'], [group('llm', [], [ex])])], T1)[0]?.desired;
    // Accepted stays True (unchanged time); ResolvedRefs and readiness flip.
    expect(flipped?.parents[0]?.conditions.map((c) => c.lastTransitionTime)).toEqual([T0, T1]);
    expect(flipped?.conditions.map((c) => c.lastTransitionTime)).toEqual([T1]);
  });

  it('unreferenced import carrying our entry -> removal plan; without it -> no plan', () => {
    const ours = { name: ME, exportingClusters: [], conditions: [], parents: [] };
    const other = { name: 'example.com/export', exportingClusters: [{ name: 'cluster-b' }], conditions: [], parents: [] };
    const plans = plan([imp('mine', [other, ours]), imp('theirs', [other])], [route('r1', ['default/gw'], [group('elsewhere', ['cluster-b'])])]);
    expect(plans).toEqual([{ namespace: 'default', name: 'mine', desired: undefined }]);
  });

  it('routes without served parents and InferencePool backends do not count', () => {
    const plans = plan([imp('llm')], [route('r1', [], [group('llm', ['cluster-b'])]), route('r2', ['default/gw'], [group('llm', ['cluster-a'], [], 'InferencePool')])]);
    expect(plans).toEqual([]);
  });

  it('a not-permitted reference is not a reference', () => {
    const ex: Exclusion = { subject: 'InferencePoolImport default/llm', reason: 'RefNotPermitted', message: 'cross-namespace' };
    expect(plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', [], [ex])])])).toEqual([]);
  });

  it('parents are not capped (the CRD sets no limit), in a stable order', () => {
    const parents = Array.from({ length: 40 }, (_, i) => `default/gw-${String(i).padStart(2, '0')}`);
    const [p] = plan([imp('llm')], [route('r1', [...parents].reverse(), [group('llm', ['cluster-b'])])]);
    expect(p?.desired?.parents.map((x) => `default/${x.parentRef.name}`)).toEqual(parents);
  });

  it('withTransitionTimes is idempotent', () => {
    const e = plan([imp('llm')], [route('r1', ['default/gw'], [group('llm', ['cluster-b'])])], T0)[0]?.desired as RawControllerEntry;
    expect(withTransitionTimes(e, e, T1)).toEqual(e);
  });
});
