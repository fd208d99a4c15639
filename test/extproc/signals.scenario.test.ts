// The data path with live signals, through real sockets: a SignalStore probes the simulated
// EPPs' gRPC health and scrapes their metrics, and every pick reads its view. Where it
// matters the EPPs behave like stock llm-d EPPs: no Health on the ext_proc port, pool metrics
// only under llm_d_epp_*, /metrics behind a bearer token.
import { afterEach, describe, expect, it } from 'vitest';
import type { StandinResult } from '../harness/envoy-standin.js';
import type { StockEppOptions } from '../harness/simulated-epp.js';
import { blackHole, buildScenarioSnapshot, jsonBody, scenarioConfig, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, waitFor, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
  for (const c of cleanups.splice(0)) await c();
});

const EXT_PROC = 'envoy.service.ext_proc.v3.ExternalProcessor';
const A = 'cluster-a/example/pool-a';
const B = 'cluster-b/example/pool-b';
const PROBE_MS = 150;
const health = { intervalMs: PROBE_MS, timeoutMs: 100, healthyThreshold: 1, unhealthyThreshold: 2 };
const noMetrics = { epp: { health, metrics: { enabled: false } } };

async function split(n: number): Promise<StandinResult[]> {
  const out: StandinResult[] = [];
  for (let i = 0; i < n; i++) out.push(await sc!.envoy.run({ authority: 'split.example', path: '/v1/completions', body: jsonBody(512) }));
  return out;
}

function servedBy(results: StandinResult[]): { a: number; b: number; other: number } {
  const c = { a: 0, b: 0, other: 0 };
  for (const r of results) {
    if (POOL_A_ENDPOINTS.includes(r.destination ?? '')) c.a++;
    else if (POOL_B_ENDPOINTS.includes(r.destination ?? '')) c.b++;
    else c.other++;
  }
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A stock llm-d EPP for `pool`, its /metrics protected by a token the scenario scrapes with. */
const stock = (pool: string, more: StockEppOptions = {}) => ({ stock: { pool, metricsTokens: [`token-${pool}`], ...more } });
/** Health probed where the router probes by default (the ext_proc port), metrics scraped fast. */
const stockSignals = { epp: { health, metrics: { intervalMs: 100, timeoutMs: 500 } } };

describe('stock llm-d EPPs (no Health service on the ext_proc port)', () => {
  it('a stock pool beside a pool with health gets its half of a 50/50 split', async () => {
    sc = await startScenario({ signals: true, eppB: stock('pool-b'), clusterA: noMetrics, clusterB: stockSignals });
    await waitFor(() => sc!.signals!.view().get(A).ready === 'ready' && sc!.signals!.view().get(B).ready === 'ready', 3000, () => JSON.stringify(sc!.signals!.view().get(B)));
    expect(sc.signals!.view().get(B)).toMatchObject({ source: 'epp-metrics', readyPods: 1 });
    const served = servedBy(await split(60));
    expect(served.other).toBe(0);
    expect(served.b).toBeGreaterThanOrEqual(15); // ~30 of 60 with the seeded draws
    expect(served.a).toBeGreaterThanOrEqual(15);
    expect(sc.observer.failovers).toEqual([]);
  });

  it('an all-stock ClusterSet routes by weight, never in panic; 0 ready endpoints still take a pool out', async () => {
    sc = await startScenario({ signals: true, eppA: stock('pool-a'), eppB: stock('pool-b'), clusterA: stockSignals, clusterB: stockSignals });
    await waitFor(() => sc!.signals!.view().get(A).ready === 'ready' && sc!.signals!.view().get(B).ready === 'ready', 3000, () => 'both ready from metrics');
    await sleep(4 * PROBE_MS); // several UNIMPLEMENTED health answers later
    const served = servedBy(await split(40));
    expect(served.a).toBeGreaterThan(0);
    expect(served.b).toBeGreaterThan(0);
    expect(new Set(sc.observer.reasons)).toEqual(new Set(['weighted']));
    const targets = sc.signals!.targets().filter((t) => t.kind === 'epp-health');
    expect(targets.map((t) => t.state)).toEqual([expect.objectContaining({ status: 'unsupported', code: 'UNIMPLEMENTED' }), expect.objectContaining({ status: 'unsupported', code: 'UNIMPLEMENTED' })]);
    expect(sc.eppA.metricsUnauthorized + sc.eppB.metricsUnauthorized).toBe(0);

    sc.eppB.setPoolMetrics({ readyPods: 0 });
    await waitFor(() => sc!.signals!.view().get(B).ready === 'not-ready', 3000, () => 'B not ready');
    expect(servedBy(await split(20))).toEqual({ a: 20, b: 0, other: 0 });
  });

  it("probing a stock EPP's health port for \"readiness\": a follower (not the leader) loses its traffic", async () => {
    sc = await startScenario({ signals: true, eppB: stock('pool-b'), clusterA: noMetrics, clusterB: stockSignals });
    const healthPort = Number(sc.eppB.healthAddress.split(':')[1]);
    const on9003 = { epp: { health: { ...health, port: healthPort, service: 'readiness' }, metrics: { enabled: false } } };
    // Same routes and EPPs; only the signals config changes (health on 9003).
    const input = { eppA: sc.eppA.address, eppB: sc.eppB.address, clusterA: noMetrics, clusterB: on9003 };
    sc.signals!.update(buildScenarioSnapshot(input), scenarioConfig(input));
    await waitFor(() => sc!.signals!.view().get(B).source === 'epp-health' && sc!.signals!.view().get(B).ready === 'ready', 3000, () => 'B ready by health');
    sc.eppB.setLeader(false);
    await waitFor(() => sc!.signals!.view().get(B).ready === 'not-ready', 3000, () => 'B not ready');
    expect(servedBy(await split(20))).toEqual({ a: 20, b: 0, other: 0 });
  });
});

describe('readiness', () => {
  it('a pool going NOT_SERVING loses its traffic within 2 probe intervals, and gets it back after recovery', async () => {
    sc = await startScenario({ signals: true, clusterA: noMetrics, clusterB: noMetrics });
    await waitFor(() => sc!.signals!.view().get(A).ready === 'ready' && sc!.signals!.view().get(B).ready === 'ready', 3000, () => 'both ready');
    const before = servedBy(await split(30));
    expect(before.a).toBeGreaterThan(0);
    expect(before.b).toBeGreaterThan(0);

    sc.eppA.setHealth(EXT_PROC, 'NOT_SERVING');
    await sleep(2 * PROBE_MS + 100); // two probe intervals (+ scheduling slack on a busy machine)
    expect(sc.signals!.view().get(A).ready).toBe('not-ready');
    const during = servedBy(await split(30));
    expect(during).toEqual({ a: 0, b: 30, other: 0 });
    expect(sc.observer.failovers).toEqual([]); // moved by the picker, not by failed attempts

    sc.eppA.setHealth(EXT_PROC, 'SERVING');
    await sleep(2 * PROBE_MS + 100);
    const after = servedBy(await split(30));
    expect(after.a).toBeGreaterThan(0);
    expect(after.other).toBe(0);
  });

  it('passive outcomes eject a failing pool: after the ejection, no attempt goes to it', async () => {
    sc = await startScenario({ signals: true, clusterA: { epp: { health: { ...health, intervalMs: 60_000 }, metrics: { enabled: false } } }, clusterB: noMetrics });
    await sc.eppA.kill();
    const results = await split(30);
    expect(servedBy(results)).toEqual({ a: 0, b: 30, other: 0 });
    // The default outlier settings eject after 5 consecutive failures; later requests skip pool-a.
    expect(sc.signals!.view().get(A).ejected).toBe(true);
    const failovers = sc.observer.failovers.length;
    expect(failovers).toBeGreaterThanOrEqual(5);
    await split(10);
    expect(sc.observer.failovers.length).toBe(failovers);
  });
});

describe('saturation', () => {
  async function withStockMetrics(): Promise<void> {
    const a = stock('pool-a', { metrics: { readyPods: 2, queueSize: 0, kvCache: 0.1 } });
    const b = stock('pool-b', { metrics: { readyPods: 2, queueSize: 50, kvCache: 0.95 } });
    sc = await startScenario({ signals: true, eppA: a, eppB: b, clusterA: stockSignals, clusterB: stockSignals });
  }

  it('EPPs exporting only llm_d_epp_*: a saturated remote pool spills to the local one; both saturated -> weighted spillover; recovered -> back', async () => {
    await withStockMetrics();
    await waitFor(() => sc!.signals!.view().get(B).saturated === true && sc!.signals!.view().get(A).saturated === false, 3000, () => 'B saturated');
    expect(servedBy(await split(30))).toEqual({ a: 30, b: 0, other: 0 });
    // Draws the plain split would have given the saturated pool count as spillover.
    expect(new Set(sc!.observer.reasons)).toEqual(new Set(['weighted', 'spillover']));

    sc!.eppA.setPoolMetrics({ readyPods: 2, queueSize: 40, kvCache: 0.5 });
    await waitFor(() => sc!.signals!.view().get(A).saturated === true, 3000, () => 'A saturated');
    const both = servedBy(await split(30));
    expect(both.a).toBeGreaterThan(0);
    expect(both.b).toBeGreaterThan(0);
    expect(sc!.observer.reasons.slice(-30).every((r) => r === 'spillover')).toBe(true);

    sc!.eppB.setPoolMetrics({ readyPods: 2, queueSize: 0, kvCache: 0.2 });
    await waitFor(() => sc!.signals!.view().get(B).saturated === false, 3000, () => 'B recovered');
    expect(servedBy(await split(20))).toEqual({ a: 0, b: 20, other: 0 });
  });
});

describe('a black-holed member cluster', () => {
  function p50(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)]!;
  }

  async function localLatencies(n: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const r = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', body: jsonBody(2048) });
      out.push(performance.now() - t);
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
    }
    return out;
  }

  it('requests to other pools keep their latency (p50 with and without)', async () => {
    const hole = await blackHole();
    cleanups.push(() => hole.close());
    // The stuck requests below end at the per-attempt timeout: long enough to outlast the measurement.
    sc = await startScenario({ signals: true, eppConnectTimeoutMs: 1000, attemptTimeoutMs: 3000, clusterA: noMetrics, clusterB: noMetrics });
    await localLatencies(10); // warm up
    const without = p50(await localLatencies(40));

    // cluster-b's EPP (ext_proc and health) now accepts connections and never answers.
    sc.setSnapshot(buildScenarioSnapshot({ eppA: sc.eppA.address, eppB: hole.address, clusterA: noMetrics, clusterB: noMetrics }));
    const stuck = Array.from({ length: 20 }, () => sc!.envoy.run({ authority: 'remote.example', path: '/', body: jsonBody(512) }));
    let stuckEnded = false;
    const ended = (): void => void (stuckEnded = true);
    void Promise.all(stuck).then(ended, ended); // a failure is reported by the await below
    await sleep(50);
    const withHole = p50(await localLatencies(40));
    expect(stuckEnded, 'the local requests were measured while the remote ones were stuck').toBe(false);
    const remote = await Promise.all(stuck);
    for (const r of remote) expect(r.status).toBe(503); // FailClose after the attempt timeout (the hole accepts the connection)

    expect(withHole).toBeLessThan(Math.max(3 * without, without + 20));
    // The prober saw the hole (off the request path): the remote pool is marked down.
    await waitFor(() => sc!.signals!.view().get(B).ready === 'not-ready', 3000, () => 'B not ready');
  });
});
