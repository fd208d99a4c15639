/**
 * End to end against the API server stand-in: KubernetesSource -> snapshot
 * builder -> import controller (two replicas, leader election) -> status writes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { RawControllerEntry } from '../../src/controller/import-status.js';
import { KubeEnv, exportEntry, gateway, importObj, pool, route, service, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { Replica } from './controller-replica.js';

const ME = 'mcip-router.dev/import-controller';
const EXPORTER = exportEntry('example.com/export-controller', ['cluster-a']);

function config(env: KubeEnv, identity: string): RouterConfig {
  return namedConfig(routerConfigSchema.parse({
    clusterName: 'cluster-a',
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ name: 'cluster-a', kubernetes: { kubeconfig: env.kubeconfig } }],
    controller: {
      leaderElection: { leaseNamespace: 'mcip', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100, identity },
    },
  }));
}

let env: KubeEnv;
const replicas: Replica[] = [];
beforeEach(async () => {
  env = await new KubeEnv().start();
  env.server.create('gateways', gateway('gw'));
  env.server.create('inferencepools', pool('llm'));
  env.server.create('services', service('llm-epp'));
  env.server.create('inferencepoolimports', importObj('llm', [EXPORTER]));
  env.server.create('httproutes', route('r1', 'gw', [{ kind: 'InferencePoolImport', name: 'llm' }]));
});
afterEach(async () => {
  await Promise.all(replicas.splice(0).map((r) => r.stop()));
  await env.close();
});

async function replica(identity: string): Promise<Replica> {
  const r = await new Replica(env, config(env, identity)).start();
  replicas.push(r);
  return r;
}

const controllers = () =>
  ((env.server.get('inferencepoolimports', 'default', 'llm')?.status as { controllers: Record<string, unknown>[] }).controllers ?? []);
const ours = () => controllers().find((c) => c.name === ME) as RawControllerEntry | undefined;
const statusWrites = () => env.server.writes('inferencepoolimports', 'status').length;

describe('import controller (end to end)', () => {
  it('writes, updates and removes our entry; the exporter entry is never touched', async () => {
    expect(config(env, 'x').controller.name).toBe(ME);
    await replica('replica-a');
    await waitFor(() => ours(), 3000, 'our entry');
    const entry = ours()!;
    expect(entry.parents).toHaveLength(1);
    expect(entry.parents[0]?.parentRef).toEqual({ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' });
    expect(entry.parents[0]?.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([
      ['Accepted', 'True', 'Accepted', 1],
      ['ResolvedRefs', 'True', 'ResolvedRefs', 1],
    ]);
    // The controller-level condition on our own entry: the import is ready to be used.
    expect(entry.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration])).toEqual([['Accepted', 'True', 'Accepted', 1]]);
    expect(controllers()[0]).toEqual(EXPORTER);

    // Converged: more snapshots (unrelated change) cause no status write.
    const settled = statusWrites();
    env.server.create('services', service('unrelated'));
    await sleep(400);
    expect(statusWrites()).toBe(settled);

    // The EPP Service disappears: the import cannot be used.
    env.server.delete('services', 'default', 'llm-epp');
    await waitFor(() => ours()?.conditions[0]?.status === 'False', 2000, 'controller-level Accepted False');
    const [accepted, resolved] = ours()!.parents[0]!.conditions;
    expect(accepted).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(resolved).toMatchObject({ status: 'False', reason: 'InvalidExtensionRef' });
    expect(resolved?.message).toContain('llm-epp');
    expect(ours()!.conditions[0]).toMatchObject({ type: 'Accepted', status: 'False', reason: 'InvalidExtensionRef' });

    // Unreferenced: our entry goes, the exporter's stays.
    env.server.delete('httproutes', 'default', 'r1');
    await waitFor(() => ours() === undefined, 2000, 'entry removed');
    expect(controllers()).toEqual([EXPORTER]);
  });

  it('two replicas: only the leader writes; when it stops the other takes over', async () => {
    const a = await replica('replica-a');
    await waitFor(() => a.controller?.isLeader(), 2000, 'a leads');
    const b = await replica('replica-b');
    await waitFor(() => ours(), 3000, 'our entry');
    await waitFor(() => a.controller?.counts().written === 1, 2000, 'a counted its write');
    await sleep(300);
    expect(b.controller?.isLeader()).toBe(false);
    expect(b.controller?.counts().written).toBe(0);
    expect(a.controller?.counts().written).toBe(1);

    await a.stop();
    await waitFor(() => b.controller?.isLeader(), 2000, 'b leads');
    env.server.delete('httproutes', 'default', 'r1');
    await waitFor(() => ours() === undefined, 2000, 'removed by b');
    // The server applies the patch before its answer reaches b: wait for b to count it.
    await waitFor(() => b.controller?.counts().removed === 1, 2000, 'b counted the removal');
    expect(controllers()).toEqual([EXPORTER]);
  });

  it('does not write while the local cluster is stale', async () => {
    const a = await replica('replica-a');
    await waitFor(() => ours(), 3000, 'our entry');
    await env.server.down();
    await waitFor(() => a.state?.stale === true, 2000, 'stale');
    expect((await a.controller!.reconcile()).skipped).toBe('local-stale');
    await env.server.up();
    await waitFor(() => a.state?.stale === false, 3000, 'recovered');
  });
});
