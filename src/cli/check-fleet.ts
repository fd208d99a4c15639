/**
 * `--check` with fleet.clusterProfiles: the members the hub's ClusterProfiles
 * name are loaded once (each with its plugin's token) next to the static ones,
 * and a "fleet" section says what the hub gave: every member with its profile,
 * access provider and state, and every profile refused with why. A hub that
 * does not answer, or a member that cannot be read (no usable provider, plugin
 * failure, unreachable), is a load error; a member in an outage and a refused
 * profile are warnings.
 */
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { ClusterState, SourceError } from '../sources/types.js';

export interface FleetCheck {
  /** The config with the fleet's members in clusters[]. */
  readonly config: RouterConfig;
  readonly states: readonly ClusterState[];
  readonly errors: readonly SourceError[];
  /** The fleet section printed after the routing table. */
  readonly section: string;
}

export async function loadFleet(config: RouterConfig, logger: Logger): Promise<FleetCheck | undefined> {
  const cp = config.fleet.clusterProfiles;
  if (!cp) return undefined;
  const { FleetMembers, withFleetMembers } = await import('../runtime/fleet-members.js');
  const states = new Map<string, ClusterState>();
  const errors: SourceError[] = [];
  const fleet = new FleetMembers(
    config,
    {
      onState: (s) => void states.set(s.cluster, s),
      onError: (e) => void errors.push(e),
      onRemoved: (c) => void states.delete(c),
    },
    logger.child({ component: 'fleet' }),
  );
  let seen: ReturnType<typeof fleet.debug>;
  try {
    await fleet.start();
    seen = fleet.debug();
  } catch (err) {
    return { config, states: [], errors: [{ cluster: 'fleet', reason: 'read', message: err instanceof Error ? err.message : String(err), errors: [] }], section: '' };
  } finally {
    await fleet.stop();
  }
  const { hub, members, refused } = seen;
  const lines = [`fleet: ClusterProfiles ${hub?.resource ?? ''} in namespace ${cp.namespace}${cp.labelSelector ? ` (${cp.labelSelector})` : ''}: ${members.length} member(s)`];
  const loadErrors: SourceError[] = [];
  if (hub?.state !== 'synced') {
    loadErrors.push({ cluster: 'fleet', reason: 'connect', message: `hub: ${hub?.message ?? `no answer within ${config.kubernetes.initialSyncTimeoutMs} ms`}`, errors: [] });
  }
  for (const m of members) {
    lines.push(`  ${m.cluster} (ClusterProfile ${m.profile}${m.provider ? `, provider ${m.provider}, ${m.server}` : ''}): ${m.state}`);
    if (m.state === 'outage') lines.push(`warning: cluster ${m.cluster}: ${m.message ?? 'outage'}`);
    else loadErrors.push(...errors.filter((e) => e.cluster === m.cluster));
  }
  for (const r of refused) lines.push(`warning: ${r.message}`);
  const serving = members.filter((m) => m.state === 'serving').map((m) => m.cluster);
  return {
    config: withFleetMembers(config, serving),
    states: [...states.values()].filter((s) => serving.includes(s.cluster)),
    errors: loadErrors,
    section: `${lines.join('\n')}\n`,
  };
}
