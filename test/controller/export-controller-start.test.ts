/**
 * The export controller started while one member's API server hangs (accepts
 * connections, never answers): the others are synced and written at once, the
 * Lease is campaigned for and /readyz answers without waiting for it; the pool
 * statuses that would name it wait for its first list to end, then name it;
 * it catches up once it answers.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serveExportController, type ExportServer } from '../../src/controller/export-serve.js';
import { eventually, eventuallyWithin } from '../helpers/eventually.js';
import { withinProcessMs } from '../helpers/work-time.js';
import { silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b', 'cluster-c'];
/** Long enough that waiting for the hung member's first list would show. */
const TIMING = { requestTimeoutMs: 4000, initialSyncTimeoutMs: 10_000 };

let env: ClusterSetEnv;
let server: ExportServer | undefined;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(async () => {
  await server?.shutdown();
  server = undefined;
  await env.close();
});

const metric = async (admin: string, line: RegExp): Promise<boolean> => line.test(await (await fetch(`http://${admin}/metrics`)).text());

describe('export controller started while a member hangs', () => {
  it('the others are written within 1 s and it is ready and leading at once; the hung member is named once its list timed out, and catches up', async () => {
    env.exportPool('cluster-b', 'llm');
    const answer = env.server('cluster-c').hang();
    const config = env.config('replica-1', {}, TIMING);
    const running = await withinProcessMs(1000, 'serveExportController returns', () => serveExportController(config, silent, false));
    server = running;
    const admin = running.adminAddress;
    expect(await (await fetch(`http://${admin}/readyz`)).text()).toBe('ready\n');

    await eventuallyWithin(
      () => {
        for (const m of ['cluster-a', 'cluster-b']) expect(env.exportingClusters(m, 'llm')).toEqual(['cluster-b']);
      },
      1000,
      'a and b imported',
    );
    expect(await metric(admin, /^mcip_export_leader 1$/m)).toBe(true);
    // c's first list is still under way: b's pool status is not written as lagging on c yet
    // (b's worker has had its passes: its imports are written).
    await sleep(300);
    const debug = (await (await fetch(`http://${admin}/debug/exports`)).json()) as { members: { name: string; error?: string; synced: boolean }[] };
    expect(debug.members.find((m) => m.name === 'cluster-c')).toMatchObject({ synced: false });
    expect(debug.members.find((m) => m.name === 'cluster-c')?.error).toBeUndefined();
    expect(env.exported('cluster-b', 'llm')).toBeUndefined();
    expect(await metric(admin, /^mcip_export_member_reachable\{member="cluster-c"\} 0$/m)).toBe(true);

    // Its list times out (requestTimeoutMs): now it is named as unreachable.
    await waitFor(() => env.exported('cluster-b', 'llm')?.message === 'waiting for: cluster-c (its API server is unreachable)', 15_000, 'names c');
    expect(env.exported('cluster-b', 'llm')).toMatchObject({ status: 'False', reason: 'Pending' });

    answer();
    await waitFor(() => env.exportingClusters('cluster-c', 'llm')?.join() === 'cluster-b', 20_000, 'c caught up');
    await waitFor(() => env.exported('cluster-b', 'llm')?.status === 'True', 10_000, 'Exported True');
    await eventually(async () => expect(await metric(admin, /^mcip_export_member_reachable\{member="cluster-c"\} 1$/m)).toBe(true), 10_000);
  }, 60_000);

});
