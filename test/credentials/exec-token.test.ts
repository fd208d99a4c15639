import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { execPluginsSchema } from '../../src/config/fleet-schema.js';
import { ExecTokenSource, refreshTime } from '../../src/credentials/exec-token.js';
import { Slots } from '../../src/runtime/slots.js';
import { EXEC_EXTENSION, loadProviderFile, planPluginCall, type PluginCall } from '../../src/credentials/provider-file.js';
import { eventually } from '../helpers/eventually.js';

const PLUGINS = resolve(import.meta.dirname, '../fixtures/credential-plugins');
const dir = mkdtempSync(join(tmpdir(), 'mcip-exec-token-'));

/** The expiring test plugin (token-<n>, expiring TTL_MS after each run), counting its runs in its own file. */
function expiringPlugin(ttlMs: number, script = 'expiring.mjs'): { call: PluginCall; runs: () => number; clockFile: string } {
  const counter = join(dir, `runs-${Math.random()}`);
  const clockFile = join(dir, `clock-${Math.random()}`);
  const providerFile = join(dir, `providers-${Math.random()}.json`);
  const env = [
    { name: 'COUNTER_FILE', value: counter },
    { name: 'TTL_MS', value: String(ttlMs) },
    { name: 'CLOCK_OFFSET_FILE', value: clockFile },
  ];
  writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'oidc', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [join(PLUGINS, script)], env, provideClusterInfo: true } }] }));
  const cluster = { server: 'https://a.example', extensions: [{ name: EXEC_EXTENSION, extension: { clusterName: 'a' } }] };
  const plan = planPluginCall(loadProviderFile(providerFile), 'fleet-system/a', [{ name: 'oidc', cluster }]);
  if (!plan.ok) throw new Error(plan.message);
  const runs = (): number => {
    try {
      return Number(readFileSync(counter, 'utf8'));
    } catch {
      return 0;
    }
  };
  return { call: plan.call, runs, clockFile };
}

/** A clock the test moves; starts at the real time, and the expiring plugin reads the same offset (`file`). */
function clock(file?: string): { now: () => number; advance: (ms: number) => void } {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance: (ms) => {
      offset += ms;
      if (file) writeFileSync(file, String(offset));
    },
  };
}

const settings = execPluginsSchema.parse({ refreshBeforeExpiryMs: 60_000, retryAfterFailureMs: 5_000 });

describe('ExecTokenSource', () => {
  it('keeps a token until its refresh time, refreshes before expiry while still handing out the current one', async () => {
    const plugin = expiringPlugin(600_000);
    const c = clock(plugin.clockFile);
    const source = new ExecTokenSource({ call: plugin.call, settings, now: c.now });
    const [a, b] = await Promise.all([source.get(), source.get()]);
    expect([a, b, plugin.runs()]).toEqual(['token-1', 'token-1', 1]);
    c.advance(500_000);
    expect(await source.get()).toBe('token-1');
    expect(plugin.runs()).toBe(1);
    // 10 minutes' token, 1 minute's margin: from minute 9 on a new token is fetched in the background.
    c.advance(45_000);
    expect(await source.get()).toBe('token-1');
    await eventually(async () => expect(await source.get()).toBe('token-2'), 5_000);
    expect(plugin.runs()).toBe(2);
    expect(JSON.stringify(source.status())).not.toMatch(/token-\d/);
  });

  it('runs the plugin again once the token expired (no refresh window reached before)', async () => {
    const plugin = expiringPlugin(2_000);
    const c = clock(plugin.clockFile);
    const source = new ExecTokenSource({ call: plugin.call, settings, now: c.now });
    expect(await source.get()).toBe('token-1');
    c.advance(3_000);
    expect(await source.get()).toBe('token-2');
    expect(plugin.runs()).toBe(2);
  });

  it('a token printed already expired is a failed run: the plugin is not run again on every request', async () => {
    const plugin = expiringPlugin(-60_000);
    const c = clock(plugin.clockFile);
    const source = new ExecTokenSource({ call: plugin.call, settings, now: c.now });
    for (let i = 0; i < 5; i++) await expect(source.get()).rejects.toThrow(/^credential plugin oidc \(.*\) for ClusterProfile fleet-system\/a: printed a token that had expired at \S+Z, before it was obtained$/);
    expect(plugin.runs()).toBe(1);
    expect(source.status()).toMatchObject({ runs: 1, failures: 1 });
    expect(JSON.stringify(source.status())).not.toMatch(/token-\d/);
    c.advance(5_000);
    await expect(source.get()).rejects.toThrow(/before it was obtained$/);
    expect(plugin.runs()).toBe(2);
  });

  it('a token without expiry is kept until the API server refuses it', async () => {
    const writes = join(dir, 'secrets');
    mkdirSync(writes, { recursive: true });
    writeFileSync(join(writes, 'a'), 'first');
    const providerFile = join(dir, 'secretreader.json');
    writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'secretreader', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [join(PLUGINS, 'secret-reader.mjs')], env: [{ name: 'SECRETS_DIR', value: writes }], provideClusterInfo: true } }] }));
    const cluster = { server: 'https://a.example', extensions: [{ name: EXEC_EXTENSION, extension: { clusterName: 'a' } }] };
    const plan = planPluginCall(loadProviderFile(providerFile), 'ns/a', [{ name: 'secretreader', cluster }]);
    if (!plan.ok) throw new Error(plan.message);
    const c = clock();
    const source = new ExecTokenSource({ call: plan.call, settings, now: c.now });
    expect(await source.get()).toBe('first');
    writeFileSync(join(writes, 'a'), 'rotated');
    c.advance(30 * 24 * 3_600_000);
    expect(await source.get()).toBe('first');
    source.invalidate();
    expect(await source.get()).toBe('rotated');
  });

  it('a failed refresh keeps the valid token until it expires; then requests fail, and the plugin waits retryAfterFailureMs', async () => {
    const plugin = expiringPlugin(600_000);
    const c = clock(plugin.clockFile);
    const errors: string[] = [];
    let broken = false;
    const { runExecPlugin } = await import('../../src/credentials/exec-plugin.js');
    const call = plugin.call;
    const failing = { ...call, args: [join(PLUGINS, 'failing.mjs')] };
    const source = new ExecTokenSource({
      call,
      settings,
      now: c.now,
      run: (x) => runExecPlugin(broken ? failing : x, settings),
      onRefreshError: (e) => errors.push(e.message),
    });
    expect(await source.get()).toBe('token-1');
    broken = true;
    c.advance(560_000);
    expect(await source.get()).toBe('token-1');
    await eventually(() => expect(errors).toHaveLength(1), 5_000);
    expect(errors[0]).toMatch(/credential plugin oidc .* for ClusterProfile fleet-system\/a: exited with code 3/);
    expect(await source.get()).toBe('token-1');
    // Expired: the plugin runs again (the last failure is older than retryAfterFailureMs) and fails.
    c.advance(50_000);
    await expect(source.get()).rejects.toThrow(/exited with code 3/);
    expect(source.status()).toMatchObject({ runs: 3, failures: 2, lastError: expect.stringMatching(/exited with code 3/) });
    // Within retryAfterFailureMs the error is answered without running the plugin.
    c.advance(4_000);
    await expect(source.get()).rejects.toThrow(/exited with code 3/);
    expect(source.status().runs).toBe(3);
    broken = false;
    c.advance(1_000);
    expect(await source.get()).toBe('token-2');
    expect(source.status()).toMatchObject({ runs: 4, failures: 2 });
    expect(source.status().lastError).toBeUndefined();
  });
});

describe('plugin run slots', () => {
  it('runs at most maxConcurrentRuns plugins at a time across members; the others wait their turn', async () => {
    const runsFile = join(dir, `slow-runs-${Math.random()}`);
    writeFileSync(runsFile, '');
    const providerFile = join(dir, `slow-${Math.random()}.json`);
    const env = [
      { name: 'RUNS_FILE', value: runsFile },
      { name: 'SLEEP_MS', value: '300' },
    ];
    writeFileSync(providerFile, JSON.stringify({ providers: [{ name: 'cloud', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: [join(PLUGINS, 'slow.mjs')], env } }] }));
    const file = loadProviderFile(providerFile);
    const limited = execPluginsSchema.parse({ maxConcurrentRuns: 2 });
    const slots = new Slots(limited.maxConcurrentRuns);
    const sources = Array.from({ length: 6 }, (_, i) => {
      const plan = planPluginCall(file, `fleet-system/m${i}`, [{ name: 'cloud', cluster: { server: `https://m${i}.example` } }]);
      if (!plan.ok) throw new Error(plan.message);
      return new ExecTokenSource({ call: plan.call, settings: limited, slots });
    });
    const tokens = await Promise.all(sources.map((x) => x.get()));
    expect(new Set(tokens).size).toBe(6);
    const runs = readFileSync(runsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { start: number; end: number });
    expect(runs).toHaveLength(6);
    // Most runs overlapping at any run's start.
    const overlap = Math.max(...runs.map((r) => runs.filter((o) => o.start <= r.start && r.start < o.end).length));
    expect(overlap).toBeLessThanOrEqual(2);
  });
});

describe('refreshTime', () => {
  it('is refreshBeforeExpiryMs before expiry, or halfway for a short-lived token', () => {
    expect(refreshTime(0, 3_600_000, 60_000)).toBe(3_540_000);
    expect(refreshTime(0, 60_000, 60_000)).toBe(30_000);
    expect(refreshTime(0, undefined, 60_000)).toBeUndefined();
  });
});
