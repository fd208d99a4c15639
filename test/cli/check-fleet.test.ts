/** `--check` with members from ClusterProfiles: a hub stand-in, HTTPS member stand-ins, the secretreader-style plugin. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CHECK_LOAD_ERRORS, runCheck } from '../../src/cli/check.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import { KubeApiServer, writeKubeconfig } from '../harness/kube-apiserver.js';
import { createTestCa } from '../helpers/pki.js';
import { clusterProfile } from '../sources/fleet/profile-fixtures.js';
import { pool, silent } from '../sources/kubernetes/kube-fixtures.js';

const PLUGINS = resolve(import.meta.dirname, '../fixtures/credential-plugins');
const ca = createTestCa('check fleet CA');
afterAll(() => ca.remove());

let dir: string;
let hub: KubeApiServer;
let member: KubeApiServer;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcip-check-fleet-'));
  mkdirSync(join(dir, 'secrets'));
  mkdirSync(join(dir, 'local'));
  hub = new KubeApiServer();
  await hub.start();
  member = new KubeApiServer({ token: 'token-of-cluster-a', tls: ca.leaf('cluster-a', ['IP:127.0.0.1']) });
  await member.start();
  member.create('inferencepools', pool('model-a'));
  writeFileSync(join(dir, 'secrets', 'cluster-a'), 'token-of-cluster-a');
});
afterEach(async () => {
  await hub.close();
  await member.close();
});

async function check(plugin = 'secret-reader.mjs') {
  const providerFile = join(dir, 'providers.json');
  const execConfig = { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [join(PLUGINS, plugin)], env: [{ name: 'SECRETS_DIR', value: join(dir, 'secrets') }], provideClusterInfo: true };
  writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'secretreader', execConfig }] }));
  const config = routerConfigSchema.parse({
    clusterName: 'local',
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ name: 'local', manifests: { paths: [join(dir, 'local')] } }],
    kubernetes: { initialSyncTimeoutMs: 3_000, backoffInitialMs: 50, backoffMaxMs: 200 },
    fleet: { clusterProfiles: { hub: { kubeconfig: await writeKubeconfig(dir, { server: hub.url }, 'hub') }, namespace: 'fleet-system', providerFile } },
  });
  return runCheck(config, silent);
}

const profile = (name: string, o: Parameters<typeof clusterProfile>[1] = {}) => clusterProfile(name, { server: member.url, caData: ca.cert.toString('base64'), ...o });

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
});
