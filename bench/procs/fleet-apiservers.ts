/**
 * The fleet cell's API servers, in a process of their own: a hub stand-in
 * holding ClusterProfiles and HTTPS member stand-ins (test/sources/fleet's
 * FleetEnv: a test CA, one bearer token per member, a provider file running
 * the secretreader-style test plugin), each member holding its exported
 * InferencePools and their EPP Services. The orchestrator publishes profiles
 * and writes pools over RPC; the router reads everything through real sockets.
 */
import { rmSync } from 'node:fs';
import { EXPORT_ANNOTATION } from '../../src/model/types.js';
import { createTestCa } from '../../test/helpers/pki.js';
import { FleetEnv } from '../../test/sources/fleet/fleet-env.js';
import { pool, service } from '../../test/sources/kubernetes/kube-fixtures.js';
import { FLEET_NAMESPACE, memberName, steadyPools } from '../lib/fleet-plan.js';
import { HealthFarm } from '../lib/health-farm.js';
import { serveRpc } from '../lib/rpc.js';


const ca = createTestCa('mcip bench fleet CA');
const fleet = await new FleetEnv(ca).start();
const published = new Set<string>();
const epps = new HealthFarm();

/** An exported pool and its EPP Service, whose port is an EPP stand-in of its own (every EPP is a distinct target). */
async function writePool(member: string, name: string): Promise<void> {
  const s = fleet.members.get(member);
  if (!s) throw new Error(`no member ${member}`);
  const port = await epps.add();
  const svc = service(`${name}-epp`, FLEET_NAMESPACE, '127.0.0.1') as { spec: { ports: { port: number }[] } };
  svc.spec.ports[0]!.port = port;
  s.create('services', svc);
  const exported = pool(name, FLEET_NAMESPACE, `${name}-epp`, { annotations: { [EXPORT_ANNOTATION]: 'ClusterSet' } }) as { spec: { endpointPickerRef: { port: { number: number } } } };
  exported.spec.endpointPickerRef.port.number = port;
  s.create('inferencepools', exported);
}

serveRpc(
  {
    /** Starts `members` member stand-ins with `pools` exported pools each (pool-0 ...); returns fleet.clusterProfiles. */
    async setup(a: { members: number; pools: number }) {
      for (let i = 0; i < a.members; i++) {
        const name = memberName(i);
        await fleet.member(name);
        for (const p of steadyPools(a.pools)) await writePool(name, p);
      }
      return fleet.clusterProfiles();
    },
    /** The hub publishes the profiles of the first `count` members, and no others. */
    publish(a: { count: number }) {
      const want = new Set([...fleet.members.keys()].slice(0, a.count));
      for (const name of [...published]) {
        if (!want.has(name)) {
          fleet.hub.delete('clusterprofiles', 'fleet-system', name);
          published.delete(name);
        }
      }
      for (const name of want) {
        if (published.has(name)) continue;
        fleet.hub.create('clusterprofiles', fleet.profile(name));
        published.add(name);
      }
      return published.size;
    },
    async addPool(a: { member: string; name: string }) {
      await writePool(a.member, a.name);
      return true;
    },
    deletePool(a: { member: string; name: string }) {
      const s = fleet.members.get(a.member)!;
      s.delete('inferencepools', FLEET_NAMESPACE, a.name);
      s.delete('services', FLEET_NAMESPACE, `${a.name}-epp`);
      return true;
    },
    /** Per pool name: how many members hold the InferencePoolImport of that name (the export controller's work). */
    importCounts(a: { names: string[] }) {
      const counts: Record<string, number> = {};
      for (const name of a.names) counts[name] = [...fleet.members.values()].filter((m) => m.get('inferencepoolimports', FLEET_NAMESPACE, name)).length;
      return counts;
    },
    /** How many of the members' pools of these names report Exported True in a status.parents[] entry (the export controller's last write). */
    exportedPools(a: { names: string[] }) {
      let n = 0;
      for (const m of fleet.members.values()) {
        for (const name of a.names) {
          const parents = ((m.get('inferencepools', FLEET_NAMESPACE, name)?.status as { parents?: { conditions?: { type: string; status: string }[] }[] } | undefined)?.parents ?? []);
          if (parents.some((p) => p.conditions?.some((c) => c.type === 'Exported' && c.status === 'True'))) n++;
        }
      }
      return n;
    },
    /** Closes every stand-in and removes the CA and the fleet's files. */
    async close() {
      await fleet.close();
      await epps.close();
      rmSync(fleet.dir, { recursive: true, force: true });
      ca.remove();
      return true;
    },
  },
  { pid: process.pid },
);

