/**
 * ClusterProfiles (multicluster.x-k8s.io, the cluster inventory API) as the
 * router reads them, and which of them become members. Pure.
 *
 * - The member's name is the profile's `cluster.clusterset.k8s.io` property
 *   (its name in the ClusterSet, from the About API) when present, else the
 *   profile's name; it must be an RFC 1123 name.
 * - Health: a member is in an outage unless its ControlPlaneHealthy condition
 *   is True (False, Unknown and not reported alike), or while a Joined
 *   condition says False.
 * - How to reach it: `status.accessProviders[]` and the older
 *   `status.credentialProviders[]`, each `{name, cluster}` with a kubeconfig
 *   Cluster. An entry that names a file on the reader's host
 *   (`certificate-authority`), whose server is no http(s) URL, whose proxy is
 *   no http(s) or socks URL, or whose fields have the wrong type is left out
 *   with a message naming the field.
 * - Claims: one member name and one API server belong to one profile. The
 *   earliest profile (creation time, then namespace/name) keeps a claim; a later
 *   one, and one naming a static member (clusters[]), is refused.
 * - The local cluster is never a remote member: its own profile
 *   (fleet.clusterProfiles.localProfile) and any profile naming it are refused.
 */
import { objectName } from '../../config/addresses.js';
import { cutText, escapeControl } from '../../model/decode-util.js';

export const CLUSTER_PROFILE_GROUP = 'multicluster.x-k8s.io';
/** The About API property naming the cluster in its ClusterSet. */
export const CLUSTER_NAME_PROPERTY = 'cluster.clusterset.k8s.io';
export const CONDITION_CONTROL_PLANE_HEALTHY = 'ControlPlaneHealthy';
export const CONDITION_JOINED = 'Joined';

/** A kubeconfig Cluster as a ClusterProfile carries it (field names as in kubeconfig files). */
export interface ProfileCluster {
  readonly server: string;
  readonly 'certificate-authority-data'?: string;
  readonly 'tls-server-name'?: string;
  readonly 'insecure-skip-tls-verify'?: boolean;
  readonly 'proxy-url'?: string;
  readonly 'disable-compression'?: boolean;
  readonly extensions?: readonly { readonly name: string; readonly extension: unknown }[];
}

export interface AccessProvider {
  readonly name: string;
  readonly cluster: ProfileCluster;
}

export interface ProfileHealth {
  readonly healthy: boolean;
  /** The deciding condition's reason and message ("NotReported" when there is none). */
  readonly reason: string;
  readonly message: string;
}

export interface ClusterProfile {
  /** "namespace/name". */
  readonly ref: string;
  readonly member: string;
  readonly createdAt: string;
  readonly health: ProfileHealth;
  readonly accessProviders: readonly AccessProvider[];
  readonly credentialProviders: readonly AccessProvider[];
  readonly properties: Readonly<Record<string, string>>;
  /** Access provider entries left out, each with why. */
  readonly problems: readonly string[];
}

export type DecodedProfile = { readonly ok: true; readonly profile: ClusterProfile } | { readonly ok: false; readonly ref: string; readonly message: string };

type Raw = Record<string, unknown>;
const obj = (v: unknown): Raw | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Raw) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export function decodeClusterProfile(raw: Raw): DecodedProfile {
  const meta = obj(raw.metadata) ?? {};
  const ref = `${str(meta.namespace) ?? ''}/${str(meta.name) ?? '?'}`;
  const status = obj(raw.status) ?? {};
  const properties: Record<string, string> = {};
  for (const p of list(status.properties)) {
    const name = str(obj(p)?.name);
    const value = str(obj(p)?.value);
    if (name !== undefined && value !== undefined) properties[name] = value;
  }
  const member = properties[CLUSTER_NAME_PROPERTY] ?? str(meta.name) ?? '';
  if (!objectName.safeParse(member).success) {
    const from = properties[CLUSTER_NAME_PROPERTY] !== undefined ? `status.properties ${CLUSTER_NAME_PROPERTY}` : 'metadata.name';
    return { ok: false, ref, message: `ClusterProfile ${ref}: ${from} "${escapeControl(member.slice(0, 80))}" is not a valid member name (a lower-case RFC 1123 name)` };
  }
  const problems: string[] = [];
  const providers = (field: 'accessProviders' | 'credentialProviders'): AccessProvider[] =>
    list(status[field]).flatMap((entry, i) => {
      const decoded = decodeAccessProvider(entry);
      if (typeof decoded === 'string') {
        problems.push(`status.${field}[${i}]: ${decoded}`);
        return [];
      }
      return [decoded];
    });
  return {
    ok: true,
    profile: {
      ref,
      member,
      createdAt: str(meta.creationTimestamp) ?? '',
      health: healthOf(list(status.conditions)),
      accessProviders: providers('accessProviders'),
      credentialProviders: providers('credentialProviders'),
      properties,
      problems,
    },
  };
}

/** Longest piece of a condition's text a message carries. */
const CONDITION_TEXT_CHARS = 256;

/** A condition's text as messages carry it: cut, control characters (terminal escapes among them) escaped. */
function conditionText(v: unknown): string | undefined {
  const s = str(v);
  if (!s) return undefined;
  return cutText(s, CONDITION_TEXT_CHARS);
}

function healthOf(conditions: unknown[]): ProfileHealth {
  const find = (type: string): Raw | undefined => conditions.map(obj).find((c) => c?.type === type);
  const describe = (c: Raw, healthy: boolean): ProfileHealth => {
    const reason = conditionText(c.reason);
    const message = conditionText(c.message);
    return {
      healthy,
      reason: reason ?? '',
      message: `${String(c.type)} is ${conditionText(String(c.status)) ?? ''}${reason ? ` (${reason})` : ''}${message ? `: ${message}` : ''}`,
    };
  };
  const joined = find(CONDITION_JOINED);
  if (joined && joined.status === 'False') return describe(joined, false);
  const cp = find(CONDITION_CONTROL_PLANE_HEALTHY);
  if (!cp) return { healthy: false, reason: 'NotReported', message: `${CONDITION_CONTROL_PLANE_HEALTHY} is not reported` };
  return describe(cp, cp.status === 'True');
}

/** An access provider's name as provider files spell them (e.g. open-cluster-management, secretreader). */
const PROVIDER_NAME = /^[A-Za-z0-9][-A-Za-z0-9_./]{0,252}$/;

/** The proxy schemes the Kubernetes client connects through. */
const PROXY_SCHEMES = new Set(['http:', 'https:', 'socks4:', 'socks4a:', 'socks5:', 'socks5h:']);
const urlScheme = (u: string): string => {
  try {
    return new URL(u).protocol;
  } catch {
    return '';
  }
};

const CLUSTER_FIELDS = ['server', 'certificate-authority-data', 'tls-server-name', 'insecure-skip-tls-verify', 'proxy-url', 'disable-compression', 'extensions'] as const;

function decodeAccessProvider(entry: unknown): AccessProvider | string {
  const e = obj(entry);
  const name = str(e?.name);
  if (!e || !name) return 'no name';
  if (!PROVIDER_NAME.test(name)) return 'name is not a provider name (letters, digits, "-", "_", ".", "/"; at most 253)';
  const c = obj(e.cluster);
  const where = `access provider ${name}: cluster`;
  if (!c) return `${where} is missing`;
  if (c['certificate-authority'] !== undefined) return `${where}.certificate-authority names a file on the reader's host; use certificate-authority-data`;
  const server = str(c.server);
  let url: URL | undefined;
  try {
    url = server ? new URL(server) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return `${where}.server is not an http(s) URL`;
  const ca = c['certificate-authority-data'];
  if (ca !== undefined && (typeof ca !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(ca))) return `${where}.certificate-authority-data is not base64`;
  for (const f of ['proxy-url', 'tls-server-name'] as const) if (c[f] !== undefined && typeof c[f] !== 'string') return `${where}.${f} is not a string`;
  for (const f of ['insecure-skip-tls-verify', 'disable-compression'] as const) if (c[f] !== undefined && typeof c[f] !== 'boolean') return `${where}.${f} is not a boolean`;
  if (typeof c['proxy-url'] === 'string' && !PROXY_SCHEMES.has(urlScheme(c['proxy-url']))) return `${where}.proxy-url is not an http(s) or socks URL`;
  const extensions = list(c.extensions).flatMap((x) => {
    const n = str(obj(x)?.name);
    return n === undefined ? [] : [{ name: n, extension: obj(x)?.extension }];
  });
  const cluster: Record<string, unknown> = {};
  for (const f of CLUSTER_FIELDS) if (c[f] !== undefined && f !== 'extensions') cluster[f] = c[f];
  return { name, cluster: { ...(cluster as unknown as ProfileCluster), ...(extensions.length > 0 ? { extensions } : {}) } };
}

/** The first `n` of a profile's items for a message, and how many more there are. */
export function firstOf(items: readonly string[], n: number, separator: string): string {
  return items.length > n ? `${items.slice(0, n).join(separator)} and ${items.length - n} more` : items.join(separator);
}

export interface MemberPlan {
  /** Profiles that are members, by member name. */
  readonly members: ReadonlyMap<string, ClusterProfile>;
  /** Profiles that are not, each with why. */
  readonly refused: readonly { readonly ref: string; readonly message: string }[];
}

/** The cluster the router runs in: its name and, when configured, its own profile ("namespace/name"). */
export interface LocalCluster {
  readonly cluster: string;
  readonly profile?: string;
}

/** Which decoded profiles become members (see the module comment for the rules). */
export function planMembers(decoded: readonly DecodedProfile[], staticMembers: ReadonlySet<string>, local?: LocalCluster): MemberPlan {
  const refused: { ref: string; message: string }[] = [];
  const valid: ClusterProfile[] = [];
  for (const d of decoded) {
    if (local?.profile !== undefined && (d.ok ? d.profile.ref : d.ref) === local.profile) {
      refused.push({ ref: local.profile, message: `ClusterProfile ${local.profile}: this cluster's own profile (fleet.clusterProfiles.localProfile); the local cluster ${local.cluster} is not a remote member` });
    } else if (d.ok) valid.push(d.profile);
    else refused.push({ ref: d.ref, message: d.message });
  }
  valid.sort((a, b) => (a.createdAt === b.createdAt ? a.ref.localeCompare(b.ref) : a.createdAt.localeCompare(b.createdAt)));
  const members = new Map<string, ClusterProfile>();
  const servers = new Map<string, string>();
  for (const p of valid) {
    if (p.member === local?.cluster) {
      refused.push({ ref: p.ref, message: `ClusterProfile ${p.ref}: cluster "${p.member}" is the local cluster (the router runs in it); it is not a remote member` });
      continue;
    }
    if (staticMembers.has(p.member)) {
      refused.push({ ref: p.ref, message: `ClusterProfile ${p.ref}: cluster "${p.member}" is a static member (clusters[]); the static entry is used` });
      continue;
    }
    const holder = members.get(p.member);
    if (holder) {
      refused.push({ ref: p.ref, message: `ClusterProfile ${p.ref}: cluster "${p.member}" is already claimed by ClusterProfile ${holder.ref}` });
      continue;
    }
    const mine = [...new Set([...p.accessProviders, ...p.credentialProviders].map((a) => normalServer(a.cluster.server)))];
    const taken = mine.find((s) => servers.has(s));
    if (taken !== undefined) {
      refused.push({ ref: p.ref, message: `ClusterProfile ${p.ref}: API server ${taken} is already claimed by ClusterProfile ${servers.get(taken)} (cluster "${p.member}")` });
      continue;
    }
    members.set(p.member, p);
    for (const s of mine) servers.set(s, p.ref);
  }
  return { members, refused };
}

/** Scheme, host and port (default port explicit) and path without a trailing slash. */
function normalServer(server: string): string {
  const u = new URL(server);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.protocol}//${u.hostname.toLowerCase()}:${port}${u.pathname.replace(/\/+$/, '')}`;
}
