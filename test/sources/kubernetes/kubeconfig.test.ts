// Kubeconfig credential plugins run commands on the router's host: refused unless the
// member allows them; insecure-skip-tls-verify loads but is warned about.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { kubeConfigToken, loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'mcip-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, user: object, cluster: object = {}): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'b', cluster: { server: 'https://10.0.0.1:6443', ...cluster } }],
      users: [{ name: 'reader', user }],
      contexts: [{ name: 'b', context: { cluster: 'b', user: 'reader' } }],
      'current-context': 'b',
    }),
  );
  return path;
}

const EXEC = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/usr/local/bin/fetch-token', args: ['--cluster', 'b'] } };

describe('loadKubeConfig', () => {
  it('refuses an exec plugin unless the member allows it, naming the member, the command and the field', () => {
    const path = kubeconfig('exec', EXEC);
    expect(() => loadKubeConfig({ kubeconfig: path, namespaces: [] }, { cluster: 'cluster-b' })).toThrow(
      /cluster "cluster-b": .*exec plugin \(\/usr\/local\/bin\/fetch-token\).*allowExecPlugins: true/,
    );
    expect(loadKubeConfig({ kubeconfig: path, namespaces: [], allowExecPlugins: true }).getCurrentUser()?.name).toBe('reader');
  });

  it('refuses an auth-provider plugin the same way', () => {
    const path = kubeconfig('provider', { 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/usr/bin/gcloud' } } });
    expect(() => loadKubeConfig({ kubeconfig: path, namespaces: [] })).toThrow(/auth-provider gcp.*allowExecPlugins/);
  });

  it('refuses an exec command inside an auth-provider whatever the provider is called (client-node runs config.exec of any provider)', () => {
    const path = kubeconfig('provider-exec', { 'auth-provider': { name: 'tokenFile', config: { exec: { command: '/usr/local/bin/fetch-token' } } } });
    expect(() => loadKubeConfig({ kubeconfig: path, namespaces: [] })).toThrow(/exec plugin \(\/usr\/local\/bin\/fetch-token\) in the auth-provider tokenFile.*allowExecPlugins/);
  });

  it('accepts a static token (the scrape token of the member) and warns about insecure-skip-tls-verify', () => {
    const path = kubeconfig('token', { token: 'abc' }, { 'insecure-skip-tls-verify': true });
    const warnings: string[] = [];
    const kc = loadKubeConfig({ kubeconfig: path, namespaces: [] }, { warn: (m) => warnings.push(m) });
    expect(kubeConfigToken(kc)).toEqual({ token: 'abc' });
    expect(warnings).toEqual([expect.stringContaining('insecure-skip-tls-verify')]);
    expect(loadKubeConfig({ kubeconfig: kubeconfig('verified', { token: 'abc' }), namespaces: [] }, { warn: (m) => warnings.push(m) })).toBeDefined();
    expect(warnings).toHaveLength(1);
  });
});
