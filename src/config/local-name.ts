/**
 * The local cluster's name as the config gives it, and the config once the name
 * is known: clusterName set and the local entry (local-cluster.ts) named by it,
 * which is what every stage after start-up reads. Pure.
 */
import { localEntry } from './local-cluster.js';
import type { LoadedRouterConfig, RouterConfig } from './schema.js';

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
