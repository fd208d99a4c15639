/** The fleet cell in a summary: members from ClusterProfiles, what each costs, new exports and churn. */
import type { FleetResults } from '../lib/types.js';
import { n, table } from './tables.js';

export function fleetSection(f: FleetResults): string[] {
  const v = f.visibility;
  const c = f.churn;
  return [
    '## Fleet: members from ClusterProfiles',
    '',
    `A hub API-server stand-in publishes one ClusterProfile per member (namespace fleet-system, access provider secretreader); every member is an HTTPS ` +
      `API-server stand-in of its own, accepting only its own bearer token, holding ${f.poolsPerMember} InferencePools exported to the ClusterSet, each with its EPP Service. ` +
      'All stand-ins run in one process, the router (compiled, own process) in another; the router reads the profiles and runs the provider file\'s test ' +
      'credential plugin (as cluster-inventory-api\'s secretreader does) once per member for its token. Its local member (manifests) routes one HTTPRoute per pool name ' +
      'to the InferencePoolImport of that name, so every exported pool of every member is a candidate. Every pool\'s EPP is a stand-in of its own ' +
      '(an HTTP/2 listener answering gRPC health SERVING): the router connects to each and probes it at start (then every 10 min; metrics off), so the memory ' +
      'includes one EPP connection per pool, as a real fleet has. Each size is a fresh router; "synced" is process start to the first ' +
      `snapshot with every member's pools in /debug/routes; "at rest" is CPU over ${f.restS} s with nothing changing, 2 s after sync. ` +
      'Beside each router, once it synced and was measured at rest, the export controller (compiled, `--export-controller`, its own process, one replica without a Lease) takes the same ' +
      'members from the same profiles with the same plugin and writes the InferencePoolImports into every member; "controller synced" is its start to every member ' +
      'holding every steady import and every exported pool reporting Exported True (its statuses written), then it is measured at rest the same way.',
    '',
    table(
      ['members', 'candidates', 'router serving ms', 'synced ms', 'CPU at rest %', 'RSS at rest MiB', 'V8 heap used MiB', 'controller synced ms', 'controller CPU at rest %', 'controller RSS MiB'],
      f.points.map((p) => [
        p.members,
        p.candidates,
        p.startupMs,
        p.syncMs,
        n(p.rest.cpuPct),
        n(p.rest.rssMb, 1),
        n(p.rest.heapUsedMb, 1),
        p.controller.syncMs,
        n(p.controller.rest.cpuPct),
        n(p.controller.rest.rssMb, 1),
      ]),
    ),
    '',
    `One more member (least-squares slope over ${f.points.map((p) => p.members).join(', ')} members): RSS ${n(f.slope.rssMbPerMember, 2)} MiB ` +
      `(${n(f.slope.rssMbPerMember * 1.048576, 2)} MB), CPU at rest ${n(f.slope.cpuPctPerMember, 3)}% of a core; the export controller's RSS ${n(f.slope.controllerRssMbPerMember, 2)} MiB.`,
    '',
    `New export at ${v.members} members (an exported pool and its EPP Service written to one member; timed from the write to the build of the first snapshot ` +
      `whose /debug/routes holds the candidate, the router's default watch coalescing included): p50 ${n(v.p50, 0)} ms, worst ${n(v.max, 0)} ms of ${v.ms.length} ` +
      `(${v.ms.map((x) => n(x, 0)).join(', ')} ms).`,
    '',
    `The same writes until the export controller's InferencePoolImport of the pool is in every one of the ${f.everywhere.members} members (its watch of the ` +
      `exporting member, then one create per member; polled every 20 ms): p50 ${n(f.everywhere.p50, 0)} ms, worst ${n(f.everywhere.max, 0)} ms ` +
      `(${f.everywhere.ms.map((x) => n(x, 0)).join(', ')} ms).`,
    '',
    `Churn at ${c.members} members: ${c.opsPerS} pool writes per second (an exported pool added to one member, or, with 20 churn pools live, the oldest removed), ` +
      `${c.ops} writes over ${n(c.windowS, 1)} s: router CPU ${n(c.cpuPct, 1)}% of a core, RSS peak ${n(c.rssMaxMb, 1)} MiB, ${c.snapshots} snapshots built; ` +
      `the export controller ${n(c.controller.cpuPct, 1)}% (RSS peak ${n(c.controller.rssMaxMb, 1)} MiB); ` +
      `the API-server stand-ins ${n(c.apiserversCpuPct, 1)}% (RSS ${n(f.apiserversRssMb, 0)} MiB at the end).`,
    '',
  ];
}

