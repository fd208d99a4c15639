/**
 * Builds the export controller from the router config: every cluster with a
 * Kubernetes source is a member (watched for InferencePools and
 * InferencePoolImports, written with its credentials); the Lease lives in the
 * cluster named by clusterName. Used in the router process
 * (exportController.enabled) and by `mcip-router --export-controller`.
 */
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { RouterConfig } from '../config/schema.js';
import { KubernetesSource } from '../sources/kubernetes/kubernetes-source.js';
import { loadKubeConfig, podNamespace } from '../sources/kubernetes/kubeconfig.js';
import { startExportController, type ExportControllerHandle } from './export-controller.js';
import { createExportClient } from './export-writer.js';
import { defaultIdentity } from './import-controller.js';
import { createLeaseClient } from './leader-election.js';

export class ExportConfigError extends Error {
  override readonly name = 'ExportConfigError';
}

export interface ExportRuntimeOptions {
  readonly logger: Logger;
  /** Registers the mcip_export_* metrics here. */
  readonly registry?: Registry;
}

export async function startExportFromConfig(config: RouterConfig, o: ExportRuntimeOptions): Promise<ExportControllerHandle> {
  const settings = config.exportController;
  const k8s = config.clusters.filter((c) => c.kubernetes !== undefined && c.manifests === undefined);
  if (k8s.length === 0) throw new ExportConfigError('the export controller needs at least one cluster with a kubernetes source (its members)');
  for (const c of config.clusters) {
    if (!k8s.includes(c)) o.logger.warn({ cluster: c.name }, `export controller: cluster ${c.name} has no kubernetes source; it is not a member the controller writes to`);
  }
  const le = settings.leaderElection;
  let lease;
  if (le.enabled) {
    const home = k8s.find((c) => c.name === config.clusterName)?.kubernetes;
    if (!home) throw new ExportConfigError(`exportController.leaderElection: the Lease lives in cluster ${config.clusterName} (clusterName), which needs a kubernetes source`);
    lease = { client: createLeaseClient(loadKubeConfig(home)), namespace: le.leaseNamespace ?? podNamespace() ?? 'default', identity: le.identity ?? defaultIdentity() };
  }
  const s = config.kubernetes;
  const members = k8s.map((c) => {
    const k = c.kubernetes!;
    return {
      name: c.name,
      source: new KubernetesSource({
        cluster: c.name,
        kubeConfig: () => loadKubeConfig(k),
        kinds: ['InferencePool', 'InferencePoolImport'],
        namespaces: k.namespaces,
        coalesceMs: s.coalesceMs,
        coalesceMaxMs: s.coalesceMaxMs,
        initialSyncTimeoutMs: s.initialSyncTimeoutMs,
        backoffInitialMs: s.backoffInitialMs,
        backoffMaxMs: s.backoffMaxMs,
        ...(k.qps !== undefined ? { qps: k.qps } : {}),
        ...(k.burst !== undefined ? { burst: k.burst } : {}),
        logger: o.logger.child({ component: 'export-controller', member: c.name }),
      }),
    };
  });
  const handle = await startExportController({
    settings,
    members,
    clientFor: (kc) => createExportClient(kc),
    ...(lease ? { lease } : {}),
    logger: o.logger,
  });
  if (o.registry) {
    handle.record.register(o.registry, () => handle.isLeader(), () => new Map(handle.debug().members.map((m) => [m.name, m.reachable])));
  }
  return handle;
}
