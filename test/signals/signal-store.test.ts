import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SignalStore, type SignalStoreOptions } from '../../src/signals/signal-store.js';
import { poolMetricsText, startFakeMetricsServer, type FakeMetricsServer } from '../harness/fake-metrics-server.js';
import { startSimulatedEpp, type SimulatedEpp } from '../harness/simulated-epp.js';
import { processClock, timeWork, withinProcessMs } from '../helpers/work-time.js';
import { startBlackHole } from './black-hole.js';
import { eppTarget, fakeClock, memoryLogger, parentTarget, signalsConfig, snapshotOf, viaEpp, viaParent } from './fixtures.js';

/**
 * After a scraper stopped: no request reaches `server` any more. A request already on the wire when it
 * stopped may still land (the server counts it on a later turn, later still on a loaded machine), so
 * the count is taken once that had time to happen, then held for six scrape intervals (50 ms).
 */
async function expectNoMoreRequests(server: { readonly requests: number }): Promise<void> {
  await new Promise((r) => setTimeout(r, 100));
  const n = server.requests;
  await new Promise((r) => setTimeout(r, 300));
  expect(server.requests).toBe(n);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function epp(): Promise<SimulatedEpp> {
  const e = await startSimulatedEpp({ endpoints: ['10.0.0.1:8000'] });
  cleanups.push(() => e.stop());
  return e;
}
async function metricsServer(payload = ''): Promise<FakeMetricsServer> {
  const s = await startFakeMetricsServer({ payload });
  cleanups.push(() => s.stop());
  return s;
}
async function blackHole() {
  const h = await startBlackHole();
  cleanups.push(() => h.stop());
  return h;
}
async function tcpListener(): Promise<{ server: Server; address: string }> {
  const server = createServer((s) => s.destroy());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}
function store(opts: SignalStoreOptions): SignalStore {
  const s = new SignalStore({ evaluateIntervalMs: 50, viewMaxAgeMs: 20, ...opts });
  cleanups.push(() => s.stop());
  return s;
}

describe('SignalStore', () => {
  it('one prober and one scraper per distinct EPP, shared by every pool and route; series picked per pool', async () => {
    const a = await epp();
    const b = await epp();
    const noComments = (t: string) => t.replace(/^#.*\n/gm, ''); // one TYPE line per metric, as Prometheus requires
    const m = await metricsServer(poolMetricsText('p1', { readyPods: 1 }) + noComments(poolMetricsText('p2', { readyPods: 2 }) + poolMetricsText('p3', { readyPods: 0 })));
    const m2 = await metricsServer(poolMetricsText('p4', { readyPods: 4, queueSize: 9 }));
    const config = signalsConfig({
      local: { epp: { metrics: { port: m.port, services: [{ namespace: 'ns', name: 'epp-b', port: m2.port }] } } },
    });
    const s = store({ config });
    const ea = eppTarget('local', a.address);
    const candidates = [viaEpp('local', 'p1', ea), viaEpp('local', 'p2', ea), viaEpp('local', 'p3', ea), viaEpp('local', 'p4', eppTarget('local', b.address, { namespace: 'ns', name: 'epp-b' }))];
    s.update(snapshotOf(...candidates));
    const targets = s.targets();
    expect(targets.filter((t) => t.kind === 'epp-health')).toHaveLength(2);
    expect(targets.filter((t) => t.kind === 'epp-metrics')).toHaveLength(2);
    expect(targets.find((t) => t.kind === 'epp-health' && t.target.startsWith(a.address))?.candidates).toEqual(['local/ns/p1', 'local/ns/p2', 'local/ns/p3']);

    await expect.poll(() => s.view().get('local/ns/p4').readyPods, { timeout: 3000 }).toBe(4);
    await expect.poll(() => s.view().get('local/ns/p2').readyPods, { timeout: 3000 }).toBe(2);
    await expect.poll(() => s.view().get('local/ns/p1').ready, { timeout: 3000 }).toBe('ready');
    const v = s.view();
    expect(v.get('local/ns/p2')).toMatchObject({ ready: 'ready', readyPods: 2 });
    expect(v.get('local/ns/p3')).toMatchObject({ ready: 'not-ready', reason: 'metrics:no-ready-pods' });
    expect(v.get('local/ns/p4')).toMatchObject({ ready: 'ready', queueSize: 9, saturated: true });
    expect(v.get('nope/ns/x')).toMatchObject({ ready: 'unknown' });
    expect(Object.isFrozen(v.get('local/ns/p1'))).toBe(true);

    // Same candidates in a new snapshot: nothing is restarted, and m is scraped at one cadence, not three.
    const before = m.requests;
    s.update(snapshotOf(...candidates));
    await new Promise((r) => setTimeout(r, 500));
    expect(m.requests - before).toBeLessThanOrEqual(13);
    expect(m.connections).toBe(1);
  });

  it('signals older than 3 scrape intervals are unknown, not bad', async () => {
    const clock = fakeClock();
    const e = await epp();
    const m = await metricsServer(poolMetricsText('p', { readyPods: 0, queueSize: 50 }));
    const s = store({ config: signalsConfig({ local: { epp: { metrics: { port: m.port, intervalMs: 100 } } } }), clock });
    s.update(snapshotOf(viaEpp('local', 'p', eppTarget('local', e.address))));
    await expect.poll(() => s.view().get('local/ns/p').readyPods, { timeout: 3000 }).toBe(0);
    expect(s.view().get('local/ns/p')).toMatchObject({ ready: 'not-ready', saturated: true });
    m.setStatus(500);
    await new Promise((r) => setTimeout(r, 150));
    clock.advance(350); // metrics now > 300 ms old; health (stale after 3 x 50 + 300 ms) still fresh
    const v = s.view().get('local/ns/p');
    expect(v.readyPods).toBeUndefined();
    expect(v.saturated).toBeUndefined();
    expect(v.ageMs).toBeGreaterThan(300);
    expect(v).toMatchObject({ ready: 'ready', source: 'epp-health' }); // health still serving; stale 0 pods ignored
  });

  it('cached() never evaluates (the request path); probe results and the timer keep it current', async () => {
    const clock = fakeClock();
    const e = await epp();
    const m = await metricsServer(poolMetricsText('p', { readyPods: 3 }));
    // A timer too slow to matter in this test: only probe results may refresh cached().
    const s = store({ config: signalsConfig({ local: { epp: { metrics: { port: m.port, intervalMs: 100 } } } }), clock, evaluateIntervalMs: 60_000 });
    s.update(snapshotOf(viaEpp('local', 'p', eppTarget('local', e.address))));
    // Probe and scrape results re-evaluate their own candidates, so cached() follows them.
    await expect.poll(() => s.cached().get('local/ns/p').readyPods, { timeout: 3000 }).toBe(3);
    await expect.poll(() => s.cached().get('local/ns/p').ready, { timeout: 3000 }).toBe('ready');
    // Time-based transitions (staleness) wait for an evaluation: cached() does not run one ...
    m.setStatus(500);
    await new Promise((r) => setTimeout(r, 150));
    clock.advance(10_000);
    const before = s.cached();
    expect(s.cached()).toBe(before);
    expect(before.get('local/ns/p').readyPods).toBe(3);
    // ... view() does (debug endpoints), and cached() then shows its result.
    expect(s.view().get('local/ns/p').readyPods).toBeUndefined();
    expect(s.cached().get('local/ns/p').readyPods).toBeUndefined();
  });

  it('Parent mode: an unreachable EPP never marks the candidate down; the parent probe decides; a reachable EPP wins', async () => {
    const hole = await blackHole();
    const parent = await tcpListener();
    const e = await epp();
    const config = signalsConfig({ remote: { epp: { health: { timeoutMs: 100 }, metrics: { port: hole.port, timeoutMs: 100 } } } });
    const s = store({ config });
    const unreachable = viaParent('remote', 'p', parentTarget('remote', parent.address), eppTarget('remote', hole.address));
    const reachable = viaParent('remote', 'q', parentTarget('remote', parent.address), eppTarget('remote', e.address, { namespace: 'ns', name: 'epp-q' }));
    s.update(snapshotOf(unreachable, reachable));
    expect(s.targets().filter((t) => t.kind === 'parent')).toHaveLength(1);
    await expect.poll(() => s.view().get('remote/ns/p').ready, { timeout: 3000 }).toBe('ready');
    expect(s.view().get('remote/ns/p').source).toBe('parent-probe');
    await new Promise((r) => setTimeout(r, 600)); // many failed EPP probes later: still ready
    expect(s.view().get('remote/ns/p')).toMatchObject({ ready: 'ready', source: 'parent-probe' });
    expect(s.view().get('remote/ns/q')).toMatchObject({ ready: 'ready', source: 'epp-health' });

    e.setHealth('envoy.service.ext_proc.v3.ExternalProcessor', 'NOT_SERVING');
    await expect.poll(() => s.view().get('remote/ns/q').ready, { timeout: 3000 }).toBe('not-ready');
    expect(s.view().get('remote/ns/p').ready).toBe('ready');

    await new Promise<void>((r) => parent.server.close(() => r()));
    await expect.poll(() => s.view().get('remote/ns/p').ready, { timeout: 3000 }).toBe('not-ready');
    expect(s.view().get('remote/ns/p').reason).toBe('parent:refused');
  });

  it('reconciles on snapshot change: new targets start, unreferenced ones stop, gone candidates lose their series', async () => {
    const registry = new Registry();
    const a = await epp();
    const b = await epp();
    const ma = await metricsServer(poolMetricsText('pa', { readyPods: 1 }));
    const mb = await metricsServer(poolMetricsText('pb', { readyPods: 3 }));
    const config = signalsConfig({ local: { epp: { metrics: { port: ma.port, services: [{ namespace: 'ns', name: 'epp-b', port: mb.port }] } } } });
    const s = store({ config, registry });
    const ca = viaEpp('local', 'pa', eppTarget('local', a.address));
    const cb = viaEpp('local', 'pb', eppTarget('local', b.address, { namespace: 'ns', name: 'epp-b' }));
    s.update(snapshotOf(ca));
    await expect.poll(() => s.view().get(ca.id).ready, { timeout: 3000 }).toBe('ready');
    expect(await registry.getSingleMetricAsString('mcip_pool_ready')).toContain('mcip_pool_ready{cluster="local",namespace="ns",pool="pa"} 1');

    s.update(snapshotOf(cb));
    expect(s.targets().map((t) => t.candidates)).toEqual([[cb.id], [cb.id]]);
    await expect.poll(() => s.view().get(cb.id).readyPods, { timeout: 3000 }).toBe(3);
    expect(s.view().candidates.has(ca.id)).toBe(false);
    const text = await registry.getSingleMetricAsString('mcip_pool_ready');
    expect(text).not.toContain('pool="pa"');
    expect(text).toContain('pool="pb"');
    await expectNoMoreRequests(ma); // the old scraper stopped

    s.update(snapshotOf());
    expect(s.targets()).toEqual([]);
  });

  it('a black-holed member cluster does not slow probes of healthy targets or view()', async () => {
    const hole = await blackHole();
    const e = await epp();
    const m = await metricsServer(poolMetricsText('good', { readyPods: 2 }));
    const config = signalsConfig({
      local: { epp: { metrics: { port: m.port } } },
      dark: { epp: { health: { timeoutMs: 2000 }, metrics: { port: hole.port, timeoutMs: 2000 } } },
    });
    const s = store({ config });
    const darkCandidates = Array.from({ length: 5 }, (_v, i) =>
      viaEpp('dark', `bad${i}`, eppTarget('dark', hole.address, { namespace: 'ns', name: `epp-${i}` })),
    );
    s.update(snapshotOf(viaEpp('local', 'good', eppTarget('local', e.address)), ...darkCandidates));
    await withinProcessMs(1000, 'the healthy target ready', () => expect.poll(() => s.view().get('local/ns/good').readyPods, { timeout: 10_000 }).toBe(2));
    const before = m.requests;
    let worstViewMs = 0;
    // 600 ms of this process's time: a loaded machine running other processes in between stretches it.
    const clock = processClock();
    while (clock.ms() < 600) {
      worstViewMs = Math.max(worstViewMs, timeWork(() => s.view()).ms);
      await new Promise((r) => setTimeout(r, 5));
    }
    clock.stop();
    expect(m.requests - before).toBeGreaterThanOrEqual(6); // every ~50 ms despite 2 s hangs next door
    expect(worstViewMs).toBeLessThan(50);
    expect(hole.connections).toBeGreaterThan(0);
    expect(s.view().get('dark/ns/bad0').ready).toBe('unknown');
  });

  it("a health probe of a member's host name resolving to a denied address: never sent, counted each time, warned once", async () => {
    const { lines, logger } = memoryLogger();
    const registry = new Registry();
    const e = await epp();
    const config = signalsConfig({ remote: { epp: { metrics: { enabled: false } } } });
    const s = store({ config, logger, registry });
    // localhost resolves to loopback, which the default destination rules deny; the EPP listens there.
    const named = { ...eppTarget('remote', `localhost:${e.port}`), source: 'loadBalancer' as const };
    s.update(snapshotOf(viaEpp('remote', 'p', named)));
    await expect
      .poll(async () => Number(/reason="destination-refused"\} (\d+)/.exec(await registry.getSingleMetricAsString('mcip_signal_probe_failures_total'))?.[1] ?? 0), { timeout: 3000 })
      .toBeGreaterThanOrEqual(3);
    // Metrics are off here, so the pool's missing load signal is warned too: that is another warning.
    const warnings = lines.filter((l) => l.level === 'warn' && !String(l.msg).includes('load signal'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain("EPP health probe not sent");
    expect(String(warnings[0]!.obj['error'])).toMatch(new RegExp(`^localhost resolved to (127\\.0\\.0\\.1|::1), which is refused: .* is inside destinations.deny \\(clusters\\[remote\\].eppAnswers.destinations\\)$`));
    expect(e.counters.healthChecks).toBe(0);
  });

  it('outlier ejection via the data path, re-admission on a successful probe after the backoff; one log line per change', async () => {
    const { lines, logger } = memoryLogger();
    const registry = new Registry();
    const e = await epp();
    const config = signalsConfig({ local: { epp: { metrics: { enabled: false } } } }, { baseEjectionMs: 400 });
    const s = store({ config, logger, registry });
    const c = viaEpp('local', 'p', eppTarget('local', e.address));
    s.update(snapshotOf(c));
    await expect.poll(() => s.view().get(c.id).ready, { timeout: 3000 }).toBe('ready');
    const changes: string[] = [];
    s.onChange((cs) => changes.push(...cs.map((x) => `${x.candidateId}:${x.after.ejected}`)));
    for (let i = 0; i < 5; i++) s.reportFailure(c.id, 'status-503');
    expect(s.view().get(c.id)).toMatchObject({ ejected: true, ready: 'ready' });
    expect(changes).toEqual([`${c.id}:true`]);
    expect(await registry.getSingleMetricAsString('mcip_pool_ejected')).toContain('pool="p"} 1');
    expect(await registry.getSingleMetricAsString('mcip_outlier_ejections_total')).toContain('reason="status-503"} 1');

    await new Promise((r) => setTimeout(r, 200)); // probes keep succeeding, but the backoff has not passed
    expect(s.view().get(c.id).ejected).toBe(true);
    await expect.poll(() => s.view().get(c.id).ejected, { timeout: 3000 }).toBe(false);
    expect(changes).toEqual([`${c.id}:true`, `${c.id}:false`]);

    const msgs = lines.filter((l) => l.level === 'info').map((l) => l.msg);
    expect(msgs).toEqual(['pool readiness changed', 'pool ejected', 'pool re-admitted']);
    expect(lines.find((l) => l.msg === 'pool ejected')?.obj).toMatchObject({ candidate: c.id, cluster: 'local', reason: 'status-503', durationMs: 400 });
  });

  it('counts scrape and probe failures by cluster and reason; stop() ends all probing', async () => {
    const registry = new Registry();
    const m = await metricsServer('garbage{\n');
    const s = store({ config: signalsConfig({ c1: { epp: { metrics: { port: m.port } } } }), registry });
    s.update(snapshotOf(viaEpp('c1', 'p', eppTarget('c1', '127.0.0.1:1'))));
    await expect.poll(async () => registry.getSingleMetricAsString('mcip_signal_scrape_failures_total'), { timeout: 3000 }).toContain(
      'mcip_signal_scrape_failures_total{cluster="c1",reason="malformed"}',
    );
    await expect.poll(async () => registry.getSingleMetricAsString('mcip_signal_probe_failures_total'), { timeout: 3000 }).toContain(
      'cluster="c1",probe="epp-health",reason="unavailable"',
    );
    s.stop();
    await expectNoMoreRequests(m);
  });
});
