/**
 * mcip_export_actions_total as exported on /metrics: a failed step is counted
 * under the action it was for, and every label value it can carry is the set
 * the README documents.
 */
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { COUNTED_ACTIONS, COUNTED_OUTCOMES } from '../../src/controller/export-record.js';
import { ApiError } from '../harness/kube-apiserver-store.js';
import { waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b', 'cluster-c'];

let env: ClusterSetEnv;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(async () => {
  await env.close();
});

/** The README's metrics reference row: the backquoted values after "action" and after "outcome". */
function documented(): { actions: string[]; outcomes: string[] } {
  const row = readFileSync('README.md', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('| `mcip_export_actions_total` |'));
  const text = row?.split('|')[3] ?? '';
  const values = (part: string | undefined) => [...(part ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  const [, actions, outcomes] = /action (.*?); outcome (.*)$/.exec(text) ?? [];
  return { actions: values(actions), outcomes: values(outcomes) };
}

/** label -> values seen in the metric's samples. */
function labelValues(metrics: string): { actions: Set<string>; outcomes: Set<string>; samples: string[] } {
  const samples = metrics.split('\n').filter((l) => l.startsWith('mcip_export_actions_total{'));
  const get = (l: string, label: string) => new RegExp(`${label}="([^"]*)"`).exec(l)?.[1] ?? '';
  return { actions: new Set(samples.map((l) => get(l, 'action'))), outcomes: new Set(samples.map((l) => get(l, 'outcome'))), samples };
}

describe('mcip_export_actions_total', () => {
  it('the README documents exactly the labels the counter can carry', () => {
    const doc = documented();
    expect(doc.actions.sort()).toEqual([...COUNTED_ACTIONS].sort());
    expect(doc.outcomes.sort()).toEqual([...COUNTED_OUTCOMES].sort());
  });

  it('a failed create is counted as action="create" outcome="error"; every sample carries documented labels', async () => {
    const registry = new Registry();
    env.server('cluster-c').onWrite((ctx) => {
      if (ctx.method === 'POST' && ctx.plural === 'inferencepoolimports') throw new ApiError(500, 'InternalError', 'etcd is unhappy');
    });
    env.server('cluster-a').onWrite((ctx) => {
      if (ctx.method === 'PATCH' && ctx.plural === 'inferencepools' && ctx.name === 'other') throw new ApiError(500, 'InternalError', 'etcd is unhappy');
    });
    await env.replica('replica-1', {}, { registry });
    env.exportPool('cluster-b', 'llm');
    env.exportPool('cluster-a', 'other');
    await waitFor(() => env.exportingClusters('cluster-a', 'llm'), 8000, 'imported in a');
    let seen = labelValues('');
    await pollMetrics(registry, () => seen.samples.some((l) => /member="cluster-c",action="create",outcome="error"\} [1-9]/.test(l)), (s) => (seen = s));
    await pollMetrics(registry, () => seen.samples.some((l) => /member="cluster-a",action="pool-status",outcome="error"\} [1-9]/.test(l)), (s) => (seen = s));
    expect(seen.samples.some((l) => /member="cluster-b",action="create",outcome="written"\} 2$/.test(l))).toBe(true);
    const doc = documented();
    expect([...seen.actions].filter((a) => !doc.actions.includes(a))).toEqual([]);
    expect([...seen.outcomes].filter((o) => !doc.outcomes.includes(o))).toEqual([]);
  });
});

/** Reads the registry until `ok` holds (up to 8 s). */
async function pollMetrics(registry: Registry, ok: () => boolean, set: (s: ReturnType<typeof labelValues>) => void): Promise<void> {
  const deadline = Date.now() + 8000;
  for (;;) {
    set(labelValues(await registry.metrics()));
    if (ok()) return;
    if (Date.now() > deadline) throw new Error('metric sample not seen');
    await new Promise((r) => setTimeout(r, 20));
  }
}
