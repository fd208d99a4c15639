/**
 * The data-path benchmark: one fast EPP, one floor proxy, two routers
 * (Endpoint and Parent mode, compiled, each its own process) and one load
 * generator, all started once. Each cell (variant x load) is measured for
 * every set-up back to back, `rounds` times in a rotating order, so slow
 * drifts in the machine's background load hit every set-up alike; the rounds
 * are merged. Server CPU and RSS come from /proc around each window.
 */
import type { BenchOptions } from './lib/args.js';
import { compare, mergeCell, type Measured } from './lib/cells.js';
import { PROCS } from './lib/paths.js';
import { cpuProfile, monotonicUs } from './lib/profile.js';
import { forkChild, procUsage, RssSampler, spawnRouter } from './lib/proc.js';
import { routerMemory, waitForSignals } from './lib/router-admin.js';
import { BENCH_POOLS, EPP_PORT_COUNT, EPP_PORT_WEIGHTS, writeTopology, type EppPorts } from './lib/topology.js';
import { runStreaming } from './streaming.js';
import { SETUPS, type Cell, type DataPathResults, type Load, type OpenStreamsResult, type Setup, type Variant, type WindowResult } from './lib/types.js';

export interface DataPathRun {
  readonly results: DataPathResults;
  /** cpuprofile files written by the routers (with --profile), and the load phase's window (monotonic µs). */
  readonly profiles: readonly { process: string; file: string; window?: readonly [number, number] }[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

export async function runDataPath(o: BenchOptions, profileDir: string): Promise<DataPathRun> {
  const started: { stop(): Promise<void> }[] = [];
  const profiles: { process: string; file: string; window?: [number, number] }[] = [];
  const window: [number, number] = [0, 0];
  const profFlags = (name: string): string[] => {
    if (!o.profile) return [];
    const p = cpuProfile(profileDir, name);
    profiles.push(p.profile);
    return p.flags;
  };
  try {
    const epp = await forkChild('fast-epp', PROCS.epp, ['--ports', String(EPP_PORT_COUNT), '--pools', BENCH_POOLS.join(',')]);
    started.push(epp);
    const ports = epp.info as EppPorts;
    // The floors dial the router's upstream set: the same EPP ports in the same shares.
    const upstreams = ['--target', ports.ports.map((p) => `127.0.0.1:${p}`).join(','), '--weights', EPP_PORT_WEIGHTS.join(',')];
    const floor = await forkChild('floor-proxy', PROCS.floor, upstreams, profFlags('floor'));
    started.push(floor);
    const h2floor = await forkChild('h2-floor-proxy', PROCS.h2floor, upstreams, profFlags('h2floor'));
    started.push(h2floor);
    const router = await spawnRouter(writeTopology('Endpoint', ports, o.routerTransport).configFile, [...o.routerNodeArgs, ...profFlags('router-endpoint')]);
    started.push(router);
    const parent = await spawnRouter(writeTopology('Parent', ports, o.routerTransport).configFile, [...o.routerNodeArgs, ...profFlags('router-parent')]);
    started.push(parent);
    const gen = await forkChild('loadgen', PROCS.loadgen);
    started.push(gen);
    const routerSignals = await waitForSignals(router, EPP_PORT_COUNT, 8000);
    const routerIdleRssMb = Math.round(procUsage(router.pid).rssMb * 10) / 10;
    log(`router idle RSS ${routerIdleRssMb} MiB; signals ${JSON.stringify(routerSignals)}`);

    const address: Record<Setup, string> = {
      direct: `127.0.0.1:${ports.ports[0]}`,
      h2floor: String((h2floor.info as { address: string }).address),
      floor: String((floor.info as { address: string }).address),
      router: router.extProc,
      parent: parent.extProc,
    };
    await gen.rpc.call('connect', { targets: address, connections: o.connections, maxRequestsPerConnection: o.maxRequestsPerConnection });
    for (const setup of SETUPS) {
      for (const variant of o.variants) {
        const r = await gen.rpc.call<{ destination: string }>('preflight', { target: setup, variant });
        log(`preflight ${setup} ${variant}: destination ${r.destination}`);
      }
    }

    const proxyPid: Record<Setup, number | undefined> = { direct: undefined, h2floor: h2floor.pid, floor: floor.pid, router: router.pid, parent: parent.pid };
    const measure = async (setup: Setup, variant: Variant, load: Load, close = o.close): Promise<Measured> => {
      const cmd = load.kind === 'closed' ? 'closed' : 'rate';
      const args = { target: setup, variant, close, ...(load.kind === 'closed' ? { concurrency: load.concurrency } : { rps: load.rps }) };
      if (o.warmupMs > 0) await gen.rpc.call(cmd, { ...args, durationMs: o.warmupMs });
      const pid = proxyPid[setup];
      const sampler = new RssSampler(pid === undefined ? [epp.pid] : [pid, epp.pid]);
      const before = { proxy: pid === undefined ? 0 : procUsage(pid).cpuMs, epp: procUsage(epp.pid).cpuMs };
      sampler.start();
      const window = await gen.rpc.call<WindowResult>(cmd, { ...args, durationMs: o.measureMs });
      sampler.stop();
      return {
        window,
        proxyCpuMs: pid === undefined ? 0 : procUsage(pid).cpuMs - before.proxy,
        eppCpuMs: procUsage(epp.pid).cpuMs - before.epp,
        proxyRss: pid === undefined ? NaN : sampler.peak(pid),
        eppRss: sampler.peak(epp.pid),
      };
    };

    const openStreams: OpenStreamsResult[] = [];
    /** Opens `o.openStreams` streams, holds them after the request path, samples RSS, completes them. */
    const holdStreams = async (setups: readonly Setup[], phase: OpenStreamsResult['phase']): Promise<OpenStreamsResult[]> => {
      const out: OpenStreamsResult[] = [];
      for (const setup of setups) {
        const pid = proxyPid[setup] ?? epp.pid;
        const idle = procUsage(pid).rssMb;
        const r = await gen.rpc.call<{ held: number; errors: number; openMs: number; firstError?: string }>('hold', { target: setup, variant: '2k', streams: o.openStreams });
        let heldRss = 0;
        for (let i = 0; i < 5; i++) {
          heldRss = Math.max(heldRss, procUsage(pid).rssMb);
          await sleep(60);
        }
        const eppHeld = procUsage(epp.pid).rssMb;
        await gen.rpc.call('release', {});
        if (r.errors > 0) log(`open streams ${setup}: ${r.errors} of ${o.openStreams} failed (${r.firstError})`);
        out.push({
          streams: r.held,
          setup,
          phase,
          idleRssMb: Math.round(idle * 10) / 10,
          heldRssMb: Math.round(heldRss * 10) / 10,
          perStreamKb: Math.round(((heldRss - idle) * 1024 * 10) / Math.max(1, r.held)) / 10,
          eppHeldRssMb: Math.round(eppHeld * 10) / 10,
          openMs: Math.round(r.openMs),
        });
        log(`open streams (${phase}) ${setup}: ${r.held} held, RSS ${idle.toFixed(1)} -> ${heldRss.toFixed(1)} MiB (opened in ${Math.round(r.openMs)} ms)`);
      }
      return out;
    };
    openStreams.push(...(await holdStreams(['router', 'floor', 'h2floor', 'direct'], 'fresh')));
    if (o.onlyOpenStreams) {
      const routerMemoryAfterLoad = await routerMemory(router);
      log(`router memory after the open streams: ${JSON.stringify(routerMemoryAfterLoad)}`);
      const results: DataPathResults = {
        setups: SETUPS, variants: [], rounds: 0, warmupMs: 0, measureMs: 0, connections: o.connections, maxRequestsPerConnection: o.maxRequestsPerConnection,
        routerNodeArgs: o.routerNodeArgs, rateRps: {}, cells: [], comparisons: [], openStreams, routerIdleRssMb, routerSignals, routerMemoryAfterLoad,
        profiled: o.profile, closeMode: o.close, closeCheck: { mode: o.close === 'reset' ? 'graceful' : 'reset', cells: [] },
      };
      return { results, profiles };
    }

    const cells: Cell[] = [];
    const rateRps: Record<string, number> = {};
    let turn = 0;
    const runCell = async (variant: Variant, load: Load): Promise<void> => {
      const parts = new Map<Setup, Measured[]>(SETUPS.map((s) => [s, []]));
      for (let round = 0; round < o.rounds; round++) {
        const shift = turn++ % SETUPS.length;
        const order = [...SETUPS.slice(shift), ...SETUPS.slice(0, shift)];
        for (const setup of order) parts.get(setup)!.push(await measure(setup, variant, load));
      }
      for (const setup of SETUPS) {
        const cell = mergeCell(setup, variant, load, parts.get(setup)!);
        cells.push(cell);
        const l = cell.latencyMs;
        log(
          `${variant} ${cell.label.padEnd(12)} ${setup.padEnd(6)} ${String(cell.throughput).padStart(8)} req/s  p50 ${l.p50} p99 ${l.p99} p99.9 ${l.p999} ms` +
            `${cell.proxy ? `  proxy ${cell.proxy.cpuMsPerRequest.toFixed(3)} ms CPU/req` : ''}${cell.errors ? `  errors ${cell.errors} (${cell.firstError})` : ''}`,
        );
      }
    };
    window[0] = monotonicUs();
    for (const variant of o.variants) {
      const levels = variant === '2k' ? o.concurrency : o.concurrency64k;
      for (const c of levels) await runCell(variant, { kind: 'closed', concurrency: c });
      const floorCells = cells.filter((c) => c.setup === 'floor' && c.variant === variant);
      const base = floorCells.find((c) => c.load.kind === 'closed' && c.load.concurrency === 64) ?? floorCells.sort((a, b) => b.throughput - a.throughput)[0];
      const rps = o.rate > 0 ? o.rate : Math.max(10, Math.round(((base?.throughput ?? 200) * 0.5) / 10) * 10);
      rateRps[variant] = rps;
      await runCell(variant, { kind: 'rate', rps });
    }

    const streaming = o.streamChunks.length > 0 ? await runStreaming({ gen: gen.rpc, eppPid: epp.pid, proxyPid }, o) : undefined;

    window[1] = monotonicUs();
    for (const p of profiles) p.window = window;

    // The same 16-stream cell with the other close mode, every set-up once.
    const otherClose = o.close === 'reset' ? 'graceful' : 'reset';
    const closeCells: Cell[] = [];
    const checkLoad: Load = { kind: 'closed', concurrency: 16 };
    for (const setup of SETUPS) {
      const cell = mergeCell(setup, '2k', checkLoad, [await measure(setup, '2k', checkLoad, otherClose)]);
      closeCells.push(cell);
      log(`close=${otherClose} 2k c=16 ${setup.padEnd(6)} ${cell.throughput} req/s p50 ${cell.latencyMs.p50} ms errors ${cell.errors}${cell.firstError ? ` (${cell.firstError})` : ''}`);
    }

    openStreams.push(...(await holdStreams(['router'], 'after-load')));
    const routerMemoryAfterLoad = await routerMemory(router);
    log(`router memory after load: ${JSON.stringify(routerMemoryAfterLoad)}`);
    const generatorConnections = await gen.rpc.call<DataPathResults['generatorConnections']>('stats');
    log(`generator connections opened (max ${o.maxRequestsPerConnection || 'unlimited'} streams each): ${JSON.stringify(generatorConnections)}`);

    return {
      results: {
        setups: SETUPS,
        variants: o.variants,
        rounds: o.rounds,
        warmupMs: o.warmupMs,
        measureMs: o.measureMs,
        connections: o.connections,
        maxRequestsPerConnection: o.maxRequestsPerConnection,
        generatorConnections,
        routerNodeArgs: o.routerNodeArgs,
        rateRps,
        cells,
        comparisons: compare(cells),
        openStreams,
        routerIdleRssMb,
        routerSignals,
        routerMemoryAfterLoad,
        profiled: o.profile,
        ...(streaming ? { streaming } : {}),
        closeMode: o.close,
        closeCheck: { mode: otherClose, cells: closeCells },
      },
      profiles,
    };
  } finally {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  }
}
