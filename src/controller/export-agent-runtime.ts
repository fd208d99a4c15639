/**
 * Builds the member agent (push/pull topology) from the router config: the local
 * cluster (its kubernetes source; its name from its About API, its ClusterProfile or
 * clusterName: sources/identity/resolve-local.ts) is the member it writes to and whose
 * Lease it holds; exportAgent.hub is where the records live. Used by
 * `mcip-router --export-agent`.
 */
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { LoadedRouterConfig } from '../config/schema.js';
import { nameLocalCluster } from '../sources/identity/resolve-local.js';
import { KubernetesSource } from '../sources/kubernetes/kubernetes-source.js';
import { loadKubeConfig, podNamespace } from '../sources/kubernetes/kubeconfig.js';
import { createRecordClient, HubRecords } from './export-agent-hub.js';
import { startExportAgent, type ExportAgentHandle } from './export-agent.js';
import { ExportConfigError } from './export-runtime.js';
import { createExportClient } from './export-writer.js';
import { defaultIdentity } from './import-controller.js';
import { createLeaseClient } from './leader-election.js';

export async function startExportAgentFromConfig(loaded: LoadedRouterConfig, o: { readonly logger: Logger; readonly registry?: Registry; readonly now?: () => number }): Promise<ExportAgentHandle> {
  if (!loaded.exportAgent) throw new ExportConfigError('the export agent needs an exportAgent block (its hub and record settings)');
  // Its records' namespace on the hub and its entry in every exportingClusters: the name is decided first.
  const { config, identity } = await nameLocalCluster(loaded, (message) => new ExportConfigError(message));
  o.logger.info({ cluster: identity.name }, `export agent: cluster name ${identity.name} from ${identity.from}`);
  const settings = loaded.exportAgent;
  const local = config.clusters.find((c) => c.name === config.clusterName)?.kubernetes;
  if (!local) throw new ExportConfigError(`exportAgent: the member it runs in, cluster ${config.clusterName} (clusterName), needs a kubernetes source`);
  const logger = o.logger.child({ component: 'export-agent' });
  const s = config.kubernetes;
  const pacing = { coalesceMs: s.coalesceMs, coalesceMaxMs: s.coalesceMaxMs, initialSyncTimeoutMs: s.initialSyncTimeoutMs, backoffInitialMs: s.backoffInitialMs, backoffMaxMs: s.backoffMaxMs };
  const le = settings.leaderElection;
  const lease = le.enabled
    ? { client: createLeaseClient(loadKubeConfig(local)), namespace: le.leaseNamespace ?? podNamespace() ?? 'default', identity: le.identity ?? defaultIdentity() }
    : undefined;
  const hubKc = loadKubeConfig(settings.hub);
  const now = o.now ?? Date.now;
  const handle = await startExportAgent({
    settings,
    cluster: config.clusterName,
    source: new KubernetesSource({
      cluster: config.clusterName,
      kubeConfig: () => loadKubeConfig(local),
      kinds: ['InferencePool', 'InferencePoolImport'],
      namespaces: local.namespaces,
      ...pacing,
      ...(local.qps !== undefined ? { qps: local.qps } : {}),
      ...(local.burst !== undefined ? { burst: local.burst } : {}),
      logger: logger.child({ member: config.clusterName }),
    }),
    clientFor: (kc) => createExportClient(kc),
    hub: new HubRecords({
      kubeConfig: hubKc,
      namespacePrefix: settings.namespacePrefix,
      staleAfterMs: settings.staleAfterMs,
      ...pacing,
      ...(settings.hub.qps !== undefined ? { qps: settings.hub.qps } : {}),
      ...(settings.hub.burst !== undefined ? { burst: settings.hub.burst } : {}),
      logger: logger.child({ hub: true }),
      now,
    }),
    records: createRecordClient(hubKc),
    ...(lease ? { lease } : {}),
    logger: o.logger,
    now,
  });
  if (o.registry) handle.record.register(o.registry, () => handle.isLeader(), () => new Map(handle.debug().members.map((m) => [m.name, m.reachable])));
  return handle;
}
