/**
 * The local cluster's name in its ClusterSet, and where it came from. Decided
 * once at start-up, before any source or snapshot uses it, from up to three
 * sources, first present wins:
 *
 * 1. the About API (KEP-2149): the cluster-scoped ClusterProperty
 *    `cluster.clusterset.k8s.io` (group about.k8s.io) of the local cluster,
 *    when the local cluster is read from Kubernetes (about-api.ts);
 * 2. the local cluster's own ClusterProfile on the hub
 *    (fleet.clusterProfiles.localProfile): its `cluster.clusterset.k8s.io`
 *    property, else its name, as members are named (profile-name.ts);
 * 3. the config: clusterName, or the local clusters[] entry's name.
 *
 * Every two present sources must say the same, else the router does not start
 * (a wrong name would read and write other clusters' entries in
 * `exportingClusters`); no source at all is an error saying what to set. A
 * source that cannot be read (not installed, forbidden, no answer) is absent,
 * with why. Values read from an API are RFC 1123 names, or an error. Pure.
 */
import { objectName } from '../../config/addresses.js';
import { escapeControl } from '../../model/decode-util.js';
import { CLUSTER_NAME_PROPERTY } from '../fleet/cluster-profile.js';

export const ABOUT_GROUP = 'about.k8s.io';

export type AboutName =
  | { readonly state: 'found'; readonly value: string; readonly version: string }
  /** Not there, not served, not readable, or no answer: why, for --check and the log. */
  | { readonly state: 'absent' | 'unreadable'; readonly message: string };

/** What the local ClusterProfile said; `from` names the profile and the field the value came from. */
export type ProfileName =
  | { readonly state: 'found'; readonly value: string; readonly from: string }
  | { readonly state: 'absent' | 'unreadable'; readonly message: string }
  /** The profile names no valid cluster: why (cluster-profile.ts's message). */
  | { readonly state: 'invalid'; readonly message: string };

export interface NameSources {
  /** The config's own name for the local cluster (clusterName or the local entry's name). */
  readonly config?: { readonly value: string; readonly from: string };
  /** Undefined: the local cluster is not read from a Kubernetes API. */
  readonly about?: AboutName;
  /** Undefined: no fleet.clusterProfiles.localProfile. */
  readonly profile?: ProfileName;
  /** How messages name the local cluster before its name is known: "cluster cluster-a", or "the local cluster (clusters[0])". */
  readonly local: string;
}

export interface ClusterIdentity {
  readonly name: string;
  /** Where the name came from, for --check and the start-up log. */
  readonly from: string;
}

/** The local cluster's name cannot be decided: sources disagree, one is no valid name, or none names it. */
export class IdentityError extends Error {
  override readonly name: string = 'IdentityError';
}

export class IdentityMismatchError extends IdentityError {
  override readonly name = 'IdentityMismatchError';
}

interface Claim {
  readonly value: string;
  /** The source, e.g. `the About API of cluster cluster-a (...)`. */
  readonly where: string;
  /** The claim as quoted in a mismatch. */
  readonly quoted: string;
  /** What to correct when this source is the odd one out, `to` the other source's value. */
  readonly fix: (to: string) => string;
}

/** A value as quoted in a message: cut, control characters escaped (an API's text). */
const shown = (v: string): string => escapeControl(v.length > 80 ? `${v.slice(0, 80)}...` : v);

/** Decides the name (see the module comment). Throws IdentityError / IdentityMismatchError. */
export function decideIdentity(s: NameSources): ClusterIdentity {
  const claims: Claim[] = [];
  const notes: string[] = [];
  if (s.about?.state === 'found') {
    const where = `the About API of ${s.local} (ClusterProperty ${CLUSTER_NAME_PROPERTY}, ${ABOUT_GROUP}/${s.about.version})`;
    claims.push({ value: s.about.value, where, quoted: `"${shown(s.about.value)}" (${where})`, fix: () => 'correct the ClusterProperty' });
  } else if (s.about) notes.push(`About API: ${s.about.message}`);
  if (s.profile?.state === 'found') {
    const where = s.profile.from;
    claims.push({ value: s.profile.value, where, quoted: `"${shown(s.profile.value)}" (${where})`, fix: () => 'correct fleet.clusterProfiles.localProfile or the profile' });
  } else if (s.profile?.state === 'invalid') {
    throw new IdentityError(`cluster name: ${s.profile.message}; it cannot name this cluster (fleet.clusterProfiles.localProfile)`);
  } else if (s.profile) notes.push(`local ClusterProfile: ${s.profile.message}`);
  if (s.config) {
    const c = s.config;
    const field = c.from.startsWith('config clusterName') ? 'clusterName and its clusters[].name' : 'the local clusters[] entry\'s name';
    claims.push({ value: c.value, where: c.from, quoted: `${c.from} (the router config)`, fix: (to) => `set ${field} to "${to}"` });
  }
  for (const c of claims) {
    if (!objectName.safeParse(c.value).success) {
      const against = claims.filter((o) => o !== c).map((o) => o.where);
      throw new IdentityError(`cluster name: "${shown(c.value)}" from ${c.where} is not a valid cluster name (a lower-case RFC 1123 name)${against.length > 0 ? `; ${against.join(' and ')} cannot be checked against it` : ''}`);
    }
  }
  const first = claims[0];
  if (!first) {
    throw new IdentityError(
      `cluster name: nothing names ${s.local}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}: set clusterName, or give the cluster its About API ClusterProperty ${CLUSTER_NAME_PROPERTY}, or name its ClusterProfile in fleet.clusterProfiles.localProfile`,
    );
  }
  // Every pair that disagrees; the lower-ranked source is quoted first, as the one to correct.
  const pairs: string[] = [];
  for (let i = 0; i < claims.length; i++) {
    for (let j = claims.length - 1; j > i; j--) {
      const hi = claims[i]!;
      const lo = claims[j]!;
      if (hi.value === lo.value) continue;
      pairs.push(`${lo.quoted} differs from ${hi.quoted}; this cluster is "${hi.value}" in its ClusterSet: ${lo.fix(hi.value)}, or ${hi.fix(lo.value)}`);
    }
  }
  if (pairs.length > 0) throw new IdentityMismatchError(`cluster name mismatch: ${pairs.join('; and ')}`);
  const also = claims.slice(1).map((c) => c.where);
  const why = notes.length > 0 ? ` (${notes.join('; ')})` : s.about === undefined && claims.length === 1 && s.config ? ' (the local cluster is not read from a Kubernetes API: no About API)' : '';
  return { name: first.value, from: `${first.where}${also.length > 0 ? `, matching ${also.join(' and ')}` : ''}${why}` };
}
