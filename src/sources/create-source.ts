/**
 * Chooses a member cluster's object source from its config: manifest files or
 * the cluster's Kubernetes API (all five kinds for the local cluster; only
 * InferencePool, Service and Gateway for remote members).
 *
 * Kubernetes support is loaded on first use: @kubernetes/client-node costs
 * ~90 MB of RSS and ~1 s of start-up, which a router whose members all use
 * manifest files should not pay.
 */
import type { Logger } from 'pino';
import type { ClusterConfig, RouterConfig } from '../config/schema.js';
import { ManifestSource } from './manifest-source.js';
import type { ObjectSource } from './types.js';

export type KubernetesModule = typeof import('./kubernetes/index.js');

/** Whether createObjectSource gives this cluster a KubernetesSource. */
export function usesKubernetes(cluster: ClusterConfig): boolean {
  return !cluster.manifests && cluster.kubernetes !== undefined;
}

/**
 * The Kubernetes source module, imported on the first call; undefined (and never
 * imported) when no member cluster reads a Kubernetes API, in which case no
 * KubernetesSource exists either.
 */
export async function kubernetesModuleFor(config: RouterConfig): Promise<KubernetesModule | undefined> {
  return config.clusters.some(usesKubernetes) ? import('./kubernetes/index.js') : undefined;
}

export async function createObjectSource(cluster: ClusterConfig, config: RouterConfig, logger: Logger): Promise<ObjectSource> {
  if (cluster.manifests) {
    return new ManifestSource({
      cluster: cluster.name,
      paths: cluster.manifests.paths,
      debounceMs: config.manifests.debounceMs,
      pollIntervalMs: config.manifests.pollIntervalMs,
      maxFileBytes: config.manifests.maxFileBytes,
      logger,
    });
  }
  const k = cluster.kubernetes;
  if (k) {
    const { KubernetesSource, loadKubeConfig, LOCAL_KINDS, LOCAL_PICKER_KINDS, REMOTE_KINDS } = await import('./kubernetes/index.js');
    const settings = config.kubernetes;
    return new KubernetesSource({
      cluster: cluster.name,
      // The logger is already bound to this cluster.
      kubeConfig: () => loadKubeConfig(k, { warn: (message) => logger.warn(message) }),
      kinds: cluster.name !== config.clusterName ? REMOTE_KINDS : config.endpointPicker.ports.length > 0 ? LOCAL_PICKER_KINDS : LOCAL_KINDS,
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
