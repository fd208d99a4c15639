/**
 * A member's steps against the API-server stand-ins: one create per import while
 * the watch lags behind the writes (and a new one only once it is gone), and a
 * missing namespace logged once per member until it exists.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../harness/kube-apiserver-store.js';
import { sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b', 'cluster-c'];
const POOLS = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];

let env: ClusterSetEnv;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(async () => {
  await env.close();
});

const creates = (member: string): number => env.server(member).writes('inferencepoolimports').filter((w) => w.method === 'POST').length;

describe('export steps', () => {
  it('watches 300 ms behind the writes: one create per import and member; an import deleted later is created again, once', async () => {
    for (const m of MEMBERS) env.server(m).lagWatches(300);
    const h = await env.replica();
    for (const n of POOLS) env.exportPool('cluster-b', n);
    await waitFor(() => POOLS.every((n) => MEMBERS.every((m) => env.exportingClusters(m, n))), 10_000, 'imported everywhere');
    // More runs while the caches still lag: every change (the pools' statuses) triggers one.
    await h.reconcile();
    await sleep(700);
    await h.reconcile();
    expect(MEMBERS.map(creates)).toEqual([6, 6, 6]);
    expect(h.record.actionCounts().filter((c) => c.outcome === 'error')).toEqual([]);

    env.server('cluster-a').delete('inferencepoolimports', 'default', 'p1');
    await waitFor(() => env.exportingClusters('cluster-a', 'p1'), 10_000, 'p1 created again in a');
    await sleep(700);
    await h.reconcile();
    expect(MEMBERS.map(creates)).toEqual([7, 6, 6]);
  });

  it('a missing namespace is logged once per member until it exists, then once that it does', async () => {
    const lines: { level: number; msg: string; member?: string; namespace?: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as (typeof lines)[number]) });
    let missing = true;
    for (const m of ['cluster-a', 'cluster-c']) {
      env.server(m).onWrite((ctx) => {
        if (missing && ctx.method === 'POST' && ctx.namespace === 'team-x') throw new ApiError(404, 'NotFound', 'namespaces "team-x" not found');
      });
    }
    const h = await env.replica('replica-1', {}, { logger });
    env.exportPool('cluster-b', 'llm', 'team-x');
    await waitFor(() => h.debug().members.filter((m) => m.missingNamespaces.includes('team-x')).length === 2, 8000, 'reported in a and c');
    for (let i = 0; i < 3; i++) await h.reconcile();
    const warned = lines.filter((l) => l.level === 40 && l.namespace === 'team-x');
    expect(warned.map((l) => l.member).sort()).toEqual(['cluster-a', 'cluster-c']);
    expect(warned[0]?.msg).toMatch(/^namespace team-x does not exist in cluster-[ac]: its InferencePoolImports are not created until it does$/);
    expect(creates('cluster-c')).toBeGreaterThanOrEqual(4);

    missing = false;
    await h.reconcile();
    await waitFor(() => env.ours('cluster-c', 'llm', 'team-x') && env.ours('cluster-a', 'llm', 'team-x'), 8000, 'created once it exists');
    const resolved = lines.filter((l) => l.level === 30 && l.namespace === 'team-x' && l.msg.includes('exists'));
    expect(resolved.map((l) => l.member).sort()).toEqual(['cluster-a', 'cluster-c']);
    expect(h.debug().members.every((m) => m.missingNamespaces.length === 0)).toBe(true);
  });
});
