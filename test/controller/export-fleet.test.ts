/**
 * The export controller with its members from ClusterProfiles, over real HTTP:
 * a hub stand-in holding the profiles, HTTPS member stand-ins that accept only
 * their own bearer token, and the secretreader-style plugin printing it. Members
 * join, leave and go into an outage as their profiles say, without a restart.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import type { ExportControllerHandle } from '../../src/controller/export-controller.js';
import { startExportFromConfig } from '../../src/controller/export-runtime.js';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';
import { exportFleet } from '../../src/runtime/fleet-members.js';
import { createTestCa } from '../helpers/pki.js';
import { FleetEnv } from '../sources/fleet/fleet-env.js';
import { pool, silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { EXPORTER, type Entry, type Parent } from './export-fixtures.js';

const ca = createTestCa('export fleet CA');
afterAll(() => ca.remove());

let env: FleetEnv;
let controller: ExportControllerHandle | undefined;

beforeEach(async () => {
  env = await new FleetEnv(ca).start();
});
afterEach(async () => {
  await controller?.stop();
  controller = undefined;
  await env.close();
});

const sick = { type: 'ControlPlaneHealthy', status: 'False', reason: 'ManagedClusterLeaseUpdateStopped', message: 'lease not updated' };

async function start(): Promise<ExportControllerHandle> {
  const config = routerConfigSchema.parse({
    clusterName: 'local',
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ name: 'local', manifests: { paths: [env.dir] } }],
    kubernetes: { coalesceMs: 10, coalesceMaxMs: 50, initialSyncTimeoutMs: 5_000, backoffInitialMs: 50, backoffMaxMs: 200 },
    fleet: { clusterProfiles: await env.clusterProfiles() },
    exportController: { enabled: true, withdrawalGraceMs: 400, resyncMs: 60_000, leaderElection: { enabled: false } },
  });
  controller = await startExportFromConfig(config, { logger: silent, fleet: exportFleet });
  return controller;
}

const exportPool = (member: string, name: string): void => {
  env.members.get(member)!.create('inferencepools', pool(name, 'default', `${name}-epp`, { annotations: { [EXPORT_ANNOTATION]: 'ClusterSet' } }));
};
const importOf = (member: string, name: string) => env.members.get(member)!.get('inferencepoolimports', 'default', name);
const exporters = (member: string, name: string): string | undefined => {
  const entries = ((importOf(member, name)?.status as { controllers?: Entry[] } | undefined)?.controllers ?? []) as Entry[];
  return entries.find((e) => e.name === EXPORTER)?.exportingClusters?.map((c) => c.name).join(',');
};
const exported = (member: string, name: string) =>
  (((env.members.get(member)!.get('inferencepools', 'default', name)?.status as { parents?: Parent[] } | undefined)?.parents ?? []) as Parent[])
    .find((p) => p.controllerName === EXPORTER)
    ?.conditions.find((c) => c.type === 'Exported');
const everywhere = (members: string[], name: string, list: string) => () => members.every((m) => exporters(m, name) === list);
const writes = (member: string): number => env.members.get(member)!.writes().length;

describe('export controller with members from ClusterProfiles', () => {
  it("imports in every profile's member with the plugin's token; a profile added later joins without a restart", async () => {
    for (const m of ['cluster-a', 'cluster-b']) {
      await env.member(m);
      env.hub.create('clusterprofiles', env.profile(m));
    }
    exportPool('cluster-a', 'llm');
    const c = await start();
    await waitFor(everywhere(['cluster-a', 'cluster-b'], 'llm', 'cluster-a'), 8_000, 'imported in a and b');
    await waitFor(() => exported('cluster-a', 'llm')?.status === 'True', 8_000, 'Exported True');
    expect(c.debug().members.map((m) => m.name)).toEqual(['cluster-a', 'cluster-b']);

    await env.member('cluster-c');
    exportPool('cluster-c', 'llm');
    env.hub.create('clusterprofiles', env.profile('cluster-c'));
    await waitFor(everywhere(['cluster-a', 'cluster-b', 'cluster-c'], 'llm', 'cluster-a,cluster-c'), 8_000, 'c joined');
  }, 30_000);

  it('a member whose profile is removed: its exports leave the others (deleted after the grace), its own imports stay as they are and get no writes', async () => {
    for (const m of ['cluster-a', 'cluster-b', 'cluster-c']) {
      await env.member(m);
      env.hub.create('clusterprofiles', env.profile(m));
    }
    exportPool('cluster-a', 'shared');
    exportPool('cluster-b', 'shared');
    exportPool('cluster-b', 'only-b');
    await start();
    const all = ['cluster-a', 'cluster-b', 'cluster-c'];
    await waitFor(() => everywhere(all, 'shared', 'cluster-a,cluster-b')() && everywhere(all, 'only-b', 'cluster-b')(), 8_000, 'exported');
    await waitFor(() => exported('cluster-b', 'only-b')?.status === 'True', 8_000, 'b Exported');
    await sleep(200);
    const before = writes('cluster-b');

    env.hub.delete('clusterprofiles', 'fleet-system', 'cluster-b');
    await waitFor(everywhere(['cluster-a', 'cluster-c'], 'shared', 'cluster-a'), 8_000, 'b left the lists');
    await waitFor(() => importOf('cluster-a', 'only-b') === undefined && importOf('cluster-c', 'only-b') === undefined, 8_000, 'only-b deleted after the grace');
    // In the member that left, what we wrote stays as it was.
    expect(exporters('cluster-b', 'shared')).toBe('cluster-a,cluster-b');
    expect(exporters('cluster-b', 'only-b')).toBe('cluster-b');
    expect(writes('cluster-b')).toBe(before);
    await waitFor(() => env.members.get('cluster-b')!.watchCount() === 0, 5_000, "b's watches closed");
  }, 30_000);

  it('a profile not ControlPlaneHealthy is an outage: its exports stay, it gets no writes and is named as lagging; healthy again, it catches up', async () => {
    for (const m of ['cluster-a', 'cluster-b']) {
      await env.member(m);
      env.hub.create('clusterprofiles', env.profile(m));
    }
    exportPool('cluster-b', 'from-b');
    const c = await start();
    await waitFor(everywhere(['cluster-a', 'cluster-b'], 'from-b', 'cluster-b'), 8_000, 'exported');

    env.hub.updateStatus('clusterprofiles', env.profile('cluster-b', { conditions: [sick] }));
    await waitFor(() => c.debug().members.find((m) => m.name === 'cluster-b')?.reachable === false, 8_000, 'b in an outage');
    expect(c.debug().members.find((m) => m.name === 'cluster-b')?.error).toMatch(/ClusterProfile fleet-system\/cluster-b: ControlPlaneHealthy is False \(ManagedClusterLeaseUpdateStopped\)/);
    const before = writes('cluster-b');
    exportPool('cluster-a', 'from-a');
    await waitFor(() => exporters('cluster-a', 'from-a') === 'cluster-a', 8_000, 'a imported');
    await waitFor(() => exported('cluster-a', 'from-a')?.message === 'waiting for: cluster-b (its API server is unreachable)', 8_000, 'b named');
    await c.reconcile();
    expect(importOf('cluster-b', 'from-a')).toBeUndefined();
    expect(writes('cluster-b')).toBe(before);
    // Its outage withdraws nothing.
    expect(exporters('cluster-a', 'from-b')).toBe('cluster-b');

    env.hub.updateStatus('clusterprofiles', env.profile('cluster-b'));
    await waitFor(() => exporters('cluster-b', 'from-a') === 'cluster-a', 8_000, 'b caught up');
    await waitFor(() => exported('cluster-a', 'from-a')?.status === 'True', 8_000, 'Exported True');
  }, 30_000);
});
