import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ImportStatusPlan, RawControllerEntry } from '../../src/controller/import-status.js';
import { ImportStatusWriter, createImportStatusClient } from '../../src/controller/status-writer.js';
import { loadKubeConfig } from '../../src/sources/kubernetes/kubeconfig.js';
import { KubeEnv, exportEntry, importObj, silent } from '../sources/kubernetes/kube-fixtures.js';

const ME = 'mcip-router.dev/import-controller';
const OTHER = { ...exportEntry('example.com/export-controller', ['cluster-b']), conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: '2024-01-01T00:00:00Z' }], extraField: { kept: true } };

function entry(message = 'ok', status: 'True' | 'False' = 'True'): RawControllerEntry {
  return {
    name: ME,
    parents: [
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' },
        controllerName: ME,
        conditions: [{ type: 'ResolvedRefs', status, reason: status === 'True' ? 'ResolvedRefs' : 'InvalidExtensionRef', message, observedGeneration: 1, lastTransitionTime: '2025-01-01T00:00:00Z' }],
      },
    ],
    conditions: [{ type: 'Accepted', status, reason: status === 'True' ? 'Accepted' : 'InvalidExtensionRef', message, observedGeneration: 1, lastTransitionTime: '2025-01-01T00:00:00Z' }],
  };
}

const planFor = (desired: RawControllerEntry | undefined, name = 'llm'): ImportStatusPlan => ({ namespace: 'default', name, desired });

let env: KubeEnv;
let writer: ImportStatusWriter;
let clock = '2025-01-01T00:00:00Z';
beforeEach(async () => {
  env = await new KubeEnv().start();
  const kc = loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] });
  writer = new ImportStatusWriter({ client: createImportStatusClient(kc), controllerName: ME, logger: silent, now: () => clock });
  env.server.create('inferencepoolimports', importObj('llm', [OTHER]));
});
afterEach(async () => {
  await env.close();
});

const controllers = (name = 'llm') => (env.server.get('inferencepoolimports', 'default', name)?.status as { controllers: { name: string }[] }).controllers;
const statusWrites = () => env.server.writes('inferencepoolimports', 'status');

describe('ImportStatusWriter', () => {
  it('adds our entry with a merge-patch of /status, leaving the other controller entry byte-identical', async () => {
    const r = await writer.apply(planFor(entry()));
    expect(r.outcome).toBe('written');
    expect(controllers()).toEqual([OTHER, entry()]);
    expect(statusWrites()).toHaveLength(1);
    expect(statusWrites()[0]?.contentType).toBe('application/merge-patch+json');
    // Nothing but status changed: generation stays.
    expect(env.server.get('inferencepoolimports', 'default', 'llm')?.metadata.generation).toBe(1);
  });

  it('writes nothing when the live entry already matches', async () => {
    await writer.apply(planFor(entry()));
    const r = await writer.apply(planFor(entry()));
    expect(r.outcome).toBe('unchanged');
    expect(statusWrites()).toHaveLength(1);
  });

  it('updates our entry in place on change; lastTransitionTime kept while the status is the same', async () => {
    await writer.apply(planFor(entry('first')));
    clock = '2025-01-02T00:00:00Z';
    expect((await writer.apply(planFor(entry('second')))).outcome).toBe('written');
    const ours = controllers()[1] as unknown as RawControllerEntry;
    expect(ours.parents[0]?.conditions[0]).toMatchObject({ message: 'second', lastTransitionTime: '2025-01-01T00:00:00Z' });
    expect(controllers()[0]).toEqual(OTHER);
    await writer.apply(planFor(entry('down', 'False')));
    const flipped = controllers()[1] as unknown as RawControllerEntry;
    expect(flipped.parents[0]?.conditions[0]).toMatchObject({ status: 'False', lastTransitionTime: '2025-01-02T00:00:00Z' });
  });

  it('removes only our entry when the import is no longer referenced', async () => {
    await writer.apply(planFor(entry()));
    expect((await writer.apply(planFor(undefined))).outcome).toBe('removed');
    expect(controllers()).toEqual([OTHER]);
    expect((await writer.apply(planFor(undefined))).outcome).toBe('unchanged');
    expect(statusWrites()).toHaveLength(2);
  });

  it('409: re-reads and retries, keeping the concurrent change of another controller', async () => {
    let raced = false;
    env.server.onWrite((ctx) => {
      if (raced || ctx.subresource !== 'status') return;
      raced = true;
      const cur = env.server.get('inferencepoolimports', 'default', 'llm')!;
      const third = { name: 'example.org/third', parents: [] };
      env.server.updateStatus('inferencepoolimports', { ...cur, status: { controllers: [OTHER, third] } });
    });
    const r = await writer.apply(planFor(entry()));
    expect(r).toMatchObject({ outcome: 'written', attempts: 2 });
    expect(controllers().map((c) => c.name)).toEqual(['example.com/export-controller', 'example.org/third', ME]);
  });

  it('gives up after bounded retries when every write conflicts', async () => {
    env.server.onWrite((ctx) => {
      if (ctx.subresource !== 'status') return;
      const cur = env.server.get('inferencepoolimports', 'default', 'llm')!;
      env.server.update('inferencepoolimports', { ...cur, metadata: { ...cur.metadata, labels: { n: String(Math.random()) } } });
    });
    const w = new ImportStatusWriter({ client: createImportStatusClient(loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] })), controllerName: ME, maxConflictRetries: 2, logger: silent });
    expect(await w.apply(planFor(entry()))).toMatchObject({ outcome: 'conflict', attempts: 3 });
    expect(controllers()).toEqual([OTHER]);
  });

  it('does not add a 9th controller entry', async () => {
    const eight = Array.from({ length: 8 }, (_, i) => ({ name: `example.com/c${i}`, parents: [] }));
    env.server.create('inferencepoolimports', importObj('crowded', eight));
    expect((await writer.apply(planFor(entry(), 'crowded'))).outcome).toBe('full');
    expect(controllers('crowded')).toHaveLength(8);
    expect(env.server.writes('inferencepoolimports', 'status')).toHaveLength(0);
  });

  it('replaces our entry even when 8 are present', async () => {
    const seven = Array.from({ length: 7 }, (_, i) => ({ name: `example.com/c${i}`, parents: [] }));
    env.server.create('inferencepoolimports', importObj('busy', [...seven, entry('old')]));
    expect((await writer.apply(planFor(entry('new'), 'busy'))).outcome).toBe('written');
    expect(controllers('busy')).toHaveLength(8);
  });

  it('an import that is gone is reported, not an error', async () => {
    expect((await writer.apply(planFor(entry(), 'missing'))).outcome).toBe('gone');
  });
});
