/** `--check` with members from ClusterProfiles: a hub stand-in, HTTPS member stand-ins, the secretreader-style plugin. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHECK_LOAD_ERRORS, runCheck } from '../../src/cli/check.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import type { KubeApiServer } from '../harness/kube-apiserver.js';
import { createTestCa } from '../helpers/pki.js';
import { FleetEnv } from '../sources/fleet/fleet-env.js';
import { clusterProfile } from '../sources/fleet/profile-fixtures.js';
import { silent } from '../sources/kubernetes/kube-fixtures.js';

const ca = createTestCa('check fleet CA');
afterAll(() => ca.remove());

let fleet: FleetEnv;
let hub: KubeApiServer;
let member: KubeApiServer;

beforeEach(async () => {
  fleet = await new FleetEnv(ca).start();
  hub = fleet.hub;
  member = await fleet.member('cluster-a');
  mkdirSync(join(fleet.dir, 'local'));
});
afterEach(() => fleet.close());

/** `localProfile`: no clusterName, the local entry unnamed, and this profile names the local cluster. */
async function check(plugin = 'secret-reader.mjs', localProfile?: string) {
  const config = routerConfigSchema.parse({
    ...(localProfile === undefined ? { clusterName: 'local' } : {}),
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ ...(localProfile === undefined ? { name: 'local' } : {}), manifests: { paths: [join(fleet.dir, 'local')] } }],
    kubernetes: { initialSyncTimeoutMs: 3_000, backoffInitialMs: 50, backoffMaxMs: 200 },
    fleet: { clusterProfiles: { ...(await fleet.clusterProfiles(plugin)), ...(localProfile === undefined ? {} : { localProfile }) } },
  });
  return runCheck(config, silent);
}

const profile = (name: string, o: Parameters<typeof clusterProfile>[1] = {}) => fleet.profile(name, o);

describe('--check with fleet.clusterProfiles', () => {
  it("loads the profiles' members into the table and lists them, with refused profiles as warnings", async () => {
    hub.create('clusterprofiles', profile('cluster-a'));
    hub.create('clusterprofiles', clusterProfile('copy', { server: member.url, properties: { 'cluster.clusterset.k8s.io': 'cluster-a' } }));
    const result = await check();
    expect(result.code).not.toBe(CHECK_LOAD_ERRORS);
    expect(result.output).toMatch(/cluster-a \(1 objects, revision/);
    expect(result.output).toContain(
      [
        'fleet: ClusterProfiles clusterprofiles.multicluster.x-k8s.io/v1alpha1 in namespace fleet-system: 1 member(s)',
        `  cluster-a (ClusterProfile fleet-system/cluster-a, provider secretreader, ${member.url}): serving`,
        'warning: ClusterProfile fleet-system/copy: cluster "cluster-a" is already claimed by ClusterProfile fleet-system/cluster-a',
      ].join('\n'),
    );
    expect(result.output).not.toContain('token-of-cluster-a');
  });

  it('a member whose plugin fails is a load error naming plugin and profile; a member in an outage is a warning', async () => {
    hub.create('clusterprofiles', profile('cluster-a'));
    const failed = await check('failing.mjs');
    expect(failed.code).toBe(CHECK_LOAD_ERRORS);
    expect(failed.output).toMatch(/error: cluster cluster-a: .*credential plugin secretreader .* for ClusterProfile fleet-system\/cluster-a: exited with code 3/);

    hub.updateStatus('clusterprofiles', profile('cluster-a', { conditions: [{ type: 'ControlPlaneHealthy', status: 'False', reason: 'Unreachable' }] }));
    const outage = await check();
    expect(outage.code).not.toBe(CHECK_LOAD_ERRORS);
    expect(outage.output).toContain('  cluster-a (ClusterProfile fleet-system/cluster-a, provider secretreader');
    expect(outage.output).toMatch(/warning: cluster cluster-a: ControlPlaneHealthy is False \(Unreachable\)/);
    expect(outage.output).not.toMatch(/cluster-a \(1 objects/);
  });

  it('a hub that does not answer is a load error', async () => {
    await hub.down();
    const result = await check();
    expect(result.code).toBe(CHECK_LOAD_ERRORS);
    expect(result.output).toMatch(/error: cluster fleet: hub: /);
  });

  it("prints the local cluster's name and where it came from: its own ClusterProfile, which is no member", async () => {
    hub.create('clusterprofiles', profile('cluster-a'));
    hub.create('clusterprofiles', clusterProfile('cluster-home', { server: 'https://home.example' }));
    const result = await check('secret-reader.mjs', 'cluster-home');
    expect(result.code).not.toBe(CHECK_LOAD_ERRORS);
    expect(result.output).toMatch(/^Routing snapshot v1: cluster cluster-home, .*\nClusters: cluster-home \(0 objects, revision \w+\), cluster-a \(1 objects/);
    expect(result.output).toContain('cluster name: cluster-home from ClusterProfile fleet-system/cluster-home on the hub (metadata.name)\n');
    expect(result.output).toContain('fleet: ClusterProfiles clusterprofiles.multicluster.x-k8s.io/v1alpha1 in namespace fleet-system: 1 member(s)');
    expect(result.output).toContain("warning: ClusterProfile fleet-system/cluster-home: this cluster's own profile (fleet.clusterProfiles.localProfile); the local cluster cluster-home is not a remote member");
  });
});
