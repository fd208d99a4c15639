/**
 * The router's cluster name against the local cluster's About API (an API server
 * stand-in holding the ClusterProperty cluster.clusterset.k8s.io): a mismatch
 * stops the start naming both values; a match starts; `--check` says where the
 * name came from and fails on a mismatch.
 */
import { describe, expect, it } from 'vitest';
import { CHECK_LOAD_ERRORS, runCheck } from '../../src/cli/check.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import { StartupError } from '../../src/runtime/load-sources.js';
import { startRouter } from '../../src/runtime/router.js';
import { clusterProperty, useStandinCluster } from '../sources/identity/about-fixtures.js';
import { eventually } from '../helpers/eventually.js';
import { silent } from '../sources/kubernetes/kube-fixtures.js';

const cluster = useStandinCluster();

const config = () =>
  routerConfigSchema.parse({
    clusterName: 'cluster-a',
    listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ name: 'cluster-a', kubernetes: { kubeconfig: cluster.kubeconfig, requestTimeoutMs: 1000 } }],
    controller: { enabled: false },
    kubernetes: { initialSyncTimeoutMs: 2000 },
  });

/** The same router config with no name for the local cluster: its entry is the only one. */
const unnamed = () =>
  routerConfigSchema.parse({
    listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [{ kubernetes: { kubeconfig: cluster.kubeconfig, requestTimeoutMs: 1000 } }],
    controller: { enabled: false },
    kubernetes: { initialSyncTimeoutMs: 2000 },
  });

describe('the cluster name and the About API', () => {
  it('a ClusterProperty naming another cluster stops the router, naming both values and where each came from; a matching one starts it', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-east'));
    const err = await startRouter(config(), { logger: silent, processMetrics: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toMatch(/^cluster name mismatch: config clusterName "cluster-a" \(the router config\) differs from "cluster-east" \(the About API of cluster cluster-a \(ClusterProperty cluster\.clusterset\.k8s\.io, about\.k8s\.io\/v1beta1\)\)/);
    // Nothing keeps watching after the refused start.
    await eventually(() => expect(cluster.server.watchCount()).toBe(0), 5_000);

    // Corrected, it starts.
    const p = cluster.server.get('clusterproperties', '', 'cluster.clusterset.k8s.io')!;
    cluster.server.update('clusterproperties', { ...p, spec: { value: 'cluster-a' } });
    const router = await startRouter(config(), { logger: silent, processMetrics: false });
    await router.shutdown();
  });

  it('--check prints where the name came from; a mismatch is a load error', async () => {
    const plain = await runCheck(config(), silent);
    expect(plain.output).toMatch(/^cluster name: cluster-a from config clusterName "cluster-a" \(About API: no ClusterProperty cluster\.clusterset\.k8s\.io/m);
    cluster.server.create('clusterproperties', clusterProperty('cluster-a'));
    const matching = await runCheck(config(), silent);
    expect(matching.output).toContain('cluster name: cluster-a from the About API of cluster cluster-a (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1), matching config clusterName "cluster-a"\n');
    const p = cluster.server.get('clusterproperties', '', 'cluster.clusterset.k8s.io')!;
    cluster.server.update('clusterproperties', { ...p, spec: { value: 'cluster-east' } });
    const mismatch = await runCheck(config(), silent);
    expect(mismatch.code).toBe(CHECK_LOAD_ERRORS);
    expect(mismatch.output).toMatch(/^error: cluster cluster-a: cluster name mismatch: config clusterName "cluster-a" \(the router config\) differs from "cluster-east"/m);
  });

  it('without clusterName the About API names the cluster: the snapshot, /debug/sources and the metrics use its name; nothing naming it stops the start', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-east'));
    const router = await startRouter(unnamed(), { logger: silent, processMetrics: false });
    try {
      expect(router.store.snapshot()?.clusters.map((c) => c.name)).toEqual(['cluster-east']);
      const debug = (await (await fetch(`http://${router.adminAddress}/debug/sources`)).json()) as { localCluster: unknown; kubernetes: Record<string, unknown> };
      expect(Object.keys(debug.kubernetes)).toEqual(['cluster-east']);
      expect(debug.localCluster).toEqual({ name: 'cluster-east', from: 'the About API of the local cluster (clusters[0]) (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)' });
      expect(await (await fetch(`http://${router.adminAddress}/metrics`)).text()).toContain('mcip_cluster_stale{cluster="cluster-east"} 0');
    } finally {
      await router.shutdown();
    }

    cluster.server.delete('clusterproperties', '', 'cluster.clusterset.k8s.io');
    const err = await startRouter(unnamed(), { logger: silent, processMetrics: false }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StartupError);
    expect((err as Error).message).toMatch(/^cluster name: nothing names the local cluster \(clusters\[0\]\) \(About API: no ClusterProperty cluster\.clusterset\.k8s\.io.*\): set clusterName, or /);
    expect(cluster.server.watchCount()).toBe(0);
  });

  it('--check without clusterName prints the name and where it came from; nothing naming it is a load error', async () => {
    cluster.server.create('clusterproperties', clusterProperty('cluster-east'));
    const named = await runCheck(unnamed(), silent);
    expect(named.code).not.toBe(CHECK_LOAD_ERRORS);
    expect(named.output).toContain('cluster name: cluster-east from the About API of the local cluster (clusters[0]) (ClusterProperty cluster.clusterset.k8s.io, about.k8s.io/v1beta1)\n');
    expect(named.output).toMatch(/cluster-east \(0 objects, revision/);
    cluster.server.delete('clusterproperties', '', 'cluster.clusterset.k8s.io');
    const none = await runCheck(unnamed(), silent);
    expect(none.code).toBe(CHECK_LOAD_ERRORS);
    expect(none.output).toMatch(/^error: cluster local: cluster name: nothing names the local cluster \(clusters\[0\]\)/);
  });
});
