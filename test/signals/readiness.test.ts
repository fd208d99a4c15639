import { describe, expect, it } from 'vitest';
import type { ScrapeState } from '../../src/signals/metrics-scraper.js';
import type { ProbeState } from '../../src/signals/probe-types.js';
import { computeSignals, type CandidateInputs } from '../../src/signals/readiness.js';
import { DEFAULT_SATURATION } from '../../src/config/defaults.js';

const NOW = 100_000;
const probe = (p: Partial<ProbeState>): { state: ProbeState; staleMs: number } => ({
  state: { status: 'unknown', reachable: false, everReached: false, lastProbeAt: NOW - 100, ...p },
  staleMs: 7_000,
});
const HEALTHY = probe({ status: 'healthy', reachable: true, everReached: true });
const NOT_SERVING = probe({ status: 'unhealthy', reachable: true, everReached: true, lastError: 'not-serving' });
const UNSUPPORTED = probe({ status: 'unsupported', code: 'UNIMPLEMENTED', reachable: true, everReached: true, lastError: 'unimplemented' });
const NEVER_REACHED = probe({ status: 'unhealthy', reachable: false, everReached: false, lastError: 'timeout' });
const metrics = (pools: Record<string, object>, ageMs = 1000): { state: ScrapeState; pool: string; staleMs: number } => ({
  state: { lastSuccessAt: NOW - ageMs, pools: new Map(Object.entries(pools)), consecutiveFailures: 0 },
  pool: 'p',
  staleMs: 15_000,
});
const sig = (i: Partial<CandidateInputs>) => computeSignals({ via: 'epp', ejected: false, ...i }, NOW, DEFAULT_SATURATION);

describe('computeSignals: Endpoint mode (via epp)', () => {
  it.each([
    ['no signal yet', {}, 'unknown'],
    ['health serving', { health: HEALTHY }, 'ready'],
    ['health NOT_SERVING', { health: NOT_SERVING }, 'not-ready'],
    ['EPP never reached (unhealthy threshold hit)', { health: NEVER_REACHED }, 'not-ready'],
    ['health serving but 0 ready pods', { health: HEALTHY, metrics: metrics({ p: { readyPods: 0 } }) }, 'not-ready'],
    ['no health yet, ready pods > 0', { metrics: metrics({ p: { readyPods: 2 } }) }, 'ready'],
    ['health result stale -> unknown', { health: { ...HEALTHY, state: { ...HEALTHY.state, lastProbeAt: NOW - 8_000 } } }, 'unknown'],
    ['stale 0 ready pods are ignored', { health: HEALTHY, metrics: metrics({ p: { readyPods: 0 } }, 16_000) }, 'ready'],
    ['other pool in the payload only', { metrics: metrics({ q: { readyPods: 0 } }) }, 'unknown'],
    ['no health signal (UNIMPLEMENTED), ready pods > 0', { health: UNSUPPORTED, metrics: metrics({ p: { readyPods: 2 } }) }, 'ready'],
    ['no health signal (UNIMPLEMENTED), 0 ready pods', { health: UNSUPPORTED, metrics: metrics({ p: { readyPods: 0 } }) }, 'not-ready'],
    ['no health signal and no metrics', { health: UNSUPPORTED }, 'unknown'],
  ] as const)('%s', (_n, inputs, ready) => {
    expect(sig(inputs as Partial<CandidateInputs>).ready).toBe(ready);
  });

  it('fresh metrics are exposed with their age and saturation', () => {
    const s = sig({ health: HEALTHY, metrics: metrics({ p: { readyPods: 3, queueSize: 6, kvCache: 0.5, runningRequests: 4 } }, 2000) });
    expect(s).toMatchObject({ ready: 'ready', readyPods: 3, queueSize: 6, kvCache: 0.5, runningRequests: 4, ageMs: 2000, saturated: true });
    expect(sig({ metrics: metrics({ p: { kvCache: 0.95 } }) }).saturated).toBe(true);
    expect(sig({ metrics: metrics({ p: { queueSize: 5, kvCache: 0.9 } }) }).saturated).toBe(false);
    expect(sig({ metrics: metrics({ p: { readyPods: 3 } }) }).saturated).toBeUndefined();
  });

  it('stale metrics are unknown: values and saturation dropped, age kept', () => {
    const s = sig({ metrics: metrics({ p: { readyPods: 3, queueSize: 60 } }, 15_001) });
    expect(s).toEqual({ ready: 'unknown', ejected: false, source: 'none', reason: 'no-signal', ageMs: 15_001 });
  });

  it('no health signal: says so while nothing else decides, else the metrics are the source', () => {
    expect(sig({ health: UNSUPPORTED })).toEqual({ ready: 'unknown', ejected: false, source: 'none', reason: 'health:unsupported' });
    expect(sig({ health: UNSUPPORTED, metrics: metrics({ p: { readyPods: 1 } }) })).toMatchObject({ source: 'epp-metrics', reason: 'metrics:ready-pods' });
  });

  it('ejected is carried independently of readiness', () => {
    expect(computeSignals({ via: 'epp', ejected: true, health: HEALTHY }, NOW, DEFAULT_SATURATION)).toMatchObject({ ready: 'ready', ejected: true });
  });
});

describe('computeSignals: Parent mode (via parent)', () => {
  const par = (i: Partial<CandidateInputs>) => sig({ via: 'parent', ...i });
  const PARENT_UP = probe({ status: 'healthy', reachable: true, everReached: true });
  const PARENT_DOWN = probe({ status: 'unhealthy', reachable: false, everReached: true, lastError: 'refused' });

  it.each([
    ['EPP never reached, parent up -> ready from the parent probe', { health: NEVER_REACHED, parent: PARENT_UP }, 'ready', 'parent-probe'],
    ['EPP never reached, parent not probed yet -> unknown, not down', { health: NEVER_REACHED }, 'unknown', 'none'],
    ['no EPP configured, parent up', { parent: PARENT_UP }, 'ready', 'parent-probe'],
    ['parent down -> not ready', { parent: PARENT_DOWN, health: HEALTHY }, 'not-ready', 'parent-probe'],
    ['EPP reachable and NOT_SERVING -> not ready', { health: NOT_SERVING, parent: PARENT_UP }, 'not-ready', 'epp-health'],
    ['EPP reachable and serving', { health: HEALTHY, parent: PARENT_UP }, 'ready', 'epp-health'],
    ['EPP unreachable but metrics fresh with 0 pods', { health: NEVER_REACHED, metrics: metrics({ p: { readyPods: 0 } }), parent: PARENT_UP }, 'not-ready', 'epp-metrics'],
    ['EPP was reached once, now unreachable -> parent decides', { health: probe({ status: 'unhealthy', reachable: false, everReached: true, lastError: 'timeout' }), parent: PARENT_UP }, 'ready', 'parent-probe'],
  ] as const)('%s', (_n, inputs, ready, source) => {
    const s = par(inputs as Partial<CandidateInputs>);
    expect(s.ready).toBe(ready);
    expect(s.source).toBe(source);
  });
});
