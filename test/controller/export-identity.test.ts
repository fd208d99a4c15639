/**
 * The export controller's cluster name against its own cluster's About API: the
 * names it writes in exportingClusters are only as good as clusterName, so a
 * ClusterProperty cluster.clusterset.k8s.io naming another cluster stops it
 * before anything is written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startExportAgentFromConfig } from '../../src/controller/export-agent-runtime.js';
import { ExportConfigError, startExportFromConfig } from '../../src/controller/export-runtime.js';
import { clusterProperty, withoutName } from '../sources/identity/about-fixtures.js';
import { silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { PushPullEnv } from './export-agent-fixtures.js';
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

  it('without clusterName its About API names its cluster: the name it writes in exportingClusters', async () => {
    env.server('cluster-a').create('clusterproperties', clusterProperty('cluster-a'));
    env.exportPool('cluster-a', 'llm');
    const controller = await startExportFromConfig(withoutName(env.config('replica-1')), { logger: silent });
    try {
      await expect.poll(() => env.exportingClusters('cluster-b', 'llm'), { timeout: 8000 }).toEqual(['cluster-a']);
    } finally {
      await controller.stop();
    }
    // Nothing naming it: refused before anything is written.
    env.server('cluster-a').delete('clusterproperties', '', 'cluster.clusterset.k8s.io');
    const writes = env.server('cluster-b').writes().length;
    const err = await startExportFromConfig(withoutName(env.config('replica-1')), { logger: silent }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExportConfigError);
    expect((err as Error).message).toMatch(/^cluster name: nothing names the local cluster \(clusters\[0\]\)/);
    expect(env.server('cluster-b').writes()).toHaveLength(writes);
  });
});

describe('export agent identity', () => {
  it('without clusterName its About API names its member: its records on the hub and its name in every import', async () => {
    const pp = await new PushPullEnv(['cluster-a', 'cluster-b']).start();
    try {
      pp.server('cluster-a').create('clusterproperties', clusterProperty('cluster-a'));
      const agent = await startExportAgentFromConfig(withoutName(pp.config('cluster-a')), { logger: silent });
      try {
        await pp.agent('cluster-b');
        pp.exportPool('cluster-a', 'llm');
        await waitFor(() => pp.importedFrom('cluster-b', 'llm')?.join(',') === 'cluster-a', 10_000, 'imported in cluster-b');
        expect(pp.hub.get('memberexportrecords', 'mcip-member-cluster-a', 'cluster-a')?.spec).toMatchObject({ cluster: 'cluster-a' });
      } finally {
        await agent.stop();
      }
      // A config naming it otherwise than its About API: refused, naming both.
      const p = pp.server('cluster-a').get('clusterproperties', '', 'cluster.clusterset.k8s.io')!;
      pp.server('cluster-a').update('clusterproperties', { ...p, spec: { value: 'cluster-east' } });
      const mismatch = await startExportAgentFromConfig(pp.config('cluster-a'), { logger: silent }).catch((e: unknown) => e);
      expect(mismatch).toBeInstanceOf(ExportConfigError);
      expect((mismatch as Error).message).toMatch(/^cluster name mismatch: config clusterName "cluster-a" \(the router config\) differs from "cluster-east"/);
    } finally {
      await pp.close();
    }
  });
});
