/**
 * The fleet cell: a router (compiled, its own process) taking its members from
 * the ClusterProfiles of a hub stand-in, each member an HTTPS API server
 * stand-in (bench/procs/fleet-apiservers.ts, another process) read with a
 * token the test credential plugin prints. Per fleet size, a fresh router:
 * start to every member's pools in the snapshot, then CPU and RSS at rest; the
 * slope over the sizes is what one more member costs. At the largest size:
 * a new exported pool written to one member, timed until its candidate is in
 * the router's /debug/routes, and pools added and removed at a steady rate
 * (router CPU and RSS during the churn).
 *
 * Every exported pool's EPP is a stand-in of its own (bench/lib/health-farm.ts:
 * an HTTP/2 listener answering gRPC health), probed at start and then every 10
 * minutes, metrics off: the cell measures what members cost the router's
 * control plane plus the one EPP connection per pool a real fleet has.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { GATEWAY, gatewayYaml, routeYaml } from '../test/e2e/clusterset.js';
import type { BenchOptions } from './lib/args.js';
import { FLEET_NAMESPACE, churnPools, churnSchedule, memberName, probePools, quantile, slope, steadyPools } from './lib/fleet-plan.js';
import { PROCS } from './lib/paths.js';
import { type BenchChild, type RouterProcess, RssSampler, forkChild, procUsage, spawnExportController, spawnRouter } from './lib/proc.js';
import { routerMemory } from './lib/router-admin.js';
import type { FleetPoint, FleetResults } from './lib/types.js';

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 1): number => Math.round(n * 10 ** d) / 10 ** d;
const LOCAL = 'local';
/** Churn pools live at once. */
const CHURN_LIVE = 20;

interface RouterWatch {
  readonly router: RouterProcess;
  /** Log arrival time of each snapshot version. */
  readonly builtAt: Map<number, number>;
  snapshots: number;
  lastCandidates: number;
}

async function routes(router: RouterProcess): Promise<{ version: number; candidates: Record<string, unknown> }> {
  return (await (await fetch(`http://${router.admin}/debug/routes`)).json()) as { version: number; candidates: Record<string, unknown> };
}

/** Resolves with the build time of the first snapshot /debug/routes shows with `done(candidates)` true. */
function whenRoutes(w: RouterWatch, done: (candidates: Record<string, unknown>) => boolean, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let checking = false;
    let again = false;
    let finished = false;
    const finish = (err: Error | undefined, at = 0): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      off();
      if (err) reject(err);
      else resolve(at);
    };
    const check = (): void => {
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      routes(w.router)
        .then((r) => {
          if (done(r.candidates)) finish(undefined, w.builtAt.get(r.version) ?? performance.now());
        })
        .catch(() => undefined)
        .finally(() => {
          checking = false;
          if (again && !finished) {
            again = false;
            check();
          }
        });
    };
    const timer = setTimeout(() => finish(new Error(`the router's /debug/routes did not get there within ${timeoutMs} ms`)), timeoutMs);
    const off = w.router.onLog((e) => {
      if (e.msg === 'routing snapshot built') check();
    });
    check();
  });
}

function writeLocal(dir: string, names: readonly string[]): void {
  mkdirSync(join(dir, LOCAL));
  writeFileSync(join(dir, LOCAL, 'gateway.yaml'), gatewayYaml());
  // One route per pool name, to the InferencePoolImport of that name: its candidates are the members exporting it.
  writeFileSync(join(dir, LOCAL, 'routes.yaml'), names.map((n) => routeYaml(n, `${n}.example`, [{ kind: 'InferencePoolImport', name: n }])).join('---\n'));
}

async function startRouter(configFile: string, nodeFlags: readonly string[]): Promise<{ w: RouterWatch; t0: number }> {
  const t0 = performance.now();
  const router = await spawnRouter(configFile, nodeFlags, 180_000);
  const w: RouterWatch = { router, builtAt: new Map(), snapshots: 0, lastCandidates: 0 };
  router.onLog((e, at) => {
    if (e.msg !== 'routing snapshot built' || typeof e.version !== 'number') return;
    w.builtAt.set(e.version, at);
    w.snapshots++;
    if (typeof e.candidates === 'number') w.lastCandidates = e.candidates;
  });
  return { w, t0 };
}

function cpuPct(before: { cpuMs: number }, after: { cpuMs: number }, ms: number): number {
  return round(((after.cpuMs - before.cpuMs) / ms) * 100, 2);
}

export async function runFleet(o: BenchOptions): Promise<FleetResults> {
  const sizes = [...o.fleetMembers].sort((a, b) => a - b);
  const largest = sizes.at(-1)!;
  const pools = o.fleetPools;
  const trials = o.quick ? 3 : 10;
  const restMs = (o.quick ? 1 : 10) * 1000;
  const churnMs = (o.quick ? 2 : 20) * 1000;
  const opsPerS = 5;
  const dir = mkdtempSync(join(tmpdir(), 'mcip-bench-fleet-'));
  const servers: BenchChild = await forkChild('fleet-apiservers', PROCS.fleetApiservers);
  const points: FleetPoint[] = [];
  let visibility: Pick<FleetResults, 'visibility' | 'everywhere'> | undefined;
  let churn: FleetResults['churn'] | undefined;
  try {
    const clusterProfiles = await servers.rpc.call<Record<string, unknown>>('setup', { members: largest, pools });
    writeLocal(dir, [...steadyPools(pools), ...probePools(trials), ...churnPools(CHURN_LIVE)]);
    const config = {
      clusterName: LOCAL,
      mode: 'Endpoint',
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: [GATEWAY],
      clusters: [{ name: LOCAL, manifests: { paths: [LOCAL] } }],
      fleet: {
        clusterProfiles: {
          ...clusterProfiles,
          members: { namespaces: [FLEET_NAMESPACE], eppAnswers: { destinations: { deny: [] } }, epp: { tls: { enabled: false }, health: { intervalMs: 600_000 }, metrics: { enabled: false } } },
        },
      },
      // One export controller replica (no Lease: the local member is read from manifests).
      exportController: { leaderElection: { enabled: false } },
      log: { level: 'info' },
    };
    const configFile = join(dir, 'router.yaml');
    writeFileSync(configFile, stringify(config));
    for (const members of sizes) {
      await servers.rpc.call('publish', { count: members });
      const { w, t0 } = await startRouter(configFile, o.routerNodeArgs);
      let controller: RouterProcess | undefined;
      try {
        const want = members * pools;
        const syncedAt = await whenRoutes(w, (c) => Object.keys(c).length >= want, 120_000);
        // The router at rest first: what its members cost it, before the controller's first writes reach it.
        await sleep(2000);
        const u0 = procUsage(w.router.pid);
        await sleep(restMs);
        const u1 = procUsage(w.router.pid);
        const mem = await routerMemory(w.router);
        const c0 = performance.now();
        controller = await spawnExportController(configFile, o.routerNodeArgs, 180_000);
        await whenImports(servers, steadyPools(pools), members, 120_000);
        await whenExported(servers, steadyPools(pools), members * pools, 180_000);
        const controllerSyncMs = Math.round(performance.now() - c0);
        await sleep(2000);
        const k0 = procUsage(controller.pid);
        await sleep(restMs);
        const k1 = procUsage(controller.pid);
        const point: FleetPoint = {
          members,
          candidates: want,
          startupMs: Math.round(w.router.startupMs),
          syncMs: Math.round(Math.max(syncedAt - t0, w.router.startupMs)),
          rest: { cpuPct: cpuPct(u0, u1, restMs), rssMb: round(u1.rssMb), heapUsedMb: mem.heapUsedMb },
          controller: { syncMs: controllerSyncMs, rest: { cpuPct: cpuPct(k0, k1, restMs), rssMb: round(k1.rssMb) } },
        };
        points.push(point);
        log(`fleet ${members} members (${want} candidates): serving ${point.startupMs} ms, synced ${point.syncMs} ms, at rest CPU ${point.rest.cpuPct}% RSS ${point.rest.rssMb} MiB`);
        log(`fleet ${members} members: export controller synced (every member holds the ${pools} imports) ${controllerSyncMs} ms, at rest CPU ${point.controller.rest.cpuPct}% RSS ${point.controller.rest.rssMb} MiB`);
        if (members === largest) {
          visibility = await timeExports(servers, w, members, trials);
          churn = await measureChurn(servers, w, controller, members, churnMs, opsPerS);
        }
      } finally {
        await Promise.all([w.router.stop(), controller?.stop()]);
      }
    }
    const apiserversRssMb = round(procUsage(servers.pid).rssMb);
    await servers.rpc.call('close');
    return {
      poolsPerMember: pools,
      restS: restMs / 1000,
      points,
      slope: {
        rssMbPerMember: round(slope(points.map((p) => [p.members, p.rest.rssMb])), 3),
        cpuPctPerMember: round(slope(points.map((p) => [p.members, p.rest.cpuPct])), 4),
        controllerRssMbPerMember: round(slope(points.map((p) => [p.members, p.controller.rest.rssMb])), 3),
      },
      visibility: visibility!.visibility,
      everywhere: visibility!.everywhere,
      churn: churn!,
      apiserversRssMb,
    };
  } finally {
    await servers.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Polls the stand-ins every `everyMs` until `done` holds for what `read` returned; resolves with when it did (rejects past `timeoutMs`, with `why`). */
async function pollStandIns<T>(read: () => Promise<T>, done: (v: T) => boolean, everyMs: number, timeoutMs: number, why: (v: T) => string): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await read();
    const at = performance.now();
    if (done(v)) return at;
    if (at > deadline) throw new Error(why(v));
    await sleep(everyMs);
  }
}

/** Resolves once every member holds an InferencePoolImport of each name; with the time it was first seen. */
function whenImports(servers: BenchChild, names: readonly string[], members: number, timeoutMs: number): Promise<number> {
  return pollStandIns(
    () => servers.rpc.call<Record<string, number>>('importCounts', { names }),
    (counts) => names.every((n) => counts[n] === members),
    20,
    timeoutMs,
    (counts) => `the export controller did not create the imports ${names.join(', ')} in all ${members} members within ${timeoutMs} ms: ${JSON.stringify(counts)}`,
  );
}

/** Resolves once `want` of the members' pools of these names report Exported True (the controller's statuses written). */
function whenExported(servers: BenchChild, names: readonly string[], want: number, timeoutMs: number): Promise<number> {
  return pollStandIns(
    () => servers.rpc.call<number>('exportedPools', { names }),
    (n) => n >= want,
    100,
    timeoutMs,
    (n) => `only ${n} of ${want} exported pools report Exported True after ${timeoutMs} ms`,
  );
}

const summary = (members: number, ms: number[]) => ({ members, ms, p50: quantile(ms, 0.5), max: Math.max(...ms) });

/**
 * A new exported pool in one member at a time, timed from the write until its candidate is in
 * the router's /debug/routes, and until the export controller's InferencePoolImport is in every member.
 */
async function timeExports(servers: BenchChild, w: RouterWatch, members: number, trials: number): Promise<Pick<FleetResults, 'visibility' | 'everywhere'>> {
  const router: number[] = [];
  const everywhere: number[] = [];
  for (const [t, name] of probePools(trials).entries()) {
    const member = memberName((t * 13 + 5) % members);
    const id = `${member}/${FLEET_NAMESPACE}/${name}`;
    const t0 = performance.now();
    const seen = whenRoutes(w, (c) => id in c, 60_000);
    await servers.rpc.call('addPool', { member, name });
    const [inRouter, inMembers] = await Promise.all([seen, whenImports(servers, [name], members, 60_000)]);
    router.push(round(inRouter - t0));
    everywhere.push(round(inMembers - t0));
    await sleep(300);
  }
  const out = { visibility: summary(members, router), everywhere: summary(members, everywhere) };
  log(`fleet new export visible in the router (${members} members): p50 ${out.visibility.p50} ms, max ${out.visibility.max} ms over ${trials}`);
  log(`fleet new export imported in every member (${members} members): p50 ${out.everywhere.p50} ms, max ${out.everywhere.max} ms over ${trials}`);
  return out;
}

/** Exported pools added and removed at `opsPerS` writes per second, spread over the members. */
async function measureChurn(servers: BenchChild, w: RouterWatch, controller: RouterProcess, members: number, windowMs: number, opsPerS: number): Promise<FleetResults['churn']> {
  const ops = churnSchedule(members, CHURN_LIVE, Math.round((windowMs / 1000) * opsPerS));
  const sampler = new RssSampler([w.router.pid, controller.pid]);
  const snapshots0 = w.snapshots;
  const r0 = procUsage(w.router.pid);
  const k0 = procUsage(controller.pid);
  const s0 = procUsage(servers.pid);
  sampler.start();
  const t0 = performance.now();
  for (const [i, op] of ops.entries()) {
    const due = t0 + (i * 1000) / opsPerS;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    await servers.rpc.call(op.op === 'add' ? 'addPool' : 'deletePool', { member: op.member, name: op.pool });
  }
  const end = t0 + windowMs;
  if (end > performance.now()) await sleep(end - performance.now());
  const elapsed = performance.now() - t0;
  sampler.stop();
  const r1 = procUsage(w.router.pid);
  const k1 = procUsage(controller.pid);
  const s1 = procUsage(servers.pid);
  const out = {
    members,
    opsPerS,
    windowS: round(elapsed / 1000),
    ops: ops.length,
    cpuPct: cpuPct(r0, r1, elapsed),
    rssMaxMb: round(sampler.peak(w.router.pid)),
    snapshots: w.snapshots - snapshots0,
    controller: { cpuPct: cpuPct(k0, k1, elapsed), rssMaxMb: round(sampler.peak(controller.pid)) },
    apiserversCpuPct: cpuPct(s0, s1, elapsed),
  };
  log(`fleet churn ${opsPerS} pool writes/s over ${members} members: router CPU ${out.cpuPct}%, RSS max ${out.rssMaxMb} MiB, ${out.snapshots} snapshots; export controller CPU ${out.controller.cpuPct}%, RSS max ${out.controller.rssMaxMb} MiB`);
  return out;
}
