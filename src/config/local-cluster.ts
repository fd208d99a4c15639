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
 * What the config says the name is, and the config named: local-name.ts.
 */
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
