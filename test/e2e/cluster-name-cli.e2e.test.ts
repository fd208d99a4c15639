/**
 * The local cluster's name as operators meet it: the built CLI, a config file without
 * clusterName, and an API server stand-in for the local cluster holding (or not) its
 * About API ClusterProperty. `--check` says where the name came from; a router or an
 * export agent that nothing names does not start, and says what to set.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { clusterProperty, useStandinCluster } from '../sources/identity/about-fixtures.js';
import { ensureBuilt, runCli } from './cli-process.js';

beforeAll(() => ensureBuilt(), 120_000);
const cluster = useStandinCluster();

/** A config file leaving the local cluster's name to its About API; `agent` adds an exportAgent block. */
async function configFile(agent = false): Promise<string> {
  const file = join(cluster.kubeconfig, '..', 'router.yaml');
  await writeFile(
    file,
    stringify({
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: [{ namespace: 'default', name: 'gw' }],
      clusters: [{ kubernetes: { kubeconfig: cluster.kubeconfig, requestTimeoutMs: 2000 } }],
      controller: { enabled: false },
      ...(agent ? { exportAgent: { hub: { kubeconfig: cluster.kubeconfig } } } : {}),
    }),
  );
  return file;
}

describe('mcip-router without clusterName', () => {
  it('--check prints the name its About API gives and where it came from', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-east'));
    const run = await runCli(['--check', '--config', await configFile()]);
    expect(run.code, run.stderr).not.toBe(2);
    expect(run.stdout).toMatch(/^Routing snapshot v1: cluster cluster-east, /);
    expect(run.stdout).toContain('cluster name: cluster-east from the About API of the local cluster (clusters[0]) (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)\n');
  });

  it('nothing naming the cluster: the router exits 2 and the export agent 1, each saying what to set', async () => {
    const router = await runCli(['--config', await configFile()]);
    expect(router.code).toBe(2);
    expect(router.stderr).toMatch(/^mcip-router: cannot start:\ncluster name: nothing names the local cluster \(clusters\[0\]\) \(About API: no ClusterProperty cluster\.clusterset\.k8s\.io .*\): set clusterName, /);
    const fatal = router.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string }).find((l) => l.level === 'fatal');
    expect(fatal?.msg, router.stdout).toMatch(/^cannot start: cluster name: nothing names the local cluster/);

    const agent = await runCli(['--export-agent', '--config', await configFile(true)]);
    expect(agent.code).toBe(1);
    expect(agent.stderr).toMatch(/^mcip-router: cannot start: cluster name: nothing names the local cluster \(clusters\[0\]\)/);
  });
});
