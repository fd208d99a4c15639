/**
 * Reads the local cluster's own ClusterProfile on the hub
 * (fleet.clusterProfiles.localProfile) and the name it gives the cluster: its
 * `cluster.clusterset.k8s.io` property, else its name, decoded exactly as
 * members are (cluster-profile.ts). The profile is hub data: a value that is no
 * RFC 1123 name is 'invalid', with why. One bounded GET (the hub's
 * requestTimeoutMs); never throws.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { CLUSTER_NAME_PROPERTY, CLUSTER_PROFILE_GROUP, decodeClusterProfile } from '../fleet/cluster-profile.js';
import { classifyError, httpStatusOf } from '../kubernetes/api-errors.js';
import type { ProfileName } from './cluster-identity.js';

export interface LocalProfileRef {
  readonly namespace: string;
  readonly name: string;
  /** The ClusterProfile version the hub serves (fleet.clusterProfiles.apiVersion). */
  readonly apiVersion: string;
}

export async function readProfileName(hub: KubeConfig, ref: LocalProfileRef): Promise<ProfileName> {
  const where = `ClusterProfile ${ref.namespace}/${ref.name} (${CLUSTER_PROFILE_GROUP}/${ref.apiVersion}) on the hub`;
  let raw: unknown;
  try {
    raw = await hub.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: CLUSTER_PROFILE_GROUP,
      version: ref.apiVersion,
      namespace: ref.namespace,
      plural: 'clusterprofiles',
      name: ref.name,
    });
  } catch (err) {
    if (httpStatusOf(err) === 404) return { state: 'absent', message: `no ${where}` };
    return { state: 'unreadable', message: `${where}: ${classifyError(err).message}` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { state: 'unreadable', message: `${where}: the answer is not an object` };
  const decoded = decodeClusterProfile(raw as Record<string, unknown>);
  if (!decoded.ok) return { state: 'invalid', message: decoded.message };
  const p = decoded.profile;
  const field = p.properties[CLUSTER_NAME_PROPERTY] !== undefined ? `status.properties ${CLUSTER_NAME_PROPERTY}` : 'metadata.name';
  return { state: 'found', value: p.member, from: `ClusterProfile ${p.ref} on the hub (${field})` };
}
