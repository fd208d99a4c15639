import { Gauge, Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SignalMetrics, type CandidateLabels, type SignalMetricsSink } from '../../src/signals/signal-metrics.js';
import { SignalStore } from '../../src/signals/signal-store.js';
import type { CandidateSignals } from '../../src/signals/types.js';
import { startBlackHole } from './black-hole.js';
import { eppTarget, signalsConfig, snapshotOf, viaEpp } from './fixtures.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of cleanups.splice(0).reverse()) await c();
});

const LABELS: CandidateLabels = { cluster: 'c1', namespace: 'ns', pool: 'p' };
const signals = (o: Partial<CandidateSignals> = {}): CandidateSignals => ({ ready: 'ready', ejected: false, source: 'epp-metrics', reason: 'metrics:ready-pods', readyPods: 2, queueSize: 1, kvCache: 0.5, ...o });

/** A sink that counts setCandidate calls per candidate. */
function countingSink(): SignalMetricsSink & { readonly calls: Map<string, number>; total(): number } {
  const calls = new Map<string, number>();
  return {
    calls,
    total: () => [...calls.values()].reduce((a, b) => a + b, 0),
    setCandidate(l) {
      const id = `${l.cluster}/${l.namespace}/${l.pool}`;
      calls.set(id, (calls.get(id) ?? 0) + 1);
    },
    removeCandidate() {},
    scrapeFailure() {},
    probeFailure() {},
    ejection() {},
  };
}

async function sampleOf(registry: Registry, name: string): Promise<string> {
  const line = (await registry.getSingleMetricAsString(name)).split('\n').find((l) => l.startsWith(`${name}{`));
  return line?.slice(line.lastIndexOf(' ') + 1) ?? 'absent';
}

describe('SignalMetrics', () => {
  it('writes a gauge only when its value changes (NaN equals NaN)', () => {
    const registry = new Registry();
    const m = new SignalMetrics(registry);
    const set = vi.spyOn(Gauge.prototype, 'set');
    m.setCandidate(LABELS, signals({ readyPods: undefined }), 1000);
    expect(set).toHaveBeenCalledTimes(6); // a new series: every gauge once
    m.setCandidate(LABELS, signals({ readyPods: undefined }), 2000);
    m.setCandidate(LABELS, signals({ readyPods: undefined }), 3000);
    expect(set).toHaveBeenCalledTimes(6);
    m.setCandidate(LABELS, signals({ readyPods: undefined, queueSize: 7 }), 4000);
    expect(set).toHaveBeenCalledTimes(7);
    expect(set.mock.calls[6]).toEqual([LABELS, 7]);
  });

  it('computes the signal age when the registry collects, from the last successful scrape', async () => {
    const registry = new Registry();
    let now = 10_000;
    const m = new SignalMetrics(registry, { now: () => now });
    m.setCandidate(LABELS, signals({ ageMs: 500 }), 10_000); // scraped at 9,500
    now = 12_000;
    expect(await sampleOf(registry, 'mcip_pool_signal_age_seconds')).toBe('2.5');
    const set = vi.spyOn(Gauge.prototype, 'set');
    m.setCandidate(LABELS, signals({ ageMs: 3000 }), 12_500); // same scrape, later evaluation: nothing to write
    expect(set).not.toHaveBeenCalled();
    m.setCandidate(LABELS, signals({ ageMs: undefined, readyPods: undefined, queueSize: undefined, kvCache: undefined }), 13_000);
    expect(await sampleOf(registry, 'mcip_pool_signal_age_seconds')).toBe('Nan'); // prom-client's spelling
    expect(await sampleOf(registry, 'mcip_pool_ready_pods')).toBe('Nan'); // prom-client's spelling
    m.removeCandidate(LABELS);
    expect(await sampleOf(registry, 'mcip_pool_ready')).toBe('absent');
    expect(await sampleOf(registry, 'mcip_pool_signal_age_seconds')).toBe('absent');
  });
});

describe('SignalStore evaluation', () => {
  it('does not re-set metrics or rebuild the view when no candidate changed; reports one change once', async () => {
    const hole = await startBlackHole(); // probes hang: no result, so no signal changes on their own
    cleanups.push(() => hole.stop());
    const sink = countingSink();
    const config = signalsConfig({ c1: { epp: { health: { intervalMs: 60_000, timeoutMs: 60_000 }, metrics: { enabled: false } } } });
    const s = new SignalStore({ config, metrics: sink, evaluateIntervalMs: 10, viewMaxAgeMs: 5 });
    cleanups.push(() => s.stop());
    const candidates = Array.from({ length: 50 }, (_, i) => viaEpp('c1', `p${i}`, eppTarget('c1', hole.address, { namespace: 'ns', name: `epp-${i % 5}` })));
    s.update(snapshotOf(...candidates));
    expect(sink.total()).toBe(50); // each new candidate once
    const map = s.view().candidates;
    for (let k = 0; k < 20; k++) {
      await new Promise((r) => setTimeout(r, 10)); // timer and view() evaluations
      s.view();
    }
    expect(sink.total()).toBe(50);
    expect(s.view().candidates).toBe(map); // nothing changed: the same map, no per-candidate rebuild
    expect(s.view().get('c1/ns/p3')).toBe(map.get('c1/ns/p3'));

    for (let i = 0; i < 5; i++) s.reportFailure('c1/ns/p3', 'status-503');
    expect(s.view().get('c1/ns/p3').ejected).toBe(true);
    expect(sink.calls.get('c1/ns/p3')).toBe(2);
    expect(sink.total()).toBe(51);
    expect(s.view().get('c1/ns/p4')).toBe(map.get('c1/ns/p4')); // the unchanged keep their objects

    s.update(snapshotOf(...candidates)); // the same candidates again: still nothing to report
    expect(sink.total()).toBe(51);
  });
});
