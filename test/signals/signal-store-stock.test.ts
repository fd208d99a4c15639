// The SignalStore against simulated stock llm-d EPPs (real gRPC and HTTP): no Health on the
// ext_proc port is "no health signal", readiness comes from the llm_d_epp_* metrics.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SignalStore } from '../../src/signals/signal-store.js';
import { startSimulatedEpp, type SimulatedEpp, type StockEppOptions } from '../harness/simulated-epp.js';
import { eppTarget, memoryLogger, signalsConfig, snapshotOf, viaEpp } from './fixtures.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function stockEpp(stock: StockEppOptions): Promise<SimulatedEpp> {
  const e = await startSimulatedEpp({ endpoints: ['10.0.0.1:8000', '10.0.0.2:8000'], stock });
  cleanups.push(() => e.stop());
  return e;
}

function tokenFile(token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcip-stock-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'token');
  writeFileSync(path, token);
  return path;
}

describe('SignalStore with stock llm-d EPPs', () => {
  it('UNIMPLEMENTED on the ext_proc port: ready from llm_d_epp_* metrics, shown as unsupported, logged once, not counted as a failure', async () => {
    const e = await stockEpp({ pool: 'p', metricsTokens: ['scrape-token'] });
    const { lines, logger } = memoryLogger();
    const registry = new Registry();
    const metrics = { port: e.metricsPort, bearerTokenFile: tokenFile('scrape-token'), allowTokenOverPlainHttp: true };
    const s = new SignalStore({ config: signalsConfig({ c1: { epp: { metrics } } }), logger, registry, evaluateIntervalMs: 50 });
    cleanups.push(() => s.stop());
    const c = viaEpp('c1', 'p', eppTarget('c1', e.address));
    s.update(snapshotOf(c));

    await expect.poll(() => s.view().get(c.id), { timeout: 3000 }).toMatchObject({ ready: 'ready', source: 'epp-metrics', readyPods: 2 });
    const health = () => s.targets().find((t) => t.kind === 'epp-health')!;
    await expect.poll(() => health().state, { timeout: 3000 }).toMatchObject({ status: 'unsupported', code: 'UNIMPLEMENTED', reachable: true });
    await new Promise((r) => setTimeout(r, 300)); // several more probes (every 50 ms)
    const told = lines.filter((l) => l.msg.startsWith('EPP offers no gRPC health signal'));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ level: 'info', obj: { target: e.address, code: 'UNIMPLEMENTED', candidates: [c.id] } });
    // The "no health signal" answers are never failures (a probe that timed out on a loaded machine would be one, honestly).
    expect(await registry.getSingleMetricAsString('mcip_signal_probe_failures_total')).not.toMatch(/probe="epp-health",reason="(unimplemented|service-unknown)"/);
    expect(e.metricsUnauthorized).toBe(0);

    // 0 ready endpoints in the metrics still take the pool out.
    e.setPoolMetrics({ readyPods: 0 });
    await expect.poll(() => s.view().get(c.id), { timeout: 3000 }).toMatchObject({ ready: 'not-ready', reason: 'metrics:no-ready-pods' });
  });

  it('probing 9003 for "readiness": the leader is ready, a follower is not', async () => {
    const e = await stockEpp({ pool: 'p' });
    const port = Number(e.healthAddress.split(':')[1]);
    const config = signalsConfig({ c1: { epp: { health: { port, service: 'readiness' }, metrics: { enabled: false } } } });
    const s = new SignalStore({ config, evaluateIntervalMs: 50 });
    cleanups.push(() => s.stop());
    const c = viaEpp('c1', 'p', eppTarget('c1', e.address));
    s.update(snapshotOf(c));
    await expect.poll(() => s.view().get(c.id), { timeout: 3000 }).toMatchObject({ ready: 'ready', source: 'epp-health' });
    e.setLeader(false);
    await expect.poll(() => s.view().get(c.id), { timeout: 3000 }).toMatchObject({ ready: 'not-ready', reason: 'health:not-serving' });
  });

  it('an ejected pool without a health signal is re-admitted once its ejection time is over', async () => {
    const e = await stockEpp({ pool: 'p' });
    const config = signalsConfig({ c1: { epp: { metrics: { enabled: false } } } }, { baseEjectionMs: 300 });
    const s = new SignalStore({ config, evaluateIntervalMs: 50 });
    cleanups.push(() => s.stop());
    const c = viaEpp('c1', 'p', eppTarget('c1', e.address));
    s.update(snapshotOf(c));
    await expect.poll(() => s.targets()[0]?.state, { timeout: 3000 }).toMatchObject({ status: 'unsupported' });
    for (let i = 0; i < 5; i++) s.reportFailure(c.id, 'stream');
    expect(s.view().get(c.id).ejected).toBe(true);
    await new Promise((r) => setTimeout(r, 150));
    expect(s.view().get(c.id).ejected).toBe(true);
    await expect.poll(() => s.view().get(c.id).ejected, { timeout: 3000 }).toBe(false);
  });
});
