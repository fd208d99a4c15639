import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { LoadedRouterConfig, RouterConfig } from '../../../src/config/schema.js';
import { KubeApiServer, writeKubeconfig } from '../../harness/kube-apiserver.js';

/** The About API's ClusterProperty naming a cluster in its ClusterSet (KEP-2149). */
export function clusterProperty(value: string, version = 'v1beta1') {
  return { apiVersion: `about.k8s.io/${version}`, kind: 'ClusterProperty', metadata: { name: 'cluster.clusterset.k8s.io' }, spec: { value } };
}

/** Per test: an API server stand-in and a kubeconfig file for it (registers beforeEach/afterEach). */
export function useStandinCluster(): { readonly server: KubeApiServer; readonly kubeconfig: string } {
  const current = { server: undefined as unknown as KubeApiServer, kubeconfig: '', dir: '' };
  beforeEach(async () => {
    current.server = new KubeApiServer();
    await current.server.start();
    current.dir = await mkdtemp(join(tmpdir(), 'mcip-identity-'));
    current.kubeconfig = await writeKubeconfig(current.dir, { server: current.server.url });
  });
  afterEach(async () => {
    await current.server.close();
    await rm(current.dir, { recursive: true, force: true });
  });
  return current;
}

/** `config` as a file that leaves the local cluster's name open: no clusterName, its entry unnamed and marked local. */
export function withoutName(config: RouterConfig): LoadedRouterConfig {
  const { clusterName, ...rest } = config;
  return { ...rest, clusters: config.clusters.map((c) => (c.name === clusterName ? { ...c, name: undefined, local: true } : c)) };
}
