/**
 * Streamed responses, the workload that dominates production: each response is
 * `chunks` SSE events, every one crossing the hop twice (Envoy -> hop -> EPP
 * and back). For every chunk count x concurrency, each set-up is measured back
 * to back (rounds in a rotating order, merged): CPU per event and per response
 * of the hop process (from /proc), event latency and inter-event gap as the
 * generator sees them, events/s and RSS.
 */
import type { BenchOptions } from './lib/args.js';
import { mergeHistograms, summarize } from './lib/hist.js';
import { procUsage, RssSampler } from './lib/proc.js';
import type { RpcClient } from './lib/rpc.js';
import { STREAM_SETUPS, type StreamCell, type StreamComparison, type StreamingResults, type StreamSetup, type StreamWindowResult } from './lib/types.js';

export interface StreamingTargets {
  /** The load generator's RPC (its targets are already connected, named by set-up). */
  readonly gen: RpcClient;
  readonly eppPid: number;
  /** The hop process per set-up (none for direct). */
  readonly proxyPid: Readonly<Record<StreamSetup, number | undefined>>;
}

interface Part {
  readonly w: StreamWindowResult;
  readonly proxyCpuMs: number;
  readonly eppCpuMs: number;
  readonly proxyRss: number;
}

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);
const round = (v: number, digits: number): number => Math.round(v * 10 ** digits) / 10 ** digits;

async function measure(t: StreamingTargets, o: BenchOptions, setup: StreamSetup, chunks: number, concurrency: number): Promise<Part> {
  const args = { target: setup, variant: '2k', close: o.close, concurrency, chunks };
  if (o.warmupMs > 0) await t.gen.call('stream', { ...args, durationMs: o.warmupMs });
  const pid = t.proxyPid[setup];
  const sampler = new RssSampler(pid === undefined ? [t.eppPid] : [pid, t.eppPid]);
  const before = { proxy: pid === undefined ? 0 : procUsage(pid).cpuMs, epp: procUsage(t.eppPid).cpuMs };
  sampler.start();
  const w = await t.gen.call<StreamWindowResult>('stream', { ...args, durationMs: o.streamMeasureMs });
  sampler.stop();
  return {
    w,
    proxyCpuMs: pid === undefined ? 0 : procUsage(pid).cpuMs - before.proxy,
    eppCpuMs: procUsage(t.eppPid).cpuMs - before.epp,
    proxyRss: pid === undefined ? NaN : sampler.peak(pid),
  };
}

export function mergeStreamCell(setup: StreamSetup, chunks: number, concurrency: number, parts: readonly Part[]): StreamCell {
  const sum = (f: (p: Part) => number): number => parts.reduce((a, p) => a + f(p), 0);
  const events = sum((p) => p.w.chunks);
  const responses = sum((p) => p.w.requests);
  const elapsedMs = sum((p) => p.w.elapsedMs);
  const proxyCpu = sum((p) => p.proxyCpuMs);
  const firstError = parts.find((p) => p.w.firstError)?.w.firstError;
  return {
    setup,
    chunks,
    concurrency,
    responses,
    events,
    errors: sum((p) => p.w.errors),
    durationS: round(elapsedMs / 1000, 2),
    eventsPerS: Math.round((events / elapsedMs) * 1000),
    eventLatencyMs: summarize(mergeHistograms(parts.map((p) => p.w.chunkLatency))),
    gapMs: summarize(mergeHistograms(parts.map((p) => p.w.chunkGap))),
    ...(setup === 'direct'
      ? {}
      : {
          proxy: {
            cpuUsPerEvent: events > 0 ? round((proxyCpu * 1000) / events, 1) : NaN,
            cpuMsPerResponse: responses > 0 ? round(proxyCpu / responses, 2) : NaN,
            cpuPct: Math.round((proxyCpu / elapsedMs) * 100),
            rssMaxMb: round(Math.max(...parts.map((p) => p.proxyRss)), 1),
          },
        }),
    eppCpuUsPerEvent: events > 0 ? round((sum((p) => p.eppCpuMs) * 1000) / events, 1) : NaN,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

export function compareStreams(cells: readonly StreamCell[]): StreamComparison[] {
  const out: StreamComparison[] = [];
  const find = (s: StreamSetup, r: StreamCell) => cells.find((c) => c.setup === s && c.chunks === r.chunks && c.concurrency === r.concurrency);
  const ratio = (a: number | undefined, b: number | undefined): number => round((a ?? NaN) / (b ?? NaN), 3);
  const diff = (a: number, b: number): number => round(a - b, 3);
  for (const r of cells.filter((c) => c.setup === 'router')) {
    const floor = find('floor', r);
    const h2 = find('h2floor', r);
    const direct = find('direct', r);
    if (!floor || !h2 || !direct) continue;
    out.push({
      chunks: r.chunks,
      concurrency: r.concurrency,
      cpuOverFloor: ratio(r.proxy?.cpuUsPerEvent, floor.proxy?.cpuUsPerEvent),
      cpuOverH2Floor: ratio(r.proxy?.cpuUsPerEvent, h2.proxy?.cpuUsPerEvent),
      addedGapMs: { p50: diff(r.gapMs.p50, direct.gapMs.p50), p99: diff(r.gapMs.p99, direct.gapMs.p99) },
      h2floorAddedGapMs: { p50: diff(h2.gapMs.p50, direct.gapMs.p50), p99: diff(h2.gapMs.p99, direct.gapMs.p99) },
    });
  }
  return out;
}

export async function runStreaming(t: StreamingTargets, o: BenchOptions): Promise<StreamingResults> {
  const cells: StreamCell[] = [];
  let turn = 0;
  for (const chunks of o.streamChunks) {
    for (const concurrency of o.streamConcurrency) {
      const parts = new Map<StreamSetup, Part[]>(STREAM_SETUPS.map((s) => [s, []]));
      for (let r = 0; r < o.rounds; r++) {
        const shift = turn++ % STREAM_SETUPS.length;
        for (const setup of [...STREAM_SETUPS.slice(shift), ...STREAM_SETUPS.slice(0, shift)]) {
          parts.get(setup)!.push(await measure(t, o, setup, chunks, concurrency));
        }
      }
      for (const setup of STREAM_SETUPS) {
        const cell = mergeStreamCell(setup, chunks, concurrency, parts.get(setup)!);
        cells.push(cell);
        log(
          `stream ${String(chunks).padStart(4)} events c=${String(concurrency).padEnd(3)} ${setup.padEnd(7)} ${String(cell.eventsPerS).padStart(7)} events/s` +
            `  gap p50 ${cell.gapMs.p50} p99 ${cell.gapMs.p99} ms${cell.proxy ? `  hop ${cell.proxy.cpuUsPerEvent} µs CPU/event` : ''}` +
            `${cell.errors ? `  errors ${cell.errors} (${cell.firstError})` : ''}`,
        );
      }
    }
  }
  return { cells, comparisons: compareStreams(cells) };
}
