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
});
