/** planExports alone: exporters, import steps, withdrawal clock, pool status entries. */
import { describe, expect, it } from 'vitest';
import { planExports, type MemberView } from '../../src/controller/export-plan.js';
import type { ImportController, InferencePool, InferencePoolImport } from '../../src/model/types.js';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';

const ME = 'mcip-router.dev/export-controller';

function pool(name: string, exportValue?: string, parents: InferencePool['status']['parents'] = []): InferencePool {
  return {
    kind: 'InferencePool',
    apiVersion: 'inference.networking.k8s.io/v1',
    metadata: { name, namespace: 'ns', generation: 3, labels: {}, annotations: exportValue === undefined ? {} : { [EXPORT_ANNOTATION]: exportValue } },
    spec: { selector: { matchLabels: {} }, targetPorts: [{ number: 8000 }], appProtocol: 'http', endpointPickerRef: { group: '', kind: 'Service', name: 'epp', port: { number: 9002 }, failureMode: 'FailClose' } },
    status: { parents },
  };
}

function entry(name: string, clusters: string[], message = `exported by ${clusters.join(', ')}`): ImportController {
  return { name, exportingClusters: clusters.map((c) => ({ name: c })), parents: [], conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message }] };
}

function imp(name: string, controllers: ImportController[]): InferencePoolImport {
  return { kind: 'InferencePoolImport', apiVersion: 'inference.networking.x-k8s.io/v1alpha1', metadata: { name, namespace: 'ns', labels: {}, annotations: {} }, status: { controllers } };
}

function member(name: string, o: Partial<MemberView> = {}): MemberView {
  return { name, reachable: true, synced: true, starting: false, pools: [], imports: [], missingNamespaces: new Set(), invalidPools: new Set(), created: new Set(), ...o };
}

const plan = (members: MemberView[], withdrawnSince = new Map<string, number>(), now = 1000) =>
  planExports({ controllerName: ME, members, withdrawnSince, now, graceMs: 500 });

describe('planExports', () => {
  it('every member gets the import with every exporter, sorted; up-to-date members need nothing', () => {
    const p = plan([
      member('c', { pools: [pool('llm', 'ClusterSet')] }),
      member('a', { pools: [pool('llm', 'ClusterSet')], imports: [imp('llm', [entry(ME, ['a', 'c'])])] }),
      member('b'),
    ]);
    expect(p.exporters.get('ns/llm')).toEqual(['a', 'c']);
    const a = p.imports.get('a')?.[0]?.action;
    const b = p.imports.get('b')?.[0]?.action;
    expect(a).toMatchObject({ type: 'ensure', exists: true, upToDate: true });
    expect(b).toMatchObject({ type: 'ensure', exists: false, upToDate: false, entry: { name: ME, exportingClusters: [{ name: 'a' }, { name: 'c' }] } });
  });

  it('no exporter left: remove our entry, wait for the grace, then delete unless another controller exports it', () => {
    const members = (ours: boolean) => [
      member('a', { imports: [imp('llm', ours ? [entry(ME, ['b'])] : [])] }),
      member('b', { imports: [imp('llm', [...(ours ? [entry(ME, ['b'])] : []), entry('example.com/other', ['z'])])] }),
    ];
    const first = plan(members(true));
    expect(first.imports.get('a')?.[0]?.action).toEqual({ type: 'remove-entry' });
    expect(first.imports.get('b')?.[0]?.action).toEqual({ type: 'remove-entry' });
    expect(first.withdrawnSince.get('ns/llm')).toBe(1000);
    expect(first.nextDeadline).toBe(1500);
    const waiting = plan(members(false), new Map(first.withdrawnSince), 1200);
    expect(waiting.imports.get('a')?.[0]?.action).toEqual({ type: 'wait', deleteAt: 1500 });
    expect(waiting.imports.get('b')?.[0]?.action).toMatchObject({ type: 'keep' });
    const due = plan(members(false), new Map(waiting.withdrawnSince), 1500);
    expect(due.imports.get('a')?.[0]?.action).toEqual({ type: 'delete' });
    expect(due.imports.get('b')?.[0]?.action).toMatchObject({ type: 'keep' });
    // Once deleted, nothing is tracked any more.
    expect(plan([member('a'), member('b')], new Map(due.withdrawnSince), 1600).withdrawnSince.size).toBe(0);
  });

  it('an exporter returning cancels the withdrawal', () => {
    const p = plan([member('a', { pools: [pool('llm', 'ClusterSet')], imports: [imp('llm', [])] })], new Map([['ns/llm', 0]]), 5000);
    expect(p.imports.get('a')?.[0]?.action).toMatchObject({ type: 'ensure' });
    expect(p.withdrawnSince.size).toBe(0);
  });

  it('a member not listed since start keeps the exports our entries record for it', () => {
    const p = plan([member('a', { imports: [imp('llm', [entry(ME, ['b'])])] }), member('b', { synced: false, reachable: false })]);
    expect(p.exporters.get('ns/llm')).toEqual(['b']);
    expect(p.imports.get('a')?.[0]?.action).toMatchObject({ type: 'ensure', upToDate: true });
  });

  it('an invalid pool keeps its recorded export (no withdrawal because our decoder refused it)', () => {
    const p = plan([member('a', { imports: [imp('llm', [entry(ME, ['b'])])] }), member('b', { invalidPools: new Set(['ns/llm']) })]);
    expect(p.exporters.get('ns/llm')).toEqual(['b']);
    expect(plan([member('a', { imports: [imp('llm', [entry(ME, ['b'])])] }), member('b')]).exporters.size).toBe(0);
  });

  it('pool status: Exported True once every member lists the pool, else the lagging members and why', () => {
    const exporting = pool('llm', 'ClusterSet');
    const done = plan([member('a', { pools: [exporting], imports: [imp('llm', [entry(ME, ['a'])])] }), member('b', { imports: [imp('llm', [entry(ME, ['a'])])] })]);
    const step = done.pools.get('a')?.[0];
    expect(step?.entry?.parentRef).toEqual({ group: 'inference.networking.x-k8s.io', kind: 'InferencePoolImport', namespace: 'ns', name: 'llm' });
    expect(step?.entry?.conditions[0]).toMatchObject({ type: 'Exported', status: 'True', reason: 'Exported', observedGeneration: 3 });

    const lagging = plan([
      member('a', { pools: [exporting], imports: [imp('llm', [entry(ME, ['a'])])] }),
      member('b', { reachable: false }),
      member('c', { missingNamespaces: new Set(['ns']) }),
      member('d', { imports: [imp('llm', [])] }),
    ]);
    expect(lagging.pools.get('a')?.[0]?.entry?.conditions[0]).toMatchObject({
      status: 'False',
      reason: 'Pending',
      message: 'waiting for: b (its API server is unreachable), c (namespace ns does not exist there), d (status not written yet)',
    });
  });

  it('pool status: unsupported value is NotSupported; no annotation removes our entry and leaves others alone', () => {
    const p = plan([member('a', { pools: [pool('region', 'Region')] })]);
    expect(p.pools.get('a')?.[0]?.entry?.conditions[0]).toMatchObject({ status: 'False', reason: 'NotSupported' });
    expect(p.exporters.size).toBe(0);
    const ourParent = { parentRef: { group: 'inference.networking.x-k8s.io', kind: 'InferencePoolImport', name: 'llm', namespace: 'ns' }, controllerName: ME, conditions: [] };
    const gw = { parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw' }, controllerName: 'example.com/gw', conditions: [] };
    const removed = plan([member('a', { pools: [pool('llm', undefined, [gw, ourParent]), pool('plain', undefined, [gw])] })]);
    expect(removed.pools.get('a')).toEqual([{ namespace: 'ns', name: 'llm', entry: undefined, upToDate: false, pruned: false }]);
  });
  it('pool status: our entry stripped of controllerName (a CRD without it) is found by its parentRef and up to date when its conditions are; two are never up to date', () => {
    const exported = { type: 'Exported', status: 'True' as const, reason: 'Exported', message: 'InferencePoolImport present in every member', observedGeneration: 3 };
    const stripped = { parentRef: { group: 'inference.networking.x-k8s.io', kind: 'InferencePoolImport', name: 'llm', namespace: 'ns' }, conditions: [exported] };
    const imports = [imp('llm', [entry(ME, ['a'])])];
    const step = (parents: InferencePool['status']['parents']) => plan([member('a', { pools: [pool('llm', 'ClusterSet', parents)], imports })]).pools.get('a')?.[0];
    expect(step([stripped])).toMatchObject({ upToDate: true, pruned: true });
    expect(step([{ ...stripped, controllerName: ME }])).toMatchObject({ upToDate: true, pruned: false });
    expect(step([stripped, stripped])).toMatchObject({ upToDate: false, pruned: true });
    expect(step([{ ...stripped, conditions: [{ ...exported, status: 'False', reason: 'Pending' }] }])).toMatchObject({ upToDate: false, pruned: true });
    // Another controller's entry naming the same import is not ours.
    expect(step([{ ...stripped, controllerName: 'example.com/other-exporter' }])).toMatchObject({ upToDate: false, pruned: false });
  });
  it('a member still in its first list: pool statuses that would name it are left as they are; its imports are not created again while a create is in flight to its cache', () => {
    const exporting = pool('llm', 'ClusterSet');
    const starting = plan([
      member('a', { pools: [exporting], imports: [imp('llm', [entry(ME, ['a'])])] }),
      member('b', { reachable: false, synced: false, starting: true }),
    ]);
    expect(starting.pools.get('a')).toEqual([]);
    // Its import steps still run (they need only the exporters).
    expect(starting.imports.get('b')?.[0]?.action).toMatchObject({ type: 'ensure', exists: false });
    const failed = plan([member('a', { pools: [exporting], imports: [imp('llm', [entry(ME, ['a'])])] }), member('b', { reachable: false, synced: false })]);
    expect(failed.pools.get('a')?.[0]?.entry?.conditions[0]).toMatchObject({ reason: 'Pending', message: 'waiting for: b (its API server is unreachable)' });

    const created = plan([member('a', { pools: [exporting] }), member('b', { created: new Set(['ns/llm']) })]);
    expect(created.imports.get('b')?.[0]?.action).toMatchObject({ type: 'ensure', exists: true, upToDate: false });
  });
});

