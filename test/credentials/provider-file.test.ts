import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ARGS_EXTENSION,
  ENVS_EXTENSION,
  EXEC_EXTENSION,
  type AccessProvider,
  type ProviderFile,
  loadProviderFile,
  planPluginCall,
} from '../../src/credentials/provider-file.js';

const dir = mkdtempSync(join(tmpdir(), 'mcip-providers-'));
const write = (name: string, text: string): string => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

/** The provider file of cluster-inventory-api's secretreader example, as published. */
const UPSTREAM = JSON.stringify({
  providers: [
    {
      name: 'secretreader',
      execConfig: { apiVersion: 'client.authentication.k8s.io/v1', args: null, command: './bin/secretreader-plugin', env: null, provideClusterInfo: true },
    },
  ],
});

const access = (name: string, extensions: AccessProvider['cluster']['extensions'] = []): AccessProvider => ({
  name,
  cluster: { server: `https://${name}.example:6443`, 'certificate-authority-data': 'Q0E=', extensions },
});

const file = (providers: object[]): ProviderFile => loadProviderFile(write(`p-${Math.random()}.json`, JSON.stringify({ providers })));
const v1 = (command = '/usr/bin/plugin', extra: object = {}): object => ({ apiVersion: 'client.authentication.k8s.io/v1', command, provideClusterInfo: true, ...extra });

describe('loadProviderFile', () => {
  it('reads the published format; a relative command is relative to the file, a bare name stays for PATH', () => {
    const f = loadProviderFile(write('upstream.json', UPSTREAM));
    expect(f.providers).toHaveLength(1);
    expect(f.providers[0]?.execConfig.command).toBe(join(dir, 'bin/secretreader-plugin'));
    expect(f.providers[0]?.profileSourcedCLIArgsPolicy).toBe('Ignore');
    const bare = file([{ name: 'gke', execConfig: v1('gke-gcloud-auth-plugin') }]);
    expect(bare.providers[0]?.execConfig.command).toBe('gke-gcloud-auth-plugin');
  });

  it('refuses a typo, a duplicate name, interactive plugins and an unknown version, naming the field', () => {
    const bad = (providers: object[]): string => {
      try {
        file(providers);
        return 'loaded';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(bad([{ name: 'a', execConfig: { ...v1(), provideClusterinfo: true } }])).toMatch(/providers\.0\.execConfig: Unrecognized key: "provideClusterinfo"/);
    expect(bad([{ name: 'a', execConfig: v1() }, { name: 'a', execConfig: v1() }])).toMatch(/providers\.1\.name: duplicate provider "a"/);
    expect(bad([{ name: 'a', execConfig: v1('/p', { interactiveMode: 'Always' }) }])).toMatch(/providers\.0\.execConfig\.interactiveMode/);
    expect(bad([{ name: 'a', execConfig: { ...v1(), apiVersion: 'client.authentication.k8s.io/v1alpha1' } }])).toMatch(/execConfig\.apiVersion/);
    expect(() => loadProviderFile(join(dir, 'missing.json'))).toThrow(/provider file .*missing\.json: ENOENT/);
  });
});

describe('planPluginCall', () => {
  const execInfo = (call: { execInfo: string }): { apiVersion: string; spec: { interactive: boolean; cluster?: Record<string, unknown> } } => JSON.parse(call.execInfo);

  it("passes the profile's cluster and its exec extension as the ExecCredential request", () => {
    const f = file([{ name: 'secretreader', execConfig: v1() }]);
    const plan = planPluginCall(f, 'fleet-system/cluster-a', [access('secretreader', [{ name: EXEC_EXTENSION, extension: { clusterName: 'cluster-a' } }])]);
    if (!plan.ok) throw new Error(plan.message);
    expect(execInfo(plan.call)).toEqual({
      kind: 'ExecCredential',
      apiVersion: 'client.authentication.k8s.io/v1',
      spec: {
        interactive: false,
        cluster: { server: 'https://secretreader.example:6443', 'certificate-authority-data': 'Q0E=', config: { clusterName: 'cluster-a' } },
      },
    });
  });

  it('leaves spec.cluster out unless the provider asks for cluster info', () => {
    const f = file([{ name: 'p', execConfig: v1('/p', { provideClusterInfo: false }) }]);
    const plan = planPluginCall(f, 'ns/a', [access('p')]);
    expect(plan.ok && execInfo(plan.call).spec).toEqual({ interactive: false });
  });

  it("uses the provider file's first provider the profile offers; accessProviders win over credentialProviders", () => {
    const f = file([
      { name: 'kubelogin', execConfig: v1('/kubelogin') },
      { name: 'secretreader', execConfig: v1('/secretreader') },
    ]);
    const plan = planPluginCall(f, 'ns/a', [access('secretreader'), access('kubelogin')]);
    expect(plan.ok && plan.call.command).toBe('/kubelogin');
    const older = { name: 'secretreader', cluster: { server: 'https://old.example' } };
    const both = planPluginCall(f, 'ns/a', [access('secretreader')], [older]);
    expect(both.ok && both.call.cluster.server).toBe('https://secretreader.example:6443');
    const onlyOld = planPluginCall(f, 'ns/a', [], [older]);
    expect(onlyOld.ok && onlyOld.call.cluster.server).toBe('https://old.example');
    const none = planPluginCall(f, 'ns/a', [access('ocm-cp-creds')]);
    expect(none.ok).toBe(false);
    expect(!none.ok && none.message).toMatch(/ClusterProfile ns\/a: none of its access providers \(ocm-cp-creds\) is in the provider file .* \(kubelogin, secretreader\)/);
  });

  it('ignores profile-supplied arguments and environment unless the provider allows them', () => {
    const ext = [
      { name: ARGS_EXTENSION, extension: ['--cluster=a', '--insecure'] },
      { name: ENVS_EXTENSION, extension: { REGION: 'eu', MODE: 'profile' } },
    ];
    const base = v1('/p', { args: ['--mode=strict'], env: [{ name: 'MODE', value: 'operator' }] });
    const closed = planPluginCall(file([{ name: 'p', execConfig: base }]), 'ns/a', [access('p', ext)]);
    expect(closed.ok && [closed.call.args, closed.call.env]).toEqual([['--mode=strict'], { MODE: 'operator' }]);
    const open = planPluginCall(file([{ name: 'p', execConfig: base, profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }]), 'ns/a', [access('p', ext)]);
    expect(open.ok && [open.call.args, open.call.env]).toEqual([['--mode=strict', '--cluster=a', '--insecure'], { MODE: 'operator', REGION: 'eu' }]);
    const replace = planPluginCall(file([{ name: 'p', execConfig: base, profileSourcedEnvVarsPolicy: 'Replace' }]), 'ns/a', [access('p', ext)]);
    expect(replace.ok && replace.call.env).toEqual({ MODE: 'profile', REGION: 'eu' });
  });

  it('refuses malformed profile extensions and a profile setting KUBERNETES_EXEC_INFO', () => {
    const f = file([{ name: 'p', execConfig: v1(), profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'Replace' }]);
    const args = planPluginCall(f, 'ns/a', [access('p', [{ name: ARGS_EXTENSION, extension: { a: 1 } }])]);
    expect(!args.ok && args.message).toMatch(/ClusterProfile ns\/a: access provider p: cluster.extensions .*additional-args: must be a list of strings/);
    const env = planPluginCall(f, 'ns/a', [access('p', [{ name: ENVS_EXTENSION, extension: { KUBERNETES_EXEC_INFO: '{}' } }])]);
    expect(!env.ok && env.message).toMatch(/"KUBERNETES_EXEC_INFO" may not be set/);
  });
});
