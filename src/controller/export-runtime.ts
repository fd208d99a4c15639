/**
 * Builds the export controller from the router config: every cluster with a
 * Kubernetes source is a member (watched for InferencePools and
 * InferencePoolImports, written with its credentials), and with
 * fleet.clusterProfiles every member the hub's ClusterProfiles name (read and
 * written with the token its credential plugin prints; joining, leaving and in
 * an outage as the profiles say, fleet-members.ts); the Lease lives in the
 * local cluster, named at start (its About API, its ClusterProfile or
 * clusterName: sources/identity/resolve-local.ts). Used in the router process
 * (exportController.enabled) and by `mcip-router --export-controller`.
 */
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { LoadedRouterConfig, RouterConfig } from '../config/schema.js';
import { nameLocalCluster } from '../sources/identity/resolve-local.js';
import { KubernetesSource } from '../sources/kubernetes/kubernetes-source.js';
import { loadKubeConfig, podNamespace } from '../sources/kubernetes/kubeconfig.js';
import { startExportController, type ExportControllerHandle } from './export-controller.js';
import { createExportClient } from './export-writer.js';
import { defaultIdentity } from './import-controller.js';
import { createLeaseClient } from './leader-election.js';
import type { ObjectKind } from '../model/types.js';
import type { ClusterState, SourceError } from '../sources/types.js';

/** What the controller watches in every member. */
const EXPORT_KINDS: readonly ObjectKind[] = ['InferencePool', 'InferencePoolImport'];

export class ExportConfigError extends Error {
  override readonly name = 'ExportConfigError';
}

export interface ExportRuntimeOptions {
  readonly logger: Logger;
  /** Registers the mcip_export_* metrics here. */
  readonly registry?: Registry;
  /** Follows fleet.clusterProfiles (needed when it is configured). */
  readonly fleet?: ExportFleet;
}

export async function startExportFromConfig(loaded: LoadedRouterConfig, o: ExportRuntimeOptions): Promise<ExportControllerHandle> {
  // The names in exportingClusters: the local cluster's, decided before anything is read or written.
  const { config, identity } = await nameLocalCluster(loaded, (message) => new ExportConfigError(message));
  o.logger.info({ cluster: identity.name }, `export controller: cluster name ${identity.name} from ${identity.from}`);
  const settings = config.exportController;
  const k8s = config.clusters.filter((c) => c.kubernetes !== undefined && c.manifests === undefined);
  if (k8s.length === 0 && !config.fleet.clusterProfiles) throw new ExportConfigError('the export controller needs at least one cluster with a kubernetes source, or fleet.clusterProfiles (its members)');
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
        kinds: EXPORT_KINDS,
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
  const handle: ExportControllerHandle = await startExportController({
    settings,
    members,
    clientFor: (kc) => createExportClient(kc),
    ...(lease ? { lease } : {}),
    logger: o.logger,
  });
  const fleet = config.fleet.clusterProfiles ? await joinFleet(config, handle, o.fleet, o.logger) : undefined;
  if (fleet) {
    const stop = handle.stop.bind(handle);
    handle.stop = async () => {
      await fleet.stop();
      await stop();
    };
  }
  if (o.registry) {
    handle.record.register(o.registry, () => handle.isLeader(), () => new Map(handle.debug().members.map((m) => [m.name, m.reachable])));
  }
  return handle;
}

/** What the export controller hears from the members of fleet.clusterProfiles (runtime/fleet-members.ts implements it). */
export interface ExportFleetListener {
  onSource(cluster: string, source: KubernetesSource, started: Promise<void>): void;
  onState(s: ClusterState): void;
  onError(e: SourceError): void;
  onHealth(cluster: string, healthy: boolean, message?: string): void;
  onRemoved(cluster: string): void;
}

/** Starts following fleet.clusterProfiles of `config`, watching `kinds` in every member (given by the layer that owns fleet members). */
export type ExportFleet = (config: RouterConfig, listener: ExportFleetListener, logger: Logger, kinds: readonly ObjectKind[]) => { start(): Promise<void>; stop(): Promise<void> };

/** The ClusterProfiles' members join the controller as the hub names them; a bad provider file stops the controller and rejects. */
async function joinFleet(config: RouterConfig, handle: ExportControllerHandle, fleetFor: ExportFleet | undefined, logger: Logger): Promise<{ stop(): Promise<void> }> {
  if (!fleetFor) throw new ExportConfigError('fleet.clusterProfiles: this entry point cannot follow ClusterProfiles');
  const fleet = fleetFor(
    config,
    {
      onSource: (name, source, started) => handle.join({ name, source, started }),
      onState: (s) => handle.state(s.cluster, s),
      onError: (e) => handle.error(e.cluster, e.message),
      onHealth: (name, healthy, message) => handle.health(name, healthy, message),
      onRemoved: (name) => void handle.leave(name),
    },
    logger.child({ component: 'export-controller', part: 'fleet' }),
    EXPORT_KINDS,
  );
  try {
    await fleet.start();
  } catch (err) {
    await fleet.stop();
    await handle.stop();
    throw new ExportConfigError(`fleet.clusterProfiles: ${err instanceof Error ? err.message : String(err)}`);
  }
  return fleet;
}
