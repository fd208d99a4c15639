/**
 * Which clusters[] entry is the cluster the router runs in, and what the config
 * itself says its name is. Pure; used by the schema's cross-field checks and by
 * the start-up name resolution (sources/identity/resolve-local.ts).
 *
 * - clusterName set: the entry of that name (as always).
 * - clusterName absent: the entry marked `local: true`, else the only entry.
 *   That entry may leave out its name: the name then comes from the local
 *   cluster's About API or its ClusterProfile on the hub.
 *
 * Once the name is known, withLocalName gives the config every later stage
 * reads: clusterName set and the local entry named by it.
 */
import type { LoadedRouterConfig, RouterConfig } from './schema.js';

export type LocalEntry = { readonly ok: true; readonly index: number } | { readonly ok: false; readonly path: readonly (string | number)[]; readonly message: string };

interface Entry {
  readonly name?: unknown;
  readonly local?: unknown;
}

/** The local entry's index; tolerant of a partly parsed config (the schema's checks call it). */
export function localEntry(cfg: { readonly clusterName?: unknown; readonly clusters?: unknown }): LocalEntry {
  const clusters: Entry[] = Array.isArray(cfg.clusters) ? cfg.clusters.map((c) => (typeof c === 'object' && c !== null ? (c as Entry) : {})) : [];
  const marked = clusters.flatMap((c, i) => (c.local === true ? [i] : []));
  if (typeof cfg.clusterName === 'string') {
    const index = clusters.findIndex((c) => c.name === cfg.clusterName);
    if (index < 0) {
      const names = clusters.flatMap((c) => (typeof c.name === 'string' ? [c.name] : []));
      return { ok: false, path: ['clusterName'], message: `"${cfg.clusterName}" is not one of clusters[].name (${names.join(', ')})` };
    }
    const other = marked.find((i) => i !== index);
    if (other !== undefined) return { ok: false, path: ['clusters', other, 'local'], message: `the local cluster is clusterName "${cfg.clusterName}" (clusters[${index}]), not this entry` };
    return { ok: true, index };
  }
  if (marked.length > 1) return { ok: false, path: ['clusters', marked[1]!, 'local'], message: `only one entry can be the local cluster (clusters[${marked[0]}] is marked local too)` };
  if (marked.length === 1) return { ok: true, index: marked[0]! };
  if (clusters.length === 1) return { ok: true, index: 0 };
  return {
    ok: false,
    path: ['clusterName'],
    message: 'required when clusters[] has more than one entry: set clusterName, or mark the entry of the cluster the router runs in with local: true',
  };
}

/** The name the config gives the local cluster (clusterName, or the local entry's name), and where it is written. */
export function configuredName(cfg: LoadedRouterConfig): { readonly value: string; readonly from: string } | undefined {
  if (cfg.clusterName !== undefined) return { value: cfg.clusterName, from: `config clusterName "${cfg.clusterName}"` };
  const at = localEntry(cfg);
  const name = at.ok ? cfg.clusters[at.index]?.name : undefined;
  return at.ok && name !== undefined ? { value: name, from: `config clusters[${at.index}].name "${name}"` } : undefined;
}

/** The config with the local cluster named `name`: clusterName and the local entry's name. */
export function withLocalName(cfg: LoadedRouterConfig, name: string): RouterConfig {
  const at = localEntry(cfg);
  if (!at.ok) throw new Error(`the local cluster's entry: ${at.message}`);
  const clusters = cfg.clusters.map((c, i) => {
    const named = i === at.index ? name : c.name;
    if (named === undefined) throw new Error(`clusters[${i}] has no name`);
    return { ...c, name: named };
  });
  return { ...cfg, clusterName: name, clusters };
}

/** The config as the file names its local cluster (no About API or hub read); throws when the file leaves the name to them. */
export function namedConfig(cfg: LoadedRouterConfig): RouterConfig {
  const name = configuredName(cfg);
  if (!name) throw new Error('the config does not name the local cluster (clusterName, or the local entry\'s name)');
  return withLocalName(cfg, name.value);
}
