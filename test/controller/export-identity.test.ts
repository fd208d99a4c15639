/**
 * The export controller's cluster name against its own cluster's About API: the
 * names it writes in exportingClusters are only as good as clusterName, so a
 * ClusterProperty cluster.clusterset.k8s.io naming another cluster stops it
 * before anything is written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExportConfigError } from '../../src/controller/export-runtime.js';
import { clusterProperty } from '../sources/identity/about-fixtures.js';
import { sleep } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b'];
let env: ClusterSetEnv;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(() => env.close());

describe('export controller identity', () => {
  it('a ClusterProperty in its own cluster naming another cluster: it does not start, naming both, and nothing is written; corrected, it exports', async () => {
    env.server('cluster-a').create('clusterproperties', clusterProperty('cluster-east'));
    env.exportPool('cluster-b', 'llm');
    const err = await env.replica().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExportConfigError);
    expect((err as Error).message).toMatch(/^cluster name mismatch: config clusterName "cluster-a" \(the router config\) differs from "cluster-east" \(the About API of cluster cluster-a/);
    await sleep(200);
    for (const m of MEMBERS) expect(env.server(m).writes()).toEqual([]);

    // Corrected, it starts and exports.
    const p = env.server('cluster-a').get('clusterproperties', '', 'cluster.clusterset.k8s.io')!;
    env.server('cluster-a').update('clusterproperties', { ...p, spec: { value: 'cluster-a' } });
    await env.replica();
    await expect.poll(() => env.exportingClusters('cluster-a', 'llm'), { timeout: 8000 }).toEqual(['cluster-b']);
  });
});
