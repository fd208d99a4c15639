/**
 * Shared builders for picker tests: candidates, backend groups, rules, signal
 * views, and sampled shares at the GIE conformance tolerance.
 */
import { expect } from 'vitest';
import { pickOrdered } from '../../src/picker/pick.js';
import type { PickPolicy } from '../../src/config/pick-policy.js';
import type { PickResult, RandomSource } from '../../src/picker/types.js';
import { signalView, type CandidateSignals, type SaturationThresholds, type SignalView } from '../../src/signals/types.js';
import type { BackendGroup, Candidate, RouteRule } from '../../src/snapshot/types.js';
import { seededRandom } from '../helpers/random.js';
import { config, LOCAL } from '../snapshot/fixtures.js';

const TLS = config().clusters[0]!.epp.tls;

export function cand(cluster: string, pool: string): Candidate {
  return {
    id: `${cluster}/example/${pool}`,
    cluster,
    namespace: 'example',
    pool,
    local: cluster === LOCAL,
    failureMode: 'FailClose',
    targetPorts: [8000],
    via: 'epp',
    epp: {
      address: '10.0.0.1:9002', host: '10.0.0.1', port: 9002, cluster,
      service: { namespace: 'example', name: `${pool}-epp` }, source: 'clusterIP', tls: TLS,
    },
  };
}

export function group(name: string, weight: number, candidates: Candidate[], kind = 'InferencePool'): BackendGroup {
  const excluded = candidates.length === 0 ? [{ subject: `${LOCAL}/example/${name}`, reason: 'PoolNotFound', message: 'not found' }] : [];
  return { ref: { group: 'inference.networking.k8s.io', kind, namespace: 'example', name }, weight, candidates, excluded };
}

export function ruleOf(backends: BackendGroup[], policy?: PickPolicy): RouteRule {
  return {
    route: { namespace: 'example', name: 'r' },
    index: 0,
    backends,
    totalWeight: backends.reduce((s, b) => s + b.weight, 0),
    ...(policy ? { policy } : {}),
  };
}

/** Signals of a ready candidate, overridden by `o`. */
export function sig(o: Partial<CandidateSignals> = {}): CandidateSignals {
  return { ready: 'ready', ejected: false, source: 'epp-health', reason: 'test', ...o };
}

export const NOT_READY = sig({ ready: 'not-ready', reason: 'health:failing' });
export const EJECTED = sig({ ejected: true });
export const SATURATED = sig({ readyPods: 2, queueSize: 9, kvCache: 0.5, saturated: true });

export function view(entries: Record<string, CandidateSignals>): SignalView {
  return signalView(Object.entries(entries));
}

/** Key of a result: the primary's id, or the result type. */
export function keyOf(p: PickResult): string {
  return p.type === 'picked' ? p.primary.id : p.type;
}

export interface ShareOpts {
  policy?: PickPolicy;
  thresholds?: SaturationThresholds;
  random?: RandomSource;
}

/** Share of `n` picks per key (candidate id or result type). */
export function shares(r: RouteRule, v: SignalView, n: number, seed: number, o: ShareOpts = {}): Map<string, number> {
  const random = o.random ?? seededRandom(seed);
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const key = keyOf(pickOrdered(r, v, random, o.policy ?? 'weighted', o.thresholds));
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return new Map([...counts].map(([k, c]) => [k, c / n]));
}

/** GIE conformance tolerance: max(0.10, 4.5 * sqrt(p(1-p)/n)). */
export const tolerance = (p: number, n: number): number => Math.max(0.1, 4.5 * Math.sqrt((p * (1 - p)) / n));

/** Asserts every expected share within the conformance tolerance over `seeds` seeds of `n` draws. */
export function expectShares(
  r: RouteRule,
  v: SignalView,
  expected: Record<string, number>,
  o: ShareOpts & { n?: number; seeds?: number } = {},
): void {
  const n = o.n ?? 200;
  for (let seed = 1; seed <= (o.seeds ?? 10); seed++) {
    const s = shares(r, v, n, seed, o);
    for (const [key, p] of Object.entries(expected)) {
      const actual = s.get(key) ?? 0;
      expect(Math.abs(actual - p), `${key}: observed ${actual}, target ${p} (seed ${seed})`).toBeLessThanOrEqual(tolerance(p, n));
    }
  }
}
