import { describe, expect, it } from 'vitest';
import { type DecodedProfile, decodeClusterProfile, planMembers } from '../../../src/sources/fleet/cluster-profile.js';
import { clusterProfile } from './profile-fixtures.js';

const decode = (o: object): DecodedProfile => decodeClusterProfile(o as Record<string, unknown>);
const ok = (o: object) => {
  const d = decode(o);
  if (!d.ok) throw new Error(d.message);
  return d.profile;
};

describe('decodeClusterProfile', () => {
  it('reads an Open Cluster Management profile: name, health, access providers with their exec extension', () => {
    const p = ok(clusterProfile('cluster-a', { server: 'https://a.example:6443', properties: { 'cluster.clusterset.k8s.io': 'cluster-a' } }));
    expect(p).toMatchObject({
      ref: 'fleet-system/cluster-a',
      member: 'cluster-a',
      health: { healthy: true, reason: 'ManagedClusterAvailable' },
      accessProviders: [
        {
          name: 'secretreader',
          cluster: { server: 'https://a.example:6443', 'certificate-authority-data': 'Q0E=', extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'cluster-a' } }] },
        },
      ],
      problems: [],
    });
  });

  it('names the member by its ClusterSet property when present, else by the profile', () => {
    expect(ok(clusterProfile('p-1', { properties: { 'cluster.clusterset.k8s.io': 'east' } })).member).toBe('east');
    expect(ok(clusterProfile('west', {})).member).toBe('west');
    const bad = decode(clusterProfile('p-2', { properties: { 'cluster.clusterset.k8s.io': 'East_1' } }));
    expect(bad).toEqual({ ok: false, ref: 'fleet-system/p-2', message: expect.stringMatching(/status.properties cluster.clusterset.k8s.io "East_1" is not a valid member name/) });
  });

  it('is an outage unless ControlPlaneHealthy is True, or while Joined is False', () => {
    const health = (conditions: object[]) => ok(clusterProfile('a', { conditions })).health;
    expect(health([{ type: 'ControlPlaneHealthy', status: 'False', reason: 'Unreachable', message: 'lease not renewed' }])).toEqual({
      healthy: false,
      reason: 'Unreachable',
      message: 'ControlPlaneHealthy is False (Unreachable): lease not renewed',
    });
    expect(health([{ type: 'ControlPlaneHealthy', status: 'Unknown', reason: 'Lost' }]).healthy).toBe(false);
    expect(health([])).toEqual({ healthy: false, reason: 'NotReported', message: 'ControlPlaneHealthy is not reported' });
    expect(health([{ type: 'ControlPlaneHealthy', status: 'True', reason: 'OK' }, { type: 'Joined', status: 'False', reason: 'Left' }]).message).toBe('Joined is False (Left)');
  });

  it("cuts a condition's text and escapes its control characters: a hub's 100 KB message or terminal escapes reach no log or terminal", () => {
    const huge = `\u001b[2J\u001b]0;owned\u0007${'x'.repeat(100_000)}`;
    const h = ok(clusterProfile('a', { conditions: [{ type: 'ControlPlaneHealthy', status: 'False', reason: `R\u001b[31m${'r'.repeat(5_000)}`, message: huge }] })).health;
    expect(h.healthy).toBe(false);
    expect(h.message.length).toBeLessThan(700);
    expect(h.reason.length).toBeLessThan(300);
    expect(`${h.message}${h.reason}`).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(h.message).toMatch(/^ControlPlaneHealthy is False \(R\\u001b\[31mr+…\): \\u001b\[2J\\u001b\]0;owned\\u0007x+…$/);
  });

  it('leaves out access providers naming host files or without an http(s) server, and reads the older credentialProviders', () => {
    const p = ok({
      metadata: { name: 'a', namespace: 'fleet-system' },
      status: {
        conditions: [{ type: 'ControlPlaneHealthy', status: 'True' }],
        accessProviders: [
          { name: 'files', cluster: { server: 'https://a.example', 'certificate-authority': '/etc/ssl/ca.pem' } },
          { name: 'nourl', cluster: { server: 'a.example:6443' } },
          { name: 'ca', cluster: { server: 'https://a.example', 'certificate-authority-data': 'not base64!' } },
        ],
        credentialProviders: [{ name: 'old', cluster: { server: 'https://a.example', 'unknown-field': 1 } }],
      },
    });
    expect(p.accessProviders).toEqual([]);
    expect(p.credentialProviders).toEqual([{ name: 'old', cluster: { server: 'https://a.example' } }]);
    expect(p.problems).toEqual([
      "status.accessProviders[0]: access provider files: cluster.certificate-authority names a file on the reader's host; use certificate-authority-data",
      'status.accessProviders[1]: access provider nourl: cluster.server is not an http(s) URL',
      'status.accessProviders[2]: access provider ca: cluster.certificate-authority-data is not base64',
    ]);
  });

  it('leaves out access providers whose cluster fields have the wrong type or an unusable proxy, naming the field', () => {
    const p = ok({
      metadata: { name: 'a', namespace: 'fleet-system' },
      status: {
        conditions: [{ type: 'ControlPlaneHealthy', status: 'True' }],
        accessProviders: [
          { name: 'p1', cluster: { server: 'https://a.example', 'proxy-url': 123 } },
          { name: 'p2', cluster: { server: 'https://a.example', 'proxy-url': 'ftp://proxy.example' } },
          { name: 'p3', cluster: { server: 'https://a.example', 'tls-server-name': { a: 1 } } },
          { name: 'p4', cluster: { server: 'https://a.example', 'insecure-skip-tls-verify': 'true' } },
          { name: 'p5', cluster: { server: 'https://a.example', 'disable-compression': 1 } },
          { name: 'good', cluster: { server: 'https://a.example', 'proxy-url': 'http://proxy.example:3128', 'tls-server-name': 'a', 'insecure-skip-tls-verify': false } },
        ],
      },
    });
    expect(p.accessProviders.map((a) => a.name)).toEqual(['good']);
    expect(p.problems).toEqual([
      'status.accessProviders[0]: access provider p1: cluster.proxy-url is not a string',
      'status.accessProviders[1]: access provider p2: cluster.proxy-url is not an http(s) or socks URL',
      'status.accessProviders[2]: access provider p3: cluster.tls-server-name is not a string',
      'status.accessProviders[3]: access provider p4: cluster.insecure-skip-tls-verify is not a boolean',
      'status.accessProviders[4]: access provider p5: cluster.disable-compression is not a boolean',
    ]);
  });

  it('leaves out access providers whose name is no provider name, without repeating it', () => {
    const p = ok({
      metadata: { name: 'a', namespace: 'fleet-system' },
      status: {
        conditions: [{ type: 'ControlPlaneHealthy', status: 'True' }],
        accessProviders: [
          { name: `evil\u001b[2J${'n'.repeat(100_000)}`, cluster: { server: 'https://a.example' } },
          { name: 'open-cluster-management.io/cp-creds_v1', cluster: { server: 'https://a.example' } },
        ],
      },
    });
    expect(p.accessProviders.map((a) => a.name)).toEqual(['open-cluster-management.io/cp-creds_v1']);
    expect(p.problems).toEqual(['status.accessProviders[0]: name is not a provider name (letters, digits, "-", "_", ".", "/"; at most 253)']);
  });
});

describe('planMembers', () => {
  it('refuses a second profile claiming a cluster (by name or API server) and one claiming a static member; the earliest keeps it', () => {
    const profiles = [
      decode(clusterProfile('late', { created: '2026-01-02T00:00:00Z', server: 'https://b.example', properties: { 'cluster.clusterset.k8s.io': 'a' } })),
      decode(clusterProfile('a', { created: '2026-01-01T00:00:00Z', server: 'https://a.example' })),
      decode(clusterProfile('same-server', { created: '2026-01-03T00:00:00Z', server: 'https://A.example:443/' })),
      decode(clusterProfile('local', { server: 'https://local.example' })),
      decode(clusterProfile('c', { server: 'https://c.example' })),
      decode(clusterProfile('Bad', {})),
    ];
    const plan = planMembers(profiles, new Set(['local']));
    expect([...plan.members.keys()].sort()).toEqual(['a', 'c']);
    expect(plan.members.get('a')?.ref).toBe('fleet-system/a');
    expect(plan.refused.map((r) => r.message)).toEqual([
      'ClusterProfile fleet-system/Bad: metadata.name "Bad" is not a valid member name (a lower-case RFC 1123 name)',
      'ClusterProfile fleet-system/local: cluster "local" is a static member (clusters[]); the static entry is used',
      'ClusterProfile fleet-system/late: cluster "a" is already claimed by ClusterProfile fleet-system/a',
      'ClusterProfile fleet-system/same-server: API server https://a.example:443 is already claimed by ClusterProfile fleet-system/a (cluster "same-server")',
    ]);
  });

  it("never makes the local cluster a member: its own profile (even naming another cluster or invalid) and any profile naming it are refused", () => {
    const profiles = [
      decode(clusterProfile('home', { server: 'https://home.example', properties: { 'cluster.clusterset.k8s.io': 'elsewhere' } })),
      decode(clusterProfile('copy', { server: 'https://copy.example', properties: { 'cluster.clusterset.k8s.io': 'here' } })),
      decode(clusterProfile('b', { server: 'https://b.example' })),
    ];
    const plan = planMembers(profiles, new Set(['here']), { cluster: 'here', profile: 'fleet-system/home' });
    expect([...plan.members.keys()]).toEqual(['b']);
    expect(plan.refused.map((r) => r.message)).toEqual([
      "ClusterProfile fleet-system/home: this cluster's own profile (fleet.clusterProfiles.localProfile); the local cluster here is not a remote member",
      'ClusterProfile fleet-system/copy: cluster "here" is the local cluster (the router runs in it); it is not a remote member',
    ]);
    const invalid = planMembers([decode(clusterProfile('home', { properties: { 'cluster.clusterset.k8s.io': 'Not Valid' } }))], new Set(), { cluster: 'here', profile: 'fleet-system/home' });
    expect(invalid.refused.map((r) => r.message)).toEqual([expect.stringMatching(/^ClusterProfile fleet-system\/home: this cluster's own profile/)]);
  });

  it('keeps members in an outage: health decides traffic, not membership', () => {
    const plan = planMembers([decode(clusterProfile('a', { conditions: [{ type: 'ControlPlaneHealthy', status: 'False' }] }))], new Set());
    expect(plan.members.get('a')?.health.healthy).toBe(false);
  });
});
