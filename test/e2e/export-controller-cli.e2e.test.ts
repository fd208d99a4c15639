/**
 * The export controller as operators run it: `mcip-router --export-controller` as its own
 * process (no ext_proc), and inside a router with exportController.enabled.
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter } from '../../src/runtime/router.js';
import { ClusterSetEnv, pruneGieV10PoolStatus } from '../controller/export-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { MAIN, ROOT, ensureBuilt } from './cli-process.js';

let env: ClusterSetEnv;
beforeAll(() => ensureBuilt(), 120_000);
beforeEach(async () => {
  env = await new ClusterSetEnv(['cluster-a', 'cluster-b']).start();
});
afterEach(async () => {
  await env.close();
});

async function configFile(exportEnabled: boolean): Promise<string> {
  const file = join(env.dir, 'router.yaml');
  await writeFile(
    file,
    stringify({
      clusterName: 'cluster-a',
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: [{ namespace: 'default', name: 'gw' }],
      clusters: env.names.map((name) => ({ name, kubernetes: { kubeconfig: env.kubeconfigs.get(name) } })),
      controller: { enabled: false },
      exportController: { enabled: exportEnabled, leaderElection: { leaseNamespace: 'mcip', identity: 'cli' } },
    }),
  );
  return file;
}

describe('mcip-router --export-controller', () => {
  it('runs alone: creates the imports, serves /debug/exports and /metrics, releases its Lease on SIGTERM', async () => {
    const child = spawn(process.execPath, [MAIN, '--export-controller', '--config', await configFile(false)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      const running = await waitFor(() => out.split('\n').map((l) => (l.startsWith('{') ? (JSON.parse(l) as { msg?: string; admin?: string }) : {})).find((l) => l.msg === 'mcip-router export controller running'), 15_000, 'running');
      expect(out).not.toContain('mcip-router serving');
      env.exportPool('cluster-b', 'llm');
      await waitFor(() => env.exportingClusters('cluster-a', 'llm')?.join() === 'cluster-b' && env.exportingClusters('cluster-b', 'llm'), 5000, 'imports');
      const debug = (await (await fetch(`http://${running.admin}/debug/exports`)).json()) as { leader: boolean; pools: Record<string, { exporters: string[] }> };
      expect(debug.leader).toBe(true);
      expect(debug.pools['default/llm']?.exporters).toEqual(['cluster-b']);
      const metrics = await (await fetch(`http://${running.admin}/metrics`)).text();
      expect(metrics).toMatch(/^mcip_export_leader 1$/m);
      expect(metrics).toMatch(/^process_cpu_seconds_total /m);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const lease = env.server('cluster-a').get('leases', 'mcip', 'mcip-router-export-controller') as { spec: { holderIdentity: string } } | undefined;
    expect(lease?.spec.holderIdentity).toBe('');
  }, 40_000);

  it('on a member whose InferencePool CRD has no status.parents[].controllerName: one pool entry, the warning once, the pool in /debug/exports', async () => {
    for (const m of env.names) env.server(m).pruneStatus('inferencepools', pruneGieV10PoolStatus);
    const child = spawn(process.execPath, [MAIN, '--export-controller', '--config', await configFile(false)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const lines = () => out.split('\n').flatMap((l) => (l.startsWith('{') ? [JSON.parse(l) as { level: string; msg?: string; admin?: string; member?: string; pool?: string }] : []));
    try {
      const running = await waitFor(() => lines().find((l) => l.msg === 'mcip-router export controller running'), 15_000, 'running');
      env.exportPool('cluster-b', 'llm');
      const ours = () => env.parents('cluster-b', 'llm').filter((p) => p.parentRef.kind === 'InferencePoolImport');
      await waitFor(() => ours()[0]?.conditions[0]?.status === 'True', 8000, 'Exported True');
      type Debug = { members: { name: string; controllerNamePruned: string[] }[] };
      const debug = async () => (await (await fetch(`http://${running.admin}/debug/exports`)).json()) as Debug;
      await eventually(async () => expect((await debug()).members.find((m) => m.name === 'cluster-b')?.controllerNamePruned).toEqual(['default/llm']), 5000);
      const writes = env.server('cluster-b').writes('inferencepools', 'status').length;
      // Another pass for every member: a change to an object in each.
      env.exportPool('cluster-a', 'other', 'default', 'Elsewhere');
      await waitFor(() => env.parents('cluster-a', 'other').length === 1, 8000, 'a pass ran');
      expect(ours()).toHaveLength(1);
      expect(env.server('cluster-b').writes('inferencepools', 'status').length).toBe(writes);
      const warned = () => lines().filter((l) => l.level === 'warn' && l.msg?.includes('status.parents[].controllerName'));
      // Once per member (cluster-a's first such pool is the unsupported one); its entry's write answer tells.
      const expected = [
        ['cluster-a', 'default/other'],
        ['cluster-b', 'default/llm'],
      ];
      await eventually(() => expect(warned().map((l) => [l.member, l.pool]).sort()).toEqual(expected), 5000);
      // No more warnings with more pools: the controller said it for each member already.
      env.exportPool('cluster-b', 'third', 'default', 'Elsewhere');
      await eventually(async () => expect((await debug()).members.find((m) => m.name === 'cluster-b')?.controllerNamePruned).toEqual(['default/llm', 'default/third']), 5000);
      expect(warned().map((l) => [l.member, l.pool]).sort()).toEqual(expected);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 40_000);

  it('runs inside a router with exportController.enabled (its /debug/exports and metrics)', async () => {
    const router = await startRouter(await loadConfig(await configFile(true)), { logger: createLogger('silent'), processMetrics: false });
    try {
      env.exportPool('cluster-b', 'llm');
      await waitFor(() => env.exportingClusters('cluster-a', 'llm'), 5000, 'imports');
      const debug = (await (await fetch(`http://${router.adminAddress}/debug/exports`)).json()) as { leader: boolean };
      expect(debug.leader).toBe(true);
      expect(await router.metrics.registry.metrics()).toMatch(/^mcip_export_leader 1$/m);
    } finally {
      await router.shutdown();
    }
  }, 30_000);
});
