import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { execPluginsSchema } from '../../src/config/fleet-schema.js';
import { runExecPlugin } from '../../src/credentials/exec-plugin.js';
import { EXEC_EXTENSION, loadProviderFile, planPluginCall, type PluginCall } from '../../src/credentials/provider-file.js';
import { eventually } from '../helpers/eventually.js';

const PLUGINS = resolve(import.meta.dirname, '../fixtures/credential-plugins');
const dir = mkdtempSync(join(tmpdir(), 'mcip-exec-'));
const bounds = execPluginsSchema.parse({ timeoutMs: 5_000 });

/** A provider file naming one test plugin run by this Node, and the call it plans for a profile of cluster `name`. */
function callFor(script: string, opts: { args?: string[]; env?: Record<string, string>; clusterName?: string; apiVersion?: string } = {}): PluginCall {
  const providerFile = join(dir, `providers-${Math.random()}.json`);
  const execConfig = {
    apiVersion: opts.apiVersion ?? 'client.authentication.k8s.io/v1',
    command: process.execPath,
    args: [join(PLUGINS, script), ...(opts.args ?? [])],
    env: Object.entries(opts.env ?? {}).map(([name, value]) => ({ name, value })),
    provideClusterInfo: true,
  };
  writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'test', execConfig }] }));
  const cluster = { server: 'https://cluster-a.example:6443', extensions: [{ name: EXEC_EXTENSION, extension: { clusterName: opts.clusterName ?? 'cluster-a' } }] };
  const plan = planPluginCall(loadProviderFile(providerFile), 'fleet-system/cluster-a', [{ name: 'test', cluster }]);
  if (!plan.ok) throw new Error(plan.message);
  return plan.call;
}

const failure = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the plugin run succeeded');
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const started: number[] = [];
afterAll(() => {
  for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
});

describe('runExecPlugin', () => {
  it('gets the token a secretreader-style plugin reads for the cluster named in spec.cluster.config', async () => {
    writeFileSync(join(dir, 'cluster-a'), 'token-of-cluster-a\n');
    const token = await runExecPlugin(callFor('secret-reader.mjs', { env: { SECRETS_DIR: dir } }), bounds);
    expect(token).toEqual({ token: 'token-of-cluster-a', expiresAt: undefined });
  });

  it('reads the expiry the plugin gives', async () => {
    const before = Date.now();
    const token = await runExecPlugin(callFor('expiring.mjs', { env: { TTL_MS: '600000' } }), bounds);
    expect(token.token).toBe('token-1');
    expect(token.expiresAt).toBeGreaterThan(before + 590_000);
    expect(token.expiresAt).toBeLessThan(Date.now() + 601_000);
  });

  it("gives the plugin only the operator's environment, its arguments as they are, no shell and no terminal", async () => {
    const out = join(dir, 'report.json');
    process.env.MCIP_TEST_ROUTER_SECRET = 'not-for-plugins';
    try {
      const args = [out, '$(touch /tmp/x)', 'a b;c'];
      const call = callFor('report.mjs', { args, env: { REGION: 'eu' } });
      await runExecPlugin(call, { ...bounds, inheritEnv: ['PATH', 'MCIP_TEST_UNSET'] });
      const seen = JSON.parse(readFileSync(out, 'utf8')) as { args: string[]; env: Record<string, string>; info: unknown; stdinIsTTY: boolean };
      expect(seen.args).toEqual(args.slice(1));
      expect(Object.keys(seen.env).sort()).toEqual(['KUBERNETES_EXEC_INFO', 'PATH', 'REGION']);
      expect(seen.env.PATH).toBe(process.env.PATH);
      expect(seen.info).toEqual(JSON.parse(call.execInfo));
      expect(seen.stdinIsTTY).toBe(false);
    } finally {
      delete process.env.MCIP_TEST_ROUTER_SECRET;
    }
  });

  it('runs a plugin by its path relative to the provider file (as the published examples do)', async () => {
    const providerFile = join(PLUGINS, '..', `providers-relative-${process.pid}.json`);
    const execConfig = { apiVersion: 'client.authentication.k8s.io/v1', command: './credential-plugins/secret-reader.mjs', env: [{ name: 'SECRETS_DIR', value: dir }], provideClusterInfo: true };
    writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'secretreader', execConfig }] }));
    try {
      const cluster = { server: 'https://a.example', extensions: [{ name: EXEC_EXTENSION, extension: { clusterName: 'cluster-a' } }] };
      const plan = planPluginCall(loadProviderFile(providerFile), 'ns/a', [{ name: 'secretreader', cluster }]);
      if (!plan.ok) throw new Error(plan.message);
      expect((await runExecPlugin(plan.call, bounds)).token).toBe('token-of-cluster-a');
    } finally {
      rmSync(providerFile);
    }
  });

  it("a failing plugin's error names plugin, profile, exit code and its own message", async () => {
    const message = await failure(runExecPlugin(callFor('failing.mjs'), bounds));
    expect(message).toBe(
      `credential plugin test (${process.execPath}) for ClusterProfile fleet-system/cluster-a: exited with code 3: [failing] failed to get secret fleet-system/cluster-a: secrets "cluster-a" is forbidden`,
    );
    const missing = await failure(runExecPlugin(callFor('secret-reader.mjs', { env: { SECRETS_DIR: dir }, clusterName: 'cluster-z' }), bounds));
    expect(missing).toMatch(/exited with code 1: \[test-plugin\] failed to get secret cluster-z: not found$/);
  });

  it('a plugin that hangs is killed at the bound, with what it started', async () => {
    const pids = join(dir, 'hanging-pids.json');
    const t0 = Date.now();
    const message = await failure(runExecPlugin(callFor('hanging.mjs', { args: [pids] }), { ...bounds, timeoutMs: 1_500 }));
    const took = Date.now() - t0;
    expect(message).toMatch(/: still running after 1500 ms: killed$/);
    expect(took).toBeGreaterThanOrEqual(1_500);
    expect(took).toBeLessThan(6_000);
    const { plugin, child } = JSON.parse(readFileSync(pids, 'utf8')) as { plugin: number; child: number };
    started.push(plugin, child);
    await eventually(() => expect([alive(plugin), alive(child)]).toEqual([false, false]), 3_000);
  });

  it('a plugin that exits but leaves a process of its own session holding its output fails at the bound instead of never settling', async () => {
    const pids = join(dir, 'daemonizing-pids.json');
    const t0 = Date.now();
    const run = runExecPlugin(callFor('daemonizing.mjs', { args: [pids] }), { ...bounds, timeoutMs: 1_500 });
    const guard = new Promise<string>((r) => setTimeout(() => r('never settled'), 8_000).unref());
    const message = await Promise.race([failure(run), guard]);
    const { helper } = JSON.parse(readFileSync(pids, 'utf8')) as { helper: number };
    started.push(helper);
    expect(message).toMatch(/: exited with code 0, but a process it started still held its standard output after 1500 ms$/);
    expect(message).not.toContain('token-daemonizing');
    expect(Date.now() - t0).toBeLessThan(6_000);
  });

  it('output that is not a usable ExecCredential is refused without repeating it', async () => {
    const cases: [string, RegExp][] = [
      ['text', /printed 34 bytes that are not JSON \(expected an ExecCredential\)$/],
      ['huge', /printed more than 65536 bytes: killed$/],
      ['wrong-version', /printed apiVersion "client.authentication.k8s.io\/v1beta1", but the provider file asks for client.authentication.k8s.io\/v1$/],
      ['no-token', /printed an ExecCredential without status.token$/],
      ['bad-expiry', /printed a status.expirationTimestamp that is not an RFC 3339 time$/],
      ['certificate', /printed a client certificate; only token credentials are supported$/],
      ['array', /printed JSON that is not an ExecCredential object$/],
    ];
    for (const [mode, expected] of cases) {
      const message = await failure(runExecPlugin(callFor('garbage.mjs', { args: [mode] }), bounds));
      expect(message, mode).toMatch(expected);
      expect(message, mode).not.toMatch(/secret-token|BEGIN CERTIFICATE|xxxx/);
    }
  });

  it("escapes control characters of a plugin's standard error in its message: no terminal escapes reach the logs", async () => {
    const message = await failure(runExecPlugin(callFor('garbage.mjs', { args: ['stderr-escapes'] }), bounds));
    expect(message).toMatch(/: exited with code 1: \\u001b\[2J\\u001b\]0;owned\\u0007 cannot reach the token service$/);
    expect(message).not.toMatch(/[\u0000-\u001f\u007f]/);
  });

  it('a command that does not exist is a clear error', async () => {
    const call = { ...callFor('report.mjs'), command: join(dir, 'no-such-plugin') };
    expect(await failure(runExecPlugin(call, bounds))).toMatch(/no-such-plugin\) for ClusterProfile fleet-system\/cluster-a: command not found$/);
  });
});
