/**
 * A running router with members from ClusterProfiles: the hub's profiles add,
 * remove and black out members of the routing snapshot live, and /debug/sources
 * shows them. Real HTTP(S) to a hub stand-in and an HTTPS member stand-in; the
 * member's token comes from the secretreader-style test plugin.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { type RouterHandle, startRouter } from '../../src/runtime/router.js';
import { eventually } from '../helpers/eventually.js';
import { createTestCa } from '../helpers/pki.js';
import { FleetEnv } from '../sources/fleet/fleet-env.js';
import { HEALTHY, clusterProfile } from '../sources/fleet/profile-fixtures.js';
import { silent } from '../sources/kubernetes/kube-fixtures.js';

const ca = createTestCa('router fleet CA');
afterAll(() => ca.remove());

let fleet: FleetEnv;
let router: RouterHandle | undefined;

beforeEach(async () => {
  fleet = await new FleetEnv(ca).start();
  await fleet.member('cluster-b');
  mkdirSync(join(fleet.dir, 'local'));
});
afterEach(async () => {
  await router?.shutdown();
  router = undefined;
  await fleet.close();
});

const profile = (o: Parameters<FleetEnv['profile']>[1] = {}) => fleet.profile('cluster-b', o);

/** `localProfile`: no clusterName, the local entry unnamed, and this profile names the local cluster. */
async function start(localProfile?: string): Promise<RouterHandle> {
  const config = routerConfigSchema.parse({
    ...(localProfile === undefined ? { clusterName: 'cluster-a' } : {}),
    listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ ...(localProfile === undefined ? { name: 'cluster-a' } : {}), manifests: { paths: [join(fleet.dir, 'local')] } }],
    kubernetes: { coalesceMs: 10, coalesceMaxMs: 50, initialSyncTimeoutMs: 5_000, backoffInitialMs: 50, backoffMaxMs: 200 },
    fleet: { clusterProfiles: { ...(await fleet.clusterProfiles()), ...(localProfile === undefined ? {} : { localProfile }) } },
  });
  router = await startRouter(config, { logger: silent, processMetrics: false });
  return router;
}

const clusters = (r: RouterHandle) => (r.store.snapshot()?.clusters ?? []).map((c) => [c.name, c.objects]);

describe('router with members from ClusterProfiles', () => {
  it('serves a profile member from the first snapshot, blacks it out while unhealthy, drops it when its profile goes', async () => {
    fleet.hub.create('clusterprofiles', profile());
    const r = await start();
    expect(clusters(r)).toEqual([
      ['cluster-a', 0],
      ['cluster-b', 1],
    ]);
    const debug = (await (await fetch(`http://${r.adminAddress}/debug/sources`)).json()) as { fleet: { members: { cluster: string; state: string }[] } };
    expect(debug.fleet.members.map((m) => [m.cluster, m.state])).toEqual([['cluster-b', 'serving']]);

    fleet.hub.updateStatus('clusterprofiles', profile({ conditions: [{ type: 'ControlPlaneHealthy', status: 'False', reason: 'Unreachable' }] }));
    await eventually(() => expect(clusters(r)).toEqual([['cluster-a', 0], ['cluster-b', 0]]), 5_000);
    fleet.hub.updateStatus('clusterprofiles', profile({ conditions: [HEALTHY] }));
    await eventually(() => expect(clusters(r)).toEqual([['cluster-a', 0], ['cluster-b', 1]]), 5_000);

    fleet.hub.delete('clusterprofiles', 'fleet-system', 'cluster-b');
    await eventually(() => expect(clusters(r)).toEqual([['cluster-a', 0]]), 5_000);
    expect(r.store.snapshot()?.clusters.some((c) => c.name === 'cluster-b')).toBe(false);
  });

  it('a member added to the hub later joins the running router', async () => {
    const r = await start();
    expect(clusters(r)).toEqual([['cluster-a', 0]]);
    fleet.hub.create('clusterprofiles', profile());
    await eventually(() => expect(clusters(r)).toEqual([['cluster-a', 0], ['cluster-b', 1]]), 5_000);
  });

  it('without clusterName its own ClusterProfile names the local cluster; that profile, and any other naming the local cluster, never become remote members', async () => {
    fleet.hub.create('clusterprofiles', profile());
    const named = { 'cluster.clusterset.k8s.io': 'cluster-a' };
    fleet.hub.create('clusterprofiles', clusterProfile('this-cluster', { server: 'https://this-cluster.example', properties: named }));
    fleet.hub.create('clusterprofiles', clusterProfile('copy', { server: 'https://copy.example', properties: named }));
    const r = await start('this-cluster');
    expect(clusters(r)).toEqual([
      ['cluster-a', 0],
      ['cluster-b', 1],
    ]);
    const debug = (await (await fetch(`http://${r.adminAddress}/debug/sources`)).json()) as { fleet: { members: { cluster: string }[]; refused: { message: string }[] } };
    expect(debug.fleet.members.map((m) => m.cluster)).toEqual(['cluster-b']);
    expect(debug.fleet.refused.map((m) => m.message).sort()).toEqual([
      'ClusterProfile fleet-system/copy: cluster "cluster-a" is the local cluster (the router runs in it); it is not a remote member',
      "ClusterProfile fleet-system/this-cluster: this cluster's own profile (fleet.clusterProfiles.localProfile); the local cluster cluster-a is not a remote member",
    ]);
  });
});
