/**
 * The start-up step that names the local cluster: reads its About API (when
 * its clusters[] entry is a Kubernetes source) and its ClusterProfile on the
 * hub (when fleet.clusterProfiles.localProfile is set), both bounded and in
 * parallel, decides the name (cluster-identity.ts) and returns the config every
 * later stage reads: clusterName set, the local entry named by it. Runs once,
 * before any source, snapshot or controller uses the name, in the router, the
 * export controller, the export agent and --check. Throws IdentityError.
 */
import { localEntry } from '../../config/local-cluster.js';
import { configuredName, withLocalName } from '../../config/local-name.js';
import type { LoadedRouterConfig, RouterConfig } from '../../config/schema.js';
import { type AboutName, type ClusterIdentity, IdentityError, type ProfileName, decideIdentity } from './cluster-identity.js';

export interface ResolvedLocal {
  readonly config: RouterConfig;
  readonly identity: ClusterIdentity;
}

export async function resolveLocalCluster(loaded: LoadedRouterConfig): Promise<ResolvedLocal> {
  const at = localEntry(loaded);
  if (!at.ok) throw new IdentityError(`cluster name: ${at.message}`);
  const entry = loaded.clusters[at.index]!;
  const config = configuredName(loaded);
  const local = config ? `cluster ${config.value}` : `the local cluster (clusters[${at.index}])`;
  const cp = loaded.fleet.clusterProfiles;
  const [about, profile] = await Promise.all([
    entry.kubernetes ? readAbout(entry.kubernetes, local) : undefined,
    cp?.localProfile !== undefined ? readProfile(cp, cp.localProfile) : undefined,
  ]);
  const identity = decideIdentity({ local, ...(config ? { config } : {}), ...(about ? { about } : {}), ...(profile ? { profile } : {}) });
  // A name read from an API may be another entry's (the config's own names are unique): it would read and write that member's entries.
  const taken = loaded.clusters.findIndex((c, i) => i !== at.index && c.name === identity.name);
  if (taken >= 0) {
    throw new IdentityError(`cluster name: "${identity.name}" from ${identity.from} is the name of clusters[${taken}], another cluster of the config; two clusters cannot share a name: correct the source, or that entry's name`);
  }
  return { config: withLocalName(loaded, identity.name), identity };
}

type Kube = NonNullable<LoadedRouterConfig['clusters'][number]['kubernetes']>;

// Settings that weaken security are reported by the source that reads the cluster, not here.
async function readAbout(k: Kube, local: string): Promise<AboutName> {
  const [{ readAboutName }, { loadKubeConfig }] = await Promise.all([import('./about-api.js'), import('../kubernetes/kubeconfig.js')]);
  try {
    return await readAboutName(loadKubeConfig(k, { cluster: local }));
  } catch (err) {
    return { state: 'unreadable', message: err instanceof Error ? err.message : String(err) };
  }
}

async function readProfile(cp: NonNullable<LoadedRouterConfig['fleet']['clusterProfiles']>, name: string): Promise<ProfileName> {
  const [{ readProfileName }, { loadKubeConfig }] = await Promise.all([import('./profile-name.js'), import('../kubernetes/kubeconfig.js')]);
  try {
    return await readProfileName(loadKubeConfig(cp.hub, { cluster: 'fleet hub' }), { namespace: cp.namespace, name, apiVersion: cp.apiVersion });
  } catch (err) {
    return { state: 'unreadable', message: `fleet hub: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** resolveLocalCluster, an IdentityError turned into the caller's start-up error. */
export async function nameLocalCluster(loaded: LoadedRouterConfig, toError: (message: string) => Error): Promise<ResolvedLocal> {
  try {
    return await resolveLocalCluster(loaded);
  } catch (err) {
    throw err instanceof IdentityError ? toError(err.message) : err;
  }
}
