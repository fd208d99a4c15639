// The data path with live signals, through real sockets: a SignalStore probes the simulated
// EPPs' gRPC health and scrapes fake metrics servers, and every pick reads its view.
import { afterEach, describe, expect, it } from 'vitest';
import { poolMetricsText, startFakeMetricsServer, type FakeMetricsServer } from '../harness/fake-metrics-server.js';
import type { StandinResult } from '../harness/envoy-standin.js';
import { blackHole, buildScenarioSnapshot, jsonBody, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, waitFor, type Scenario } from './scenario.js';

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
  let mA: FakeMetricsServer;
  let mB: FakeMetricsServer;

  async function withMetrics(): Promise<void> {
    mA = await startFakeMetricsServer({ payload: poolMetricsText('pool-a', { readyPods: 2, queueSize: 0, kvCache: 0.1 }) });
    mB = await startFakeMetricsServer({ payload: poolMetricsText('pool-b', { readyPods: 2, queueSize: 50, kvCache: 0.95 }) });
    cleanups.push(() => mA.stop(), () => mB.stop());
    const metrics = (port: number) => ({ port, intervalMs: 100, timeoutMs: 500 });
    sc = await startScenario({
      signals: true,
      clusterA: { epp: { health, metrics: metrics(mA.port) } },
      clusterB: { epp: { health, metrics: metrics(mB.port) } },
    });
  }

  it('a saturated remote pool spills to the local one; both saturated -> weighted spillover; recovered -> back', async () => {
    await withMetrics();
    await waitFor(() => sc!.signals!.view().get(B).saturated === true && sc!.signals!.view().get(A).saturated === false, 3000, () => 'B saturated');
    expect(servedBy(await split(30))).toEqual({ a: 30, b: 0, other: 0 });
    // Draws the plain split would have given the saturated pool count as spillover.
    expect(new Set(sc!.observer.reasons)).toEqual(new Set(['weighted', 'spillover']));

    mA.setPayload(poolMetricsText('pool-a', { readyPods: 2, queueSize: 40, kvCache: 0.5 }));
    await waitFor(() => sc!.signals!.view().get(A).saturated === true, 3000, () => 'A saturated');
    const both = servedBy(await split(30));
    expect(both.a).toBeGreaterThan(0);
    expect(both.b).toBeGreaterThan(0);
    expect(sc!.observer.reasons.slice(-30).every((r) => r === 'spillover')).toBe(true);

    mB.setPayload(poolMetricsText('pool-b', { readyPods: 2, queueSize: 0, kvCache: 0.2 }));
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
    sc = await startScenario({ signals: true, eppConnectTimeoutMs: 1000, clusterA: noMetrics, clusterB: noMetrics });
    await localLatencies(10); // warm up
    const without = p50(await localLatencies(40));

    // cluster-b's EPP (ext_proc and health) now accepts connections and never answers.
    sc.setSnapshot(buildScenarioSnapshot({ eppA: sc.eppA.address, eppB: hole.address, clusterA: noMetrics, clusterB: noMetrics }));
    const stuck = Array.from({ length: 20 }, () => sc!.envoy.run({ authority: 'remote.example', path: '/', body: jsonBody(512) }));
    await sleep(50);
    const withHole = p50(await localLatencies(40));
    const remote = await Promise.all(stuck);
    for (const r of remote) expect(r.status).toBe(503); // FailClose after the connect timeout

    expect(withHole).toBeLessThan(Math.max(3 * without, without + 20));
    // The prober saw the hole (off the request path): the remote pool is marked down.
    await waitFor(() => sc!.signals!.view().get(B).ready === 'not-ready', 3000, () => 'B not ready');
  });
});
