/**
 * Keeps the benchmark harness from rotting: runs `bench/run.ts --quick` end to
 * end with tiny durations (real processes: fast EPP, floor proxies, two routers
 * from dist/ and a third for the Endpoint Picker role cell, load generator,
 * control-plane runner) and checks the results
 * file has every set-up and metric with sane values. No timing assertions:
 * CI machines are small and shared.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLabel, PICKER_SETUPS, SETUPS, STREAM_SETUPS, type BenchResults, type Cell, type LatencySummary } from '../../bench/lib/types.js';
import { ROOT } from '../../bench/lib/paths.js';
import { routerMaxRequestsPerConnection } from '../envoy/config-fixtures.js';

const OPEN_STREAMS = 40;
const ROUTE_SIZES = [10, 40];
const STREAM_EVENTS = 32;

let out: string;
let results: BenchResults;
let stdout: string;

beforeAll(() => {
  out = mkdtempSync(join(tmpdir(), 'mcip-bench-smoke-'));
  const run = spawnSync(
    process.execPath,
    [
      '--import', 'tsx', join(ROOT, 'bench/run.ts'),
      // Rebuilds dist/ first when src/ is newer (tolerating type errors from work in progress).
      '--quick', '--profile', '--out', out,
      '--warmup-ms', '20', '--measure-ms', '120',
      '--open-streams', String(OPEN_STREAMS),
      '--routes', ROUTE_SIZES.join(','), '--reload-routes', '10',
      '--stream-chunks', String(STREAM_EVENTS), '--stream-concurrency', '1,4', '--stream-measure-ms', '250',
      // The fleet cell has its own end-to-end run (only-fleet.test.ts).
      '--skip-fleet',
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 110_000 },
  );
  stdout = run.stdout;
  if (run.status !== 0) throw new Error(`bench exited with ${run.status}\n${run.stderr.slice(-3000)}`);
  const file = readdirSync(out).find((f) => f.endsWith('-quick.json'));
  if (!file) throw new Error(`no results file in ${out}`);
  results = JSON.parse(readFileSync(join(out, file), 'utf8')) as BenchResults;
}, 120_000);

afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

const positive = (v: number): void => {
  expect(Number.isFinite(v), String(v)).toBe(true);
  expect(v).toBeGreaterThan(0);
};
const nonNegative = (v: number): void => {
  expect(Number.isFinite(v), String(v)).toBe(true);
  expect(v).toBeGreaterThanOrEqual(0);
};

function saneLatency(l: LatencySummary): void {
  for (const v of [l.p50, l.p90, l.p99, l.p999, l.max, l.mean]) positive(v);
  expect(l.p50).toBeLessThanOrEqual(l.p90);
  expect(l.p90).toBeLessThanOrEqual(l.p99);
  expect(l.p99).toBeLessThanOrEqual(l.p999);
  expect(l.p999).toBeLessThanOrEqual(l.max);
}

describe('npm run bench -- --quick', () => {
  it('measures every set-up at every load, with latency, throughput, CPU and RSS', () => {
    const dp = results.dataPath;
    expect([...dp.setups]).toEqual([...SETUPS]);
    const labels2k = [...dp.cells.filter((c) => c.variant === '2k' && c.setup === 'router').map((c) => c.label)];
    expect(labels2k).toEqual(['c=1', 'c=16', 'c=64', 'c=256', loadLabel({ kind: 'rate', rps: dp.rateRps['2k']! })]);
    positive(dp.rateRps['2k']!);
    for (const setup of SETUPS) {
      for (const variant of ['2k', '64k'] as const) {
        const cells = dp.cells.filter((c) => c.setup === setup && c.variant === variant);
        expect(cells.length, `${setup} ${variant}`).toBeGreaterThanOrEqual(variant === '2k' ? 5 : 2);
        for (const c of cells) checkCell(c);
      }
      // CPU is sampled in 10 ms ticks: one tiny window may read 0, the set-up as a whole may not.
      const cpu = dp.cells.filter((c) => c.setup === setup).reduce((a, c) => a + (c.proxy?.cpuMs ?? c.epp?.cpuMs ?? 0), 0);
      positive(cpu);
    }
  });

  it('compares router with floor and direct, and checks the other close mode', () => {
    const dp = results.dataPath;
    for (const label of ['c=1', 'c=16', 'c=64', 'c=256']) {
      const cmp = dp.comparisons.find((c) => c.variant === '2k' && c.label === label);
      expect(cmp, label).toBeDefined();
      positive(cmp!.routerOverFloor.p50);
      positive(cmp!.routerOverFloor.throughput);
      positive(cmp!.parentOverFloor.p50);
      for (const v of [cmp!.routerMinusDirect.p50, cmp!.routerMinusDirect.p90, cmp!.routerMinusDirect.p99]) expect(Number.isFinite(v)).toBe(true);
      // The raw node:http2 relay is measured in the same cells.
      for (const v of [cmp!.h2floorMinusDirect!.p50, cmp!.h2floorMinusDirect!.p99]) expect(Number.isFinite(v)).toBe(true);
      positive(cmp!.cpuOverH2Floor!);
    }
    expect(dp.closeCheck.mode).not.toBe(dp.closeMode);
    expect(dp.closeCheck.cells.map((c) => c.setup)).toEqual([...SETUPS]);
    positive(dp.routerIdleRssMb);
    expect(Object.keys(dp.routerSignals)).toHaveLength(4);
    // The generator rotates its connections as Envoy does (envoy/envoy.yaml's mcip_router cluster).
    expect(dp.closeMode).toBe('reset');
    expect(dp.maxRequestsPerConnection).toBe(routerMaxRequestsPerConnection());
    expect(Object.keys(dp.generatorConnections ?? {})).toEqual([...SETUPS]);
    for (const c of Object.values(dp.generatorConnections ?? {})) expect(c.opened).toBeGreaterThanOrEqual(dp.connections);
  });

  it('streams SSE responses through every relaying set-up: events, gaps, CPU per event, no errors', () => {
    const st = results.dataPath.streaming!;
    expect(st).toBeDefined();
    expect(st.cells.map((c) => `${c.concurrency}:${c.setup}`)).toEqual(['1', '4'].flatMap((c) => STREAM_SETUPS.map((s) => `${c}:${s}`)));
    for (const c of st.cells) {
      const what = `${c.setup} c=${c.concurrency}`;
      expect(c.chunks).toBe(STREAM_EVENTS);
      expect(c.errors, `${what}: ${c.firstError ?? ''}`).toBe(0);
      // Whole responses are whole multiples of their events; events of an unfinished response count too.
      expect(c.responses, what).toBeGreaterThan(0);
      expect(c.events, what).toBeGreaterThanOrEqual(c.responses * STREAM_EVENTS);
      positive(c.eventsPerS);
      saneLatency(c.eventLatencyMs);
      saneLatency(c.gapMs);
      if (c.setup === 'direct') expect(c.proxy).toBeUndefined();
      else {
        nonNegative(c.proxy!.cpuUsPerEvent);
        positive(c.proxy!.rssMaxMb);
      }
    }
    // CPU is sampled in 10 ms ticks: a tiny window may read 0, the router over both cells may not.
    positive(st.cells.filter((c) => c.setup === 'router').reduce((a, c) => a + c.proxy!.cpuUsPerEvent, 0));
    expect(st.comparisons.map((c) => c.concurrency)).toEqual([1, 4]);
    for (const c of st.comparisons) for (const v of [c.addedGapMs.p50, c.addedGapMs.p99, c.h2floorAddedGapMs.p99]) expect(Number.isFinite(v)).toBe(true);
  });

  it('holds concurrent open streams and reports RSS', () => {
    const open = results.dataPath.openStreams;
    expect(open.filter((o) => o.phase === 'fresh').map((o) => o.setup)).toEqual(['router', 'floor', 'h2floor', 'direct']);
    expect(open.filter((o) => o.phase === 'after-load').map((o) => o.setup)).toEqual(['router']);
    for (const o of open) {
      expect(o.streams).toBe(OPEN_STREAMS);
      positive(o.idleRssMb);
      positive(o.heldRssMb);
      positive(o.eppHeldRssMb);
      expect(Number.isFinite(o.perStreamKb)).toBe(true);
    }
  });

  it('measures the control plane: build, memory, change-to-serving, picker, reload', () => {
    const cp = results.controlPlane;
    expect(cp.build.map((b) => b.routes)).toEqual(ROUTE_SIZES);
    for (const b of cp.build) {
      expect(b.clusters).toBe(20);
      expect(b.pools + b.imports).toBe(b.routes * 10);
      positive(b.candidates);
      positive(b.buildMs.median);
      expect(b.buildMs.min).toBeLessThanOrEqual(b.buildMs.max);
      expect(Number.isFinite(b.snapshotHeapMb)).toBe(true);
      positive(b.changeToServingMs.median);
      positive(b.matchNs);
    }
    expect([...new Set(cp.picker.map((p) => p.candidates))]).toEqual([2, 10, 100]);
    for (const p of cp.picker) positive(p.nsPerPick);
    expect(cp.reload).toHaveLength(1);
    positive(cp.reload[0]!.startupMs);
    positive(cp.reload[0]!.reloadMs.median);
    positive(cp.reload[0]!.routerRssMb);
  });

  it('profiles both routers, both floor proxies and the control plane with --profile (the main thread, load phase)', () => {
    const byProcess = new Map(results.profiles.map((p) => [p.process.replace(/, load phase only$/, ''), p]));
    expect([...byProcess.keys()]).toEqual(expect.arrayContaining(['router-endpoint', 'router-parent', 'floor', 'h2floor']));
    expect([...byProcess.keys()].some((k) => k.startsWith('control plane'))).toBe(true);
    for (const [name, p] of byProcess) {
      positive(p.totalMs);
      expect(p.categories.length, name).toBeGreaterThan(1);
    }
    expect(byProcess.get('router-endpoint')!.topRouter.length).toBeGreaterThan(0);
    // The floor's main thread (it runs grpc-js), not tsx's loader thread, which writes an idle profile too.
    expect(byProcess.get('floor')!.categories.map((c) => c.name)).toContain('grpc-js');
    expect(byProcess.get('h2floor')!.categories.map((c) => c.name)).not.toContain('grpc-js');
  });

  it('measures the Endpoint Picker role: own-Envoy path, direct and relay picker answers on one router, compared', () => {
    const pr = results.pickerRole!;
    expect(pr.cells.map((c) => [c.setup, c.label])).toEqual(PICKER_SETUPS.map((s) => [s, 'c=16']));
    for (const c of pr.cells) checkCell(c);
    positive(pr.cells.reduce((a, c) => a + c.proxy!.cpuMs, 0));
    const cmp = pr.comparisons.find((c) => c.label === 'c=16')!;
    for (const v of [cmp.directOverEnvoyCpu, cmp.relayOverDirectCpu, cmp.relayMinusDirectCpuMs, cmp.relayMinusDirect.p50]) expect(Number.isFinite(v)).toBe(true);
    expect(results.budget.filter((b) => b.item.startsWith('Endpoint Picker role')).length).toBe(3);
  });

  it('checks the budget and writes the summary and charts', () => {
    const items = results.budget.map((b) => b.item);
    expect(items.some((i) => i.includes('router p50 / floor p50') && i.includes('16 streams'))).toBe(true);
    expect(items.some((i) => i.includes('added latency over direct (p99)'))).toBe(true);
    expect(items.some((i) => i.includes('RSS'))).toBe(true);
    expect(items.some((i) => i.includes('snapshot rebuild'))).toBe(true);
    expect(items.some((i) => i.includes('picker'))).toBe(true);
    expect(items.some((i) => i.includes('router CPU per exchange / floor CPU per exchange'))).toBe(true);
    expect(items.some((i) => i.includes('streamed responses included'))).toBe(true);
    for (const b of results.budget) expect(typeof b.pass).toBe('boolean');
    expect(stdout).toMatch(/^(PASS|MISS) {2}router p50 \/ floor p50/m);
    const files = readdirSync(out);
    for (const suffix of ['-quick.md', '-quick.svg', '-quick-control-plane.svg']) expect(files.some((f) => f.endsWith(suffix)), suffix).toBe(true);
    const svg = readFileSync(join(out, files.find((f) => f.endsWith('-quick.svg'))!), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(results.meta.quick).toBe(true);
    const md = readFileSync(join(out, files.find((f) => f.endsWith('-quick.md'))!), 'utf8');
    expect(md).toContain('### Streamed responses');
    expect(md).toContain('## Endpoint Picker role');
    expect(svg).toContain(`streamed, ${STREAM_EVENTS} events/response: hop CPU`);
  });
});

function checkCell(c: Cell<string>): void {
  const what = `${c.setup} ${c.variant} ${c.label}`;
  expect(c.requests, what).toBeGreaterThan(0);
  // Every set-up (the raw HTTP/2 relay included) completes every exchange it starts.
  expect(c.errors, `${what}: ${c.firstError ?? ''}`).toBe(0);
  positive(c.throughput);
  positive(c.durationS);
  saneLatency(c.latencyMs);
  expect(c.histogram.length).toBeGreaterThan(0);
  nonNegative(c.generatorCpuPct);
  if (c.setup === 'direct') expect(c.proxy).toBeUndefined();
  else {
    nonNegative(c.proxy!.cpuMs);
    nonNegative(c.proxy!.cpuMsPerRequest);
    positive(c.proxy!.rssMaxMb);
  }
  if (c.setup !== 'parent') positive(c.epp!.rssMaxMb);
}
