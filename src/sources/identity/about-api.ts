/**
 * Reads the About API (KEP-2149) of a cluster: the cluster-scoped ClusterProperty
 * `cluster.clusterset.k8s.io` (group about.k8s.io), the cluster's name in its
 * ClusterSet. One bounded GET per served version (the KubeConfig's
 * requestTimeoutMs); never throws.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { CLUSTER_NAME_PROPERTY } from '../fleet/cluster-profile.js';
import { classifyError, httpStatusOf } from '../kubernetes/api-errors.js';
import { ABOUT_GROUP, type AboutName } from './cluster-identity.js';

/** Served versions, newest first (the upstream CRD serves v1beta1, its storage version, and v1alpha1). */
export const ABOUT_VERSIONS = ['v1beta1', 'v1alpha1'] as const;

export async function readAboutName(kc: KubeConfig): Promise<AboutName> {
  const api = kc.makeApiClient(CustomObjectsApi);
  for (const version of ABOUT_VERSIONS) {
    try {
      const obj = (await api.getClusterCustomObject({ group: ABOUT_GROUP, version, plural: 'clusterproperties', name: CLUSTER_NAME_PROPERTY })) as { spec?: { value?: unknown } };
      const value = obj?.spec?.value;
      if (typeof value !== 'string') return { state: 'unreadable', message: `ClusterProperty ${CLUSTER_NAME_PROPERTY} (${ABOUT_GROUP}/${version}) has no string spec.value` };
      return { state: 'found', value, version };
    } catch (err) {
      // 404: that version is not served, or the object does not exist: try the next.
      if (httpStatusOf(err) === 404) continue;
      return { state: 'unreadable', message: `ClusterProperty ${CLUSTER_NAME_PROPERTY} (${ABOUT_GROUP}): ${classifyError(err).message}` };
    }
  }
  return { state: 'absent', message: `no ClusterProperty ${CLUSTER_NAME_PROPERTY} (${ABOUT_GROUP} not installed, or the property not set)` };
}
