/**
 * A fleet for tests: a hub API server stand-in holding ClusterProfiles, HTTPS member
 * stand-ins (certificates of a test CA) that each accept only their own bearer token, and a
 * provider file running a test credential plugin that reads that token from a "secret"
 * directory (as cluster-inventory-api's secretreader reads a Secret).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { KubeApiServer, writeKubeconfig } from '../../harness/kube-apiserver.js';
import type { TestCa } from '../../helpers/pki.js';
import { pool } from '../kubernetes/kube-fixtures.js';
import { clusterProfile, type ProfileOptions } from './profile-fixtures.js';

export const PLUGINS = resolve(import.meta.dirname, '../../fixtures/credential-plugins');

export class FleetEnv {
  readonly dir = mkdtempSync(join(tmpdir(), 'mcip-fleet-'));
  readonly hub = new KubeApiServer();
  readonly members = new Map<string, KubeApiServer>();

  constructor(private readonly ca: TestCa) {
    mkdirSync(join(this.dir, 'secrets'));
  }

  async start(): Promise<this> {
    await this.hub.start();
    return this;
  }

  /** A member accepting only `token-of-<name>` (the plugin's secret for it), holding the InferencePool `<name>-pool`. */
  async member(name: string): Promise<KubeApiServer> {
    const s = new KubeApiServer({ token: `token-of-${name}`, tls: this.ca.leaf(name, ['IP:127.0.0.1']) });
    await s.start();
    writeFileSync(join(this.dir, 'secrets', name), `token-of-${name}`);
    s.create('inferencepools', pool(`${name}-pool`));
    this.members.set(name, s);
    return s;
  }

  /** The profile of a member stand-in: its URL and the test CA. */
  profile(name: string, o: ProfileOptions = {}) {
    return clusterProfile(name, { server: this.members.get(name)?.url ?? 'https://unused.example', caData: this.ca.cert.toString('base64'), ...o });
  }

  /** fleet.clusterProfiles for this fleet: the hub's kubeconfig and a provider file "secretreader" running `plugin`. */
  async clusterProfiles(plugin = 'secret-reader.mjs', extra: object = {}): Promise<object> {
    const providerFile = join(this.dir, 'providers.json');
    const execConfig = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: [join(PLUGINS, plugin)],
      env: [{ name: 'SECRETS_DIR', value: join(this.dir, 'secrets') }],
      provideClusterInfo: true,
    };
    writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'secretreader', execConfig }] }));
    const kubeconfig = await writeKubeconfig(this.dir, { server: this.hub.url }, 'hub-kubeconfig');
    return { hub: { kubeconfig }, namespace: 'fleet-system', providerFile, ...extra };
  }

  async close(): Promise<void> {
    await this.hub.close();
    for (const s of this.members.values()) await s.close();
  }
}
