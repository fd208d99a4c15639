/**
 * Members from ClusterProfiles end to end over real HTTP: a hub API server
 * stand-in holding the profiles, one stand-in per member that accepts only its
 * own bearer token, and the secretreader-style test plugin printing that token
 * for the cluster the profile's exec extension names.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { FleetMembers } from '../../src/runtime/fleet-members.js';
import type { ClusterState, SourceError } from '../../src/sources/types.js';
import type { KubeApiServer } from '../harness/kube-apiserver.js';
import { eventually } from '../helpers/eventually.js';
import { createTestCa } from '../helpers/pki.js';
import { FleetEnv } from '../sources/fleet/fleet-env.js';
import { HEALTHY, clusterProfile } from '../sources/fleet/profile-fixtures.js';
import { pool, silent } from '../sources/kubernetes/kube-fixtures.js';

class Recorder {
  readonly states = new Map<string, ClusterState>();
  readonly errors: SourceError[] = [];
  readonly removed: string[] = [];
  onState = (s: ClusterState): void => void this.states.set(s.cluster, s);
  onError = (e: SourceError): void => void this.errors.push(e);
  onRemoved = (c: string): void => {
    this.removed.push(c);
    this.states.delete(c);
  };
  pools(cluster: string): string[] {
    return (this.states.get(cluster)?.objects ?? []).filter((o) => o.kind === 'InferencePool').map((o) => o.metadata.name).sort();
  }
}

const ca = createTestCa('fleet members CA');
afterAll(() => ca.remove());

let env: FleetEnv;
let hub: KubeApiServer;
let members: Map<string, KubeApiServer>;
let fleet: FleetMembers | undefined;
let rec: Recorder;

const member = (name: string): Promise<KubeApiServer> => env.member(name);
const profileFor = (name: string, o: Parameters<FleetEnv['profile']>[1] = {}) => env.profile(name, o);

async function startFleet(extra: object = {}): Promise<FleetMembers> {
  const config = namedConfig(routerConfigSchema.parse({
    clusterName: 'local',
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ name: 'local', manifests: { paths: [env.dir] } }],
    kubernetes: { coalesceMs: 10, coalesceMaxMs: 50, initialSyncTimeoutMs: 5_000, backoffInitialMs: 50, backoffMaxMs: 200 },
    fleet: { clusterProfiles: await env.clusterProfiles('secret-reader.mjs', extra) },
  }));
  fleet = new FleetMembers(config, rec, silent);
  await fleet.start();
  return fleet;
}

beforeEach(async () => {
  env = await new FleetEnv(ca).start();
  hub = env.hub;
  members = env.members;
  rec = new Recorder();
});

afterEach(async () => {
  await fleet?.stop();
  fleet = undefined;
  await env.close();
});

describe('FleetMembers', () => {
  it("starts a member per profile, reading it with the plugin's token; follows profiles added and removed", async () => {
    await member('cluster-a');
    await member('cluster-b');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    hub.create('clusterprofiles', profileFor('cluster-b'));
    const f = await startFleet();
    expect([rec.pools('cluster-a'), rec.pools('cluster-b')]).toEqual([['cluster-a-pool'], ['cluster-b-pool']]);
    expect(f.debug().members.map((m) => [m.cluster, m.state, m.provider, m.credential?.runs])).toEqual([
      ['cluster-a', 'serving', 'secretreader', 1],
      ['cluster-b', 'serving', 'secretreader', 1],
    ]);
    expect(JSON.stringify(f.debug())).not.toMatch(/token-of/);

    await member('cluster-c');
    hub.create('clusterprofiles', profileFor('cluster-c'));
    await eventually(() => expect(rec.pools('cluster-c')).toEqual(['cluster-c-pool']), 5_000);
    members.get('cluster-c')!.create('inferencepools', pool('late-pool'));
    await eventually(() => expect(rec.pools('cluster-c')).toEqual(['cluster-c-pool', 'late-pool']), 5_000);

    hub.delete('clusterprofiles', 'fleet-system', 'cluster-b');
    await eventually(() => expect(rec.removed).toEqual(['cluster-b']), 5_000);
    await eventually(() => expect(members.get('cluster-b')!.watchCount()).toBe(0), 5_000);
    expect(f.debug().members.map((m) => m.cluster)).toEqual(['cluster-a', 'cluster-c']);
  });

  it('a profile that is not ControlPlaneHealthy is an outage: no objects until it is healthy again', async () => {
    await member('cluster-a');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    const f = await startFleet();
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    const sick = { type: 'ControlPlaneHealthy', status: 'False', reason: 'ManagedClusterLeaseUpdateStopped', message: 'lease not updated', lastTransitionTime: '2026-01-02T00:00:00Z' };
    hub.updateStatus('clusterprofiles', profileFor('cluster-a', { conditions: [sick] }));
    await eventually(() => expect(rec.pools('cluster-a')).toEqual([]), 5_000);
    expect(rec.errors.at(-1)?.message).toBe(
      'ClusterProfile fleet-system/cluster-a: ControlPlaneHealthy is False (ManagedClusterLeaseUpdateStopped): lease not updated: cluster cluster-a is treated as an outage (no traffic) until it is healthy',
    );
    expect(f.debug().members[0]).toMatchObject({ cluster: 'cluster-a', state: 'outage' });
    hub.updateStatus('clusterprofiles', profileFor('cluster-a', { conditions: [HEALTHY] }));
    await eventually(() => expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']), 5_000);
    expect(f.debug().members[0]?.state).toBe('serving');
  });

  it('a profile whose connection changes keeps its last objects (stale) until the new connection answers', async () => {
    await member('cluster-a');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    await startFleet();
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    // The hub publishes a CA that does not sign the member's certificate: the new connection fails TLS.
    const otherCa = createTestCa('not the member CA');
    try {
      hub.updateStatus('clusterprofiles', profileFor('cluster-a', { caData: otherCa.cert.toString('base64') }));
      await eventually(() => expect(rec.states.get('cluster-a')?.stale).toBe(true), 10_000);
      expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    } finally {
      otherCa.remove();
    }
    hub.updateStatus('clusterprofiles', profileFor('cluster-a'));
    members.get('cluster-a')!.create('inferencepools', pool('after-fix'));
    await eventually(() => expect([rec.states.get('cluster-a')?.stale, rec.pools('cluster-a')]).toEqual([false, ['after-fix', 'cluster-a-pool']]), 10_000);
  });

  it('refuses a second profile claiming a cluster and a profile naming the local cluster; keeps serving the first', async () => {
    await member('cluster-a');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    hub.create('clusterprofiles', clusterProfile('impostor', { server: 'https://elsewhere.example', properties: { 'cluster.clusterset.k8s.io': 'cluster-a' } }));
    hub.create('clusterprofiles', clusterProfile('local', { server: 'https://local.example' }));
    const f = await startFleet();
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    expect(f.debug().refused.map((r) => r.message).sort()).toEqual([
      'ClusterProfile fleet-system/impostor: cluster "cluster-a" is already claimed by ClusterProfile fleet-system/cluster-a',
      'ClusterProfile fleet-system/local: cluster "local" is the local cluster (the router runs in it); it is not a remote member',
    ]);
    expect(rec.states.has('local')).toBe(false);
  });

  it('reads only the selected profiles; a profile whose provider is not in the provider file is reported, not started', async () => {
    await member('cluster-a');
    await member('cluster-b');
    hub.create('clusterprofiles', profileFor('cluster-a', { labels: { 'x-k8s.io/cluster-manager': 'kubefleet' } }));
    hub.create('clusterprofiles', profileFor('cluster-b'));
    hub.create('clusterprofiles', clusterProfile('cluster-x', { server: 'https://x.example', provider: 'cp-creds', labels: { 'x-k8s.io/cluster-manager': 'kubefleet' } }));
    const f = await startFleet({ labelSelector: 'x-k8s.io/cluster-manager=kubefleet' });
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    expect(rec.states.has('cluster-b')).toBe(false);
    expect(f.debug().members.find((m) => m.cluster === 'cluster-x')).toMatchObject({ state: 'no-credentials', message: expect.stringMatching(/none of its access providers \(cp-creds\)/) });
    expect(rec.errors.find((e) => e.cluster === 'cluster-x')?.reason).toBe('auth');
  });

  it('a profile whose every access provider was left out says why each was, naming the field', async () => {
    const profile = profileFor('cluster-a');
    const provider = profile.status.accessProviders[0]!;
    hub.create('clusterprofiles', { ...profile, status: { ...profile.status, accessProviders: [{ ...provider, cluster: { ...provider.cluster, 'proxy-url': 42 } }] } });
    const f = await startFleet();
    const message = 'ClusterProfile fleet-system/cluster-a: none of its access providers (none) is in the provider file';
    expect(f.debug().members[0]).toMatchObject({ cluster: 'cluster-a', state: 'no-credentials' });
    expect(f.debug().members[0]?.message).toContain(message);
    expect(f.debug().members[0]?.message).toMatch(/; left out: status.accessProviders\[0\]: access provider secretreader: cluster.proxy-url is not a string$/);
    expect(rec.errors.find((e) => e.cluster === 'cluster-a')?.message).toBe(f.debug().members[0]?.message);
  });

  it("a profile with many access providers left out: the member's error names the first five and counts the rest", async () => {
    const profile = profileFor('cluster-a');
    const provider = profile.status.accessProviders[0]!;
    const broken = Array.from({ length: 2_000 }, (_, i) => ({ ...provider, name: `p${i}`, cluster: { ...provider.cluster, 'proxy-url': 42 } }));
    hub.create('clusterprofiles', { ...profile, status: { ...profile.status, accessProviders: broken } });
    const other = profileFor('cluster-b');
    const unknown = Array.from({ length: 2_000 }, (_, i) => ({ ...provider, name: `unknown-${i}`, cluster: { ...provider.cluster, server: `https://b${i}.example` } }));
    hub.create('clusterprofiles', { ...other, status: { ...other.status, accessProviders: unknown } });
    const f = await startFleet();
    const message = f.debug().members[0]?.message ?? '';
    expect(message).toMatch(/; left out: status.accessProviders\[0\]: access provider p0: cluster.proxy-url is not a string; .*status.accessProviders\[4\]: access provider p4: .* and 1995 more$/);
    expect(message.length).toBeLessThan(1_000);
    const offered = f.debug().members[1]?.message ?? '';
    expect(offered).toMatch(/^ClusterProfile fleet-system\/cluster-b: none of its access providers \(unknown-0, unknown-1, .*unknown-9 and 1990 more\) is in the provider file /);
    expect(offered.length).toBeLessThan(1_000);
  });

  it('a token the member refuses (401) is fetched again from the plugin', async () => {
    const a = await member('cluster-a');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    const f = await startFleet();
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    // The member rotates its token: the plugin's store has the new one; open watches are cut.
    a.acceptToken('rotated-token');
    writeFileSync(join(env.dir, 'secrets', 'cluster-a'), 'rotated-token');
    a.dropWatches();
    a.create('inferencepools', pool('after-rotation'));
    await eventually(() => expect(rec.pools('cluster-a')).toEqual(['after-rotation', 'cluster-a-pool']), 10_000);
    expect(f.debug().members[0]?.credential?.runs).toBeGreaterThanOrEqual(2);
  });

  it('connects at most members.startConcurrency members at once; the next starts as a slot frees', async () => {
    const names = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'];
    for (const n of names) {
      await member(n);
      hub.create('clusterprofiles', profileFor(n));
    }
    // Every member's lists go unanswered until the router gives up on them (requestTimeoutMs): a slot stays taken that long.
    const unhang = names.map((n) => members.get(n)!.hang((r) => r.method === 'GET' && !r.watch));
    const touched = (): string[] => names.filter((n) => members.get(n)!.requests.length > 0);
    const starting = startFleet({ members: { startConcurrency: 2, requestTimeoutMs: 3_000 } });
    await eventually(() => expect(touched()).toHaveLength(2), 5_000);
    // No event marks "still waiting": a fixed look well inside the first two members' request timeout.
    await new Promise((r) => setTimeout(r, 500));
    expect(touched()).toHaveLength(2);
    const f = fleet!;
    const runs = (n: string): number | undefined => f.debug().members.find((m) => m.cluster === n)?.credential?.runs;
    expect(names.filter((n) => !touched().includes(n)).map(runs)).toEqual([0, 0, 0]);
    for (const u of unhang) u();
    await starting;
    await eventually(() => expect(names.map((n) => rec.pools(n))).toEqual(names.map((n) => [`${n}-pool`])), 10_000);
    expect(names.map(runs)).toEqual([1, 1, 1, 1, 1]);
  });

  it('members waiting for a start slot hold up no later plan: an outage and a removal apply at once, and a member removed while it waited never connects', async () => {
    await member('good');
    hub.create('clusterprofiles', profileFor('good'));
    await startFleet({ members: { startConcurrency: 1, requestTimeoutMs: 20_000 } });
    expect(rec.pools('good')).toEqual(['good-pool']);
    // Three members whose lists go unanswered: each holds the one slot until the initial sync gives up (5 s).
    const hung = ['h-1', 'h-2', 'h-3'];
    const unhang: (() => void)[] = [];
    for (const n of hung) {
      await member(n);
      unhang.push(members.get(n)!.hang((r) => r.method === 'GET' && !r.watch));
      hub.create('clusterprofiles', profileFor(n));
    }
    await eventually(() => expect(hung.filter((n) => members.get(n)!.requests.length > 0)).toEqual(['h-1']), 5_000);
    const sick = { type: 'ControlPlaneHealthy', status: 'False', reason: 'ManagedClusterLeaseUpdateStopped', message: 'lease not updated', lastTransitionTime: '2026-01-02T00:00:00Z' };
    hub.updateStatus('clusterprofiles', profileFor('good', { conditions: [sick] }));
    hub.delete('clusterprofiles', 'fleet-system', 'h-3');
    // Well inside the first hung member's 5 s: the plan is applied while h-1 holds the slot.
    await eventually(() => expect([rec.pools('good'), rec.removed]).toEqual([[], ['h-3']]), 3_000);
    for (const u of unhang) u();
    await eventually(() => expect(rec.pools('h-2')).toEqual(['h-2-pool']), 15_000);
    expect(members.get('h-3')!.requests).toHaveLength(0);
  });

  it('a member removed while it holds the start slot gives the slot up at once', async () => {
    await startFleet({ members: { startConcurrency: 1, requestTimeoutMs: 20_000 } });
    // h-1's lists go unanswered: it would hold the one slot until the initial sync gives up (5 s).
    await member('h-1');
    members.get('h-1')!.hang((r) => r.method === 'GET' && !r.watch);
    hub.create('clusterprofiles', profileFor('h-1'));
    await eventually(() => expect(members.get('h-1')!.requests.length).toBeGreaterThan(0), 5_000);
    await member('next');
    hub.create('clusterprofiles', profileFor('next'));
    hub.delete('clusterprofiles', 'fleet-system', 'h-1');
    await eventually(() => expect(rec.removed).toEqual(['h-1']), 3_000);
    // Well inside the 5 s h-1's start would otherwise have held the slot.
    await eventually(() => expect(rec.pools('next')).toEqual(['next-pool']), 3_000);
  });

  it('reads ClusterProfiles in the configured version', async () => {
    await member('cluster-a');
    hub.create('clusterprofiles', profileFor('cluster-a'));
    await startFleet({ apiVersion: 'v1alpha2' });
    expect(rec.pools('cluster-a')).toEqual(['cluster-a-pool']);
    await fleet?.stop();
    const f = await startFleet({ apiVersion: 'v1beta1' });
    expect(f.debug().hub).toMatchObject({ resource: 'clusterprofiles.multicluster.x-k8s.io/v1beta1', state: 'failed', reason: 'missing-crd' });
  });
});
