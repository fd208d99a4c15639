/**
 * The local cluster's name in its ClusterSet, and where it came from.
 *
 * - The About API (KEP-2149): the cluster-scoped ClusterProperty
 *   `cluster.clusterset.k8s.io` (group about.k8s.io) in the local cluster holds its
 *   name in the ClusterSet. When present it is the name; the config's
 *   clusterName must say the same, else the router does not start (a wrong
 *   name would read and write other clusters' entries in `exportingClusters`).
 * - Else the config's clusterName.
 *
 * Members taken from ClusterProfiles are named by their profile (its
 * `cluster.clusterset.k8s.io` property, the fleet manager's copy of the
 * member's About API value, else the profile's name: cluster-profile.ts).
 *
 * Reading (about-api.ts) is bounded by the member's requestTimeoutMs; the API
 * server not answering, refusing the read (403) or not serving the About API
 * leaves the configured name in use, with why. Pure.
 */
import { objectName } from '../../config/addresses.js';
import { CLUSTER_NAME_PROPERTY } from '../fleet/cluster-profile.js';

export const ABOUT_GROUP = 'about.k8s.io';

export type AboutName =
  | { readonly state: 'found'; readonly value: string; readonly version: string }
  /** Not there, not served, not readable, or no answer: why, for --check and the log. */
  | { readonly state: 'absent' | 'unreadable'; readonly message: string };

export interface ClusterIdentity {
  readonly name: string;
  /** Where the name came from, for --check and the start-up log. */
  readonly from: string;
}

export class IdentityMismatchError extends Error {
  override readonly name = 'IdentityMismatchError';
}

/**
 * The local cluster's name from what its About API said (undefined: not read, e.g. the
 * local cluster comes from manifests). Throws IdentityMismatchError naming both values
 * and where each came from.
 */
export function resolveIdentity(clusterName: string, about: AboutName | undefined): ClusterIdentity {
  const config = `config clusterName "${clusterName}"`;
  if (!about) return { name: clusterName, from: `${config} (the local cluster is not read from a Kubernetes API: no About API)` };
  if (about.state !== 'found') return { name: clusterName, from: `${config} (About API: ${about.message})` };
  const where = `the About API of cluster ${clusterName} (ClusterProperty ${CLUSTER_NAME_PROPERTY}, ${ABOUT_GROUP}/${about.version})`;
  const shown = about.value.length > 80 ? `${about.value.slice(0, 80)}...` : about.value;
  if (!objectName.safeParse(about.value).success) {
    throw new IdentityMismatchError(`cluster name: "${shown}" from ${where} is not a valid cluster name (a lower-case RFC 1123 name); ${config} cannot be checked against it`);
  }
  if (about.value !== clusterName) {
    throw new IdentityMismatchError(
      `cluster name mismatch: ${config} (the router config) differs from "${about.value}" (${where}); this cluster is "${about.value}" in its ClusterSet: set clusterName and its clusters[].name to "${about.value}", or correct the ClusterProperty`,
    );
  }
  return { name: clusterName, from: `${where}, matching ${config}` };
}
