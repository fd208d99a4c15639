/**
 * Naming the local cluster at start: its About API (an API server stand-in for
 * the local cluster), its own ClusterProfile (a hub stand-in), the config; over
 * real HTTP. The config that comes out names the local entry everywhere.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../../src/config/schema.js';
import { IdentityError, IdentityMismatchError } from '../../../src/sources/identity/cluster-identity.js';
import { resolveLocalCluster } from '../../../src/sources/identity/resolve-local.js';
import { KubeApiServer, writeKubeconfig } from '../../harness/kube-apiserver.js';
import { clusterProfile } from '../fleet/profile-fixtures.js';
import { clusterProperty, useStandinCluster } from './about-fixtures.js';

const local = useStandinCluster();
let hub: KubeApiServer;
let hubKubeconfig: string;
let dir: string;
beforeEach(async () => {
  hub = new KubeApiServer();
  await hub.start();
  dir = await mkdtemp(join(tmpdir(), 'mcip-local-name-'));
  hubKubeconfig = await writeKubeconfig(dir, { server: hub.url }, 'hub-kubeconfig');
});
afterEach(async () => {
  await hub.close();
  await rm(dir, { recursive: true, force: true });
});

const PROPERTY = 'cluster.clusterset.k8s.io';
const fromKube = () => ({ kubernetes: { kubeconfig: local.kubeconfig, requestTimeoutMs: 1000 } });
const fromFiles = { manifests: { paths: ['/nonexistent'] } };

/** A config: `localEntry` is clusters[0]; `localProfile` sets fleet.clusterProfiles on the hub stand-in. */
function config(o: { clusterName?: string; localEntry?: object; localProfile?: string; more?: object[] } = {}) {
  return routerConfigSchema.parse({
    ...(o.clusterName !== undefined ? { clusterName: o.clusterName } : {}),
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [o.localEntry ?? fromKube(), ...(o.more ?? [])],
    ...(o.localProfile !== undefined
      ? { fleet: { clusterProfiles: { hub: { kubeconfig: hubKubeconfig, requestTimeoutMs: 1000 }, namespace: 'fleet-system', providerFile: join(dir, 'providers.json'), localProfile: o.localProfile } } }
      : {}),
  });
}

const refusal = (c: ReturnType<typeof config>) => resolveLocalCluster(c).then(() => undefined, (e: unknown) => e as Error);

describe('naming the local cluster at start', () => {
  it('without clusterName, from the About API; the local entry (the only one, or the one marked local) takes the name', async () => {
    local.server.create('clusterproperties', clusterProperty('cluster-east'));
    const { config: named, identity } = await resolveLocalCluster(config());
    expect(named.clusterName).toBe('cluster-east');
    expect(named.clusters.map((c) => c.name)).toEqual(['cluster-east']);
    expect(identity).toEqual({ name: 'cluster-east', from: 'the About API of the local cluster (clusters[0]) (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)' });

    const marked = await resolveLocalCluster(config({ localEntry: { name: 'cluster-b', ...fromFiles }, more: [{ local: true, ...fromKube() }] }));
    expect(marked.config.clusters.map((c) => c.name)).toEqual(['cluster-b', 'cluster-east']);
    expect(marked.identity.from).toMatch(/^the About API of the local cluster \(clusters\[1\]\)/);
  });

  it("without clusterName, from the local ClusterProfile: its cluster.clusterset.k8s.io property, else its name", async () => {
    hub.create('clusterprofiles', clusterProfile('member-7', { properties: { [PROPERTY]: 'cluster-west' } }));
    const byProperty = await resolveLocalCluster(config({ localEntry: fromFiles, localProfile: 'member-7' }));
    expect(byProperty.config.clusterName).toBe('cluster-west');
    expect(byProperty.config.clusters[0]?.name).toBe('cluster-west');
    expect(byProperty.identity.from).toBe('ClusterProfile fleet-system/member-7 on the hub (status.properties cluster.clusterset.k8s.io)');

    hub.create('clusterprofiles', clusterProfile('cluster-north', {}));
    const byName = await resolveLocalCluster(config({ localEntry: fromFiles, localProfile: 'cluster-north' }));
    expect(byName.config.clusterName).toBe('cluster-north');
    expect(byName.identity.from).toBe('ClusterProfile fleet-system/cluster-north on the hub (metadata.name)');
    // Read through the hub's API, as its own object.
    expect(hub.requests.some((r) => r.plural === 'clusterprofiles' && r.namespace === 'fleet-system' && r.name === 'cluster-north')).toBe(true);
  });

  it('from the config alone when neither says anything, saying why', async () => {
    const { config: named, identity } = await resolveLocalCluster(config({ clusterName: 'cluster-a', localEntry: { name: 'cluster-a', ...fromKube() } }));
    expect(named.clusterName).toBe('cluster-a');
    expect(identity.from).toMatch(/^config clusterName "cluster-a" \(About API: no ClusterProperty cluster\.clusterset\.k8s\.io/);
    // The local entry's own name counts as the config's.
    const byEntry = await resolveLocalCluster(config({ localEntry: { name: 'cluster-a', ...fromKube() }, localProfile: 'gone' }));
    expect(byEntry.identity.from).toMatch(/^config clusters\[0\]\.name "cluster-a" \(About API: no ClusterProperty .*; local ClusterProfile: no ClusterProfile fleet-system\/gone/);
    // Both present and agreeing: the About API first, matching the rest.
    local.server.create('clusterproperties', clusterProperty('cluster-a'));
    hub.create('clusterprofiles', clusterProfile('member-1', { properties: { [PROPERTY]: 'cluster-a' } }));
    const all = await resolveLocalCluster(config({ clusterName: 'cluster-a', localEntry: { name: 'cluster-a', ...fromKube() }, localProfile: 'member-1' }));
    expect(all.identity.from).toBe(
      'the About API of cluster cluster-a (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1), matching ClusterProfile fleet-system/member-1 on the hub (status.properties cluster.clusterset.k8s.io) and config clusterName "cluster-a"',
    );
  });

  it('every pair of sources that disagree is refused, naming both values and where each came from', async () => {
    hub.create('clusterprofiles', clusterProfile('member-7', { properties: { [PROPERTY]: 'cluster-west' } }));
    const profileVsConfig = await refusal(config({ clusterName: 'cluster-a', localEntry: { name: 'cluster-a', ...fromFiles }, localProfile: 'member-7' }));
    expect(profileVsConfig).toBeInstanceOf(IdentityMismatchError);
    expect(profileVsConfig?.message).toBe(
      'cluster name mismatch: config clusterName "cluster-a" (the router config) differs from "cluster-west" (ClusterProfile fleet-system/member-7 on the hub (status.properties cluster.clusterset.k8s.io)); this cluster is "cluster-west" in its ClusterSet: set clusterName and its clusters[].name to "cluster-west", or correct fleet.clusterProfiles.localProfile or the profile',
    );

    local.server.create('clusterproperties', clusterProperty('cluster-east'));
    const aboutVsConfig = await refusal(config({ localEntry: { name: 'cluster-a', ...fromKube() } }));
    expect(aboutVsConfig?.message).toMatch(
      /^cluster name mismatch: config clusters\[0\]\.name "cluster-a" \(the router config\) differs from "cluster-east" \(the About API of cluster cluster-a \(ClusterProperty cluster\.clusterset\.k8s\.io, about\.k8s\.io\/v1beta1\)\); this cluster is "cluster-east" in its ClusterSet: set the local clusters\[\] entry's name to "cluster-east", or correct the ClusterProperty$/,
    );

    const aboutVsProfile = await refusal(config({ localProfile: 'member-7' }));
    expect(aboutVsProfile).toBeInstanceOf(IdentityMismatchError);
    expect(aboutVsProfile?.message).toBe(
      'cluster name mismatch: "cluster-west" (ClusterProfile fleet-system/member-7 on the hub (status.properties cluster.clusterset.k8s.io)) differs from "cluster-east" (the About API of the local cluster (clusters[0]) (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)); this cluster is "cluster-east" in its ClusterSet: correct fleet.clusterProfiles.localProfile or the profile, or correct the ClusterProperty',
    );

    // Three sources, three names: every pair is named.
    const three = await refusal(config({ clusterName: 'cluster-a', localEntry: { name: 'cluster-a', ...fromKube() }, localProfile: 'member-7' }));
    expect(three?.message.match(/differs from/g)).toHaveLength(3);
    expect(three?.message).toContain('config clusterName "cluster-a" (the router config) differs from "cluster-east"');
    expect(three?.message).toContain('config clusterName "cluster-a" (the router config) differs from "cluster-west"');
    expect(three?.message).toContain('"cluster-west" (ClusterProfile fleet-system/member-7 on the hub (status.properties cluster.clusterset.k8s.io)) differs from "cluster-east"');
  });

  it('nothing naming the cluster is refused, saying what to set; a profile naming no valid cluster is refused', async () => {
    const none = await refusal(config({ localProfile: 'member-7' }));
    expect(none).toBeInstanceOf(IdentityError);
    expect(none?.message).toMatch(
      /^cluster name: nothing names the local cluster \(clusters\[0\]\) \(About API: no ClusterProperty cluster\.clusterset\.k8s\.io .*; local ClusterProfile: no ClusterProfile fleet-system\/member-7 .*\): set clusterName, or give the cluster its About API ClusterProperty cluster\.clusterset\.k8s\.io, or name its ClusterProfile in fleet\.clusterProfiles\.localProfile$/,
    );
    // The hub not answering is no name either.
    await hub.down();
    expect((await refusal(config({ localProfile: 'member-7' })))?.message).toMatch(/local ClusterProfile: ClusterProfile fleet-system\/member-7 .* on the hub: /);

    await hub.up();
    hub.create('clusterprofiles', clusterProfile('member-7', { properties: { [PROPERTY]: 'Cluster West!' } }));
    const invalid = await refusal(config({ localEntry: fromFiles, localProfile: 'member-7' }));
    expect(invalid).toBeInstanceOf(IdentityError);
    expect(invalid?.message).toBe(
      'cluster name: ClusterProfile fleet-system/member-7: status.properties cluster.clusterset.k8s.io "Cluster West!" is not a valid member name (a lower-case RFC 1123 name); it cannot name this cluster (fleet.clusterProfiles.localProfile)',
    );
  });
});

describe('a name from the About API or the hub that another clusters[] entry has', () => {
  it('is refused, naming the name, its source and the entry: the local cluster would read and write that member\'s entries', async () => {
    const member = { name: 'cluster-b', ...fromFiles };
    // The hub's profile for this cluster names it as another static member.
    hub.create('clusterprofiles', clusterProfile('member-7', { properties: { [PROPERTY]: 'cluster-b' } }));
    const byHub = await refusal(config({ localEntry: { local: true, ...fromFiles }, localProfile: 'member-7', more: [member] }));
    expect(byHub).toBeInstanceOf(IdentityError);
    expect(byHub?.message).toBe(
      'cluster name: "cluster-b" from ClusterProfile fleet-system/member-7 on the hub (status.properties cluster.clusterset.k8s.io) is the name of clusters[1], another cluster of the config; two clusters cannot share a name: correct the source, or that entry\'s name',
    );
    // The same from the About API.
    local.server.create('clusterproperties', clusterProperty('cluster-b'));
    const byAbout = await refusal(config({ localEntry: { local: true, ...fromKube() }, more: [member] }));
    expect(byAbout?.message).toMatch(/^cluster name: "cluster-b" from the About API of the local cluster \(clusters\[0\]\) .* is the name of clusters\[1\], another cluster of the config;/);
  });
});

describe('a name that is no valid name, with terminal control characters', () => {
  it('is quoted with them escaped, from the hub and from the About API (the message goes to stderr, the log and --check)', async () => {
    const hostile = 'x\u001b]0;owned\u0007\u001b[2J';
    hub.create('clusterprofiles', clusterProfile('member-7', { properties: { [PROPERTY]: hostile } }));
    const byHub = await refusal(config({ localEntry: fromFiles, localProfile: 'member-7' }));
    expect(byHub?.message).toBe(
      'cluster name: ClusterProfile fleet-system/member-7: status.properties cluster.clusterset.k8s.io "x\\u001b]0;owned\\u0007\\u001b[2J" is not a valid member name (a lower-case RFC 1123 name); it cannot name this cluster (fleet.clusterProfiles.localProfile)',
    );
    local.server.create('clusterproperties', clusterProperty(hostile));
    const byAbout = await refusal(config());
    expect(byAbout?.message).toMatch(/^cluster name: "x\\u001b\]0;owned\\u0007\\u001b\[2J" from the About API of the local cluster/);
    expect(`${byHub?.message}${byAbout?.message}`).not.toMatch(/[\u0000-\u001f]/);
  });
});

describe("the hub's refusal text", () => {
  it('is cut and its control characters escaped where the start-up message quotes it', async () => {
    const text = `denied\u001b]0;owned\u0007\u001b[2J${'x'.repeat(100_000)}`;
    hub.answerWith(
      (r) => r.plural === 'clusterprofiles',
      (_req, res) => {
        res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: text }));
      },
    );
    const none = await refusal(config({ localEntry: fromFiles, localProfile: 'member-7' }));
    expect(none?.message).toMatch(/local ClusterProfile: ClusterProfile fleet-system\/member-7 .* on the hub: .*forbidden \(403\): denied\\u001b\]0;owned\\u0007\\u001b\[2Jx+…/);
    expect(none?.message).not.toMatch(/[\u0000-\u001f]/);
    expect(none?.message.length).toBeLessThan(2_000);
  });
});
