/**
 * Chooses a member cluster's object source from its config: manifest files or
 * the cluster's Kubernetes API (all five kinds for the local cluster; only
 * InferencePool, Service and Gateway for remote members).
 */
import type { Logger } from 'pino';
import type { ClusterConfig, RouterConfig } from '../config/schema.js';
import { loadKubeConfig } from './kubernetes/kubeconfig.js';
import { KubernetesSource } from './kubernetes/kubernetes-source.js';
import { LOCAL_KINDS, REMOTE_KINDS } from './kubernetes/resources.js';
import { ManifestSource } from './manifest-source.js';
import type { ObjectSource } from './types.js';

export function createObjectSource(cluster: ClusterConfig, config: RouterConfig, logger: Logger): ObjectSource {
  if (cluster.manifests) {
    return new ManifestSource({
      cluster: cluster.name,
      paths: cluster.manifests.paths,
      debounceMs: config.manifests.debounceMs,
      pollIntervalMs: config.manifests.pollIntervalMs,
      logger,
    });
  }
  const k = cluster.kubernetes;
  if (k) {
    const settings = config.kubernetes;
    return new KubernetesSource({
      cluster: cluster.name,
      kubeConfig: () => loadKubeConfig(k),
      kinds: cluster.name === config.clusterName ? LOCAL_KINDS : REMOTE_KINDS,
      namespaces: k.namespaces,
      coalesceMs: settings.coalesceMs,
      coalesceMaxMs: settings.coalesceMaxMs,
      initialSyncTimeoutMs: settings.initialSyncTimeoutMs,
      backoffInitialMs: settings.backoffInitialMs,
      backoffMaxMs: settings.backoffMaxMs,
      ...(k.qps !== undefined ? { qps: k.qps } : {}),
      ...(k.burst !== undefined ? { burst: k.burst } : {}),
      logger,
    });
  }
  throw new Error(`cluster ${cluster.name} has no object source (manifests or kubernetes)`);
}
