import { describe, expect, it } from 'vitest';
import { pick, pickOrdered, pickWith, policyOf } from '../../src/picker/pick.js';
import type { Picked, PickResult } from '../../src/picker/types.js';
import { EMPTY_SIGNAL_VIEW } from '../../src/signals/types.js';
import { scriptedRandom, seededRandom } from '../helpers/random.js';
import { LOCAL } from '../snapshot/fixtures.js';
import { cand, EJECTED, expectShares, group, keyOf, NOT_READY, ruleOf, SATURATED, shares, sig, view } from './fixtures.js';

const a = cand(LOCAL, 'pool-a');
const b = cand(LOCAL, 'pool-b');
const rb = cand('cluster-b', 'llm-pool');
const rc = cand('cluster-c', 'llm-pool');
const rd = cand('cluster-d', 'llm-pool');

const picked = (p: PickResult): Picked => {
  if (p.type !== 'picked') throw new Error(`expected a pick, got ${p.type}`);
  return p;
};

describe('pickOrdered: Gateway API weights while pools are healthy', () => {
  const r = ruleOf([group('pool-a', 70, [a]), group('pool-b', 30, [b])]);

  it('70/30 holds at the conformance tolerance with all-unknown and with all-ready signals (10 seeds x 200)', () => {
    expectShares(r, EMPTY_SIGNAL_VIEW, { [a.id]: 0.7, [b.id]: 0.3 });
    expectShares(r, view({ [a.id]: sig(), [b.id]: sig() }), { [a.id]: 0.7, [b.id]: 0.3 });
  });

  it('capacity and unsaturated load do not bias weights between backendRefs', () => {
    const v = view({ [a.id]: sig({ readyPods: 1, queueSize: 4, kvCache: 0.8, saturated: false }), [b.id]: sig({ readyPods: 20, queueSize: 0, kvCache: 0.1, saturated: false }) });
    expectShares(r, v, { [a.id]: 0.7, [b.id]: 0.3 });
  });

  it('unknown signals = no bias: all-unknown and all-ready give the same primary draw for draw', () => {
    const ready = view({ [a.id]: sig(), [b.id]: sig(), [rb.id]: sig(), [rc.id]: sig() });
    const rule = ruleOf([group('pool-a', 3, [a]), group('pool-b', 2, [b]), group('llm-pool', 5, [rb, rc], 'InferencePoolImport')]);
    const x = seededRandom(9);
    const y = seededRandom(9);
    const z = seededRandom(9);
    const unknown: string[] = [];
    const allReady: string[] = [];
    const plain: string[] = [];
    for (let i = 0; i < 2000; i++) {
      unknown.push(keyOf(pickOrdered(rule, EMPTY_SIGNAL_VIEW, x, 'weighted')));
      allReady.push(keyOf(pickOrdered(rule, ready, y, 'weighted')));
      plain.push(keyOf(pick(rule, z)));
    }
    expect(allReady).toEqual(unknown);
    expect(plain).toEqual(unknown);
    expect(new Set(unknown).size).toBe(4);
  });

  it('partially unknown signals do not bias either (an unknown pool next to a ready one)', () => {
    expectShares(r, view({ [a.id]: sig({ readyPods: 3 }) }), { [a.id]: 0.7, [b.id]: 0.3 });
  });
});

describe('pickOrdered: capacity share inside an InferencePoolImport', () => {
  it('6 vs 2 ready pods -> 75/25 (conformance tolerance, and within 1% over 100k)', () => {
    const r = ruleOf([group('llm-pool', 1, [rb, rc], 'InferencePoolImport')]);
    const v = view({ [rb.id]: sig({ readyPods: 6 }), [rc.id]: sig({ readyPods: 2 }) });
    expectShares(r, v, { [rb.id]: 0.75, [rc.id]: 0.25 });
    const s = shares(r, v, 100_000, 77);
    expect(Math.abs(s.get(rb.id)! - 0.75)).toBeLessThan(0.01);
  });

  it('the import keeps its backendRef weight; its share is split by capacity', () => {
    const r = ruleOf([group('pool-a', 50, [a]), group('llm-pool', 50, [rb, rc], 'InferencePoolImport')]);
    const v = view({ [a.id]: sig({ readyPods: 1 }), [rb.id]: sig({ readyPods: 6 }), [rc.id]: sig({ readyPods: 2 }) });
    const s = shares(r, v, 100_000, 5);
    for (const [id, p] of [[a.id, 0.5], [rb.id, 0.375], [rc.id, 0.125]] as const) expect(Math.abs(s.get(id)! - p)).toBeLessThan(0.01);
  });

  it('an exporter with unknown pods counts as the mean of the known ones; none known -> equal', () => {
    const r = ruleOf([group('llm-pool', 1, [rb, rc, rd], 'InferencePoolImport')]);
    const s = shares(r, view({ [rb.id]: sig({ readyPods: 6 }), [rd.id]: sig({ readyPods: 2 }) }), 100_000, 6);
    for (const [id, p] of [[rb.id, 0.5], [rc.id, 1 / 3], [rd.id, 1 / 6]] as const) expect(Math.abs(s.get(id)! - p)).toBeLessThan(0.01);
    const eq = shares(r, EMPTY_SIGNAL_VIEW, 100_000, 6);
    for (const id of [rb.id, rc.id, rd.id]) expect(Math.abs(eq.get(id)! - 1 / 3)).toBeLessThan(0.01);
  });
});

describe('pickOrdered: unavailable candidates', () => {
  const r = ruleOf([group('pool-a', 70, [a]), group('llm-pool', 30, [rb, rc], 'InferencePoolImport')]);

  it.each([
    ['not-ready (health failing)', NOT_READY],
    ['not-ready (0 ready pods)', sig({ ready: 'not-ready', readyPods: 0, reason: 'metrics:no-ready-pods' })],
    ['ejected (even while health says ready)', EJECTED],
    ['0 ready pods reported next to a serving health check', sig({ readyPods: 0 })],
  ])('%s -> zero traffic; the rest of its backendRef takes its share', (_, bad) => {
    const s = shares(r, view({ [rb.id]: bad }), 20_000, 3);
    expect(s.get(rb.id)).toBeUndefined();
    expect(Math.abs(s.get(a.id)! - 0.7)).toBeLessThan(0.015);
    expect(Math.abs(s.get(rc.id)! - 0.3)).toBeLessThan(0.015);
  });

  it('a backendRef with no available pool gives its weight to the others (reason stays weighted), never as a fallback', () => {
    const v = view({ [rb.id]: NOT_READY, [rc.id]: EJECTED });
    const s = shares(r, v, 5000, 4);
    expect(s.get(a.id)).toBe(1);
    const p = picked(pickOrdered(r, v, seededRandom(1)));
    expect(p.reason).toBe('weighted');
    expect(p.fallbacks).toEqual([]);
  });

  it('panic: every candidate unavailable -> tried anyway, by weight, reason panic, fallbacks are the rest', () => {
    const v = view({ [a.id]: NOT_READY, [rb.id]: EJECTED, [rc.id]: sig({ ready: 'not-ready', readyPods: 0 }) });
    expectShares(r, v, { [a.id]: 0.7, [rb.id]: 0.15, [rc.id]: 0.15 });
    const p = picked(pickOrdered(r, v, scriptedRandom([0.1])));
    expect(p).toMatchObject({ primary: a, reason: 'panic' });
    expect(p.fallbacks.map((c) => c.id)).toEqual([rb.id, rc.id]);
  });

  it('panic ignores capacity (0-pod exporters split their backendRef equally)', () => {
    const imp = ruleOf([group('llm-pool', 1, [rb, rc], 'InferencePoolImport')]);
    const v = view({ [rb.id]: sig({ ready: 'not-ready', readyPods: 0 }), [rc.id]: NOT_READY });
    expectShares(imp, v, { [rb.id]: 0.5, [rc.id]: 0.5 });
  });

  it('an invalid backendRef keeps its exact 500 share while others are usable, after failover of a down pool, and in panic', () => {
    const bad = group('missing', 20, []);
    const rule = ruleOf([group('pool-a', 50, [a]), group('pool-b', 30, [b]), bad]);
    for (const v of [EMPTY_SIGNAL_VIEW, view({ [b.id]: NOT_READY }), view({ [a.id]: SATURATED, [b.id]: SATURATED }), view({ [a.id]: EJECTED, [b.id]: NOT_READY })]) {
      const s = shares(rule, v, 100_000, 8);
      expect(Math.abs(s.get('invalid-backend')! - 0.2)).toBeLessThan(0.01);
    }
    const s = shares(rule, view({ [b.id]: NOT_READY }), 100_000, 8);
    expect(Math.abs(s.get(a.id)! - 0.8)).toBeLessThan(0.01);
    const panic = shares(rule, view({ [a.id]: EJECTED, [b.id]: NOT_READY }), 100_000, 8);
    expect(Math.abs(panic.get(a.id)! - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(panic.get(b.id)! - 0.3)).toBeLessThan(0.01);
  });

  it('weight-0 backendRefs get nothing, not even in panic or as fallbacks', () => {
    const rule = ruleOf([group('zero', 0, [b]), group('pool-a', 1, [a])]);
    const p = picked(pickOrdered(rule, view({ [a.id]: NOT_READY }), seededRandom(2)));
    expect(p).toMatchObject({ primary: a, reason: 'panic' });
    expect(p.fallbacks).toEqual([]);
  });
});

describe('pickOrdered: saturation spillover', () => {
  const r = ruleOf([group('pool-a', 70, [a]), group('llm-pool', 30, [rb, rc], 'InferencePoolImport')]);

  it('a saturated pool gets no new traffic while an unsaturated one is left; the diverted share is labelled spillover', () => {
    const v = view({ [a.id]: SATURATED, [rb.id]: sig({ readyPods: 3 }), [rc.id]: sig({ readyPods: 1 }) });
    const random = seededRandom(12);
    const counts = new Map<string, number>();
    for (let i = 0; i < 100_000; i++) {
      const p = picked(pickOrdered(r, v, random));
      const key = p.primary === a ? 'saturated-primary' : p.reason;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect(counts.get('saturated-primary')).toBeUndefined();
    expect(Math.abs(counts.get('spillover')! / 100_000 - 0.7)).toBeLessThan(0.01);
    expect(Math.abs(counts.get('weighted')! / 100_000 - 0.3)).toBeLessThan(0.01);
    expectShares(r, v, { [rb.id]: 0.75, [rc.id]: 0.25 });
  });

  it('all saturated -> by weight among them, reason spillover', () => {
    const v = view({ [a.id]: SATURATED, [rb.id]: SATURATED, [rc.id]: SATURATED });
    expectShares(r, v, { [a.id]: 0.7, [rb.id]: 0.15, [rc.id]: 0.15 });
    expect(picked(pickOrdered(r, v, seededRandom(1))).reason).toBe('spillover');
  });

  it('saturated beats unavailable: a saturated pool takes traffic before panic', () => {
    const v = view({ [a.id]: NOT_READY, [rb.id]: EJECTED, [rc.id]: SATURATED });
    expect(shares(r, v, 2000, 1).get(rc.id)).toBe(1);
  });

  it('fallback order: unsaturated by effective weight, then saturated by effective weight; unavailable never', () => {
    const d = cand(LOCAL, 'pool-d');
    const rule = ruleOf([group('pool-a', 40, [a]), group('llm-pool', 30, [rb, rc], 'InferencePoolImport'), group('pool-b', 20, [b]), group('pool-d', 10, [d])]);
    const v = view({ [a.id]: SATURATED, [rb.id]: sig({ readyPods: 1 }), [rc.id]: sig({ readyPods: 5 }), [b.id]: SATURATED, [d.id]: NOT_READY });
    const p = picked(pickOrdered(rule, v, scriptedRandom([0.99])));
    expect(p.primary).toBe(rc);
    expect(p.fallbacks.map((c) => c.id)).toEqual([rb.id, a.id, b.id]);
  });

  it('config thresholds re-derive saturation from the metrics; without them the view flag is used', () => {
    const v = view({ [a.id]: sig({ queueSize: 3, kvCache: 0.5, saturated: false }), [b.id]: sig({ queueSize: 0, kvCache: 0.2, saturated: false }) });
    const rule = ruleOf([group('pool-a', 1, [a]), group('pool-b', 1, [b])]);
    expect(shares(rule, v, 2000, 1, { thresholds: { queueSize: 2, kvCache: 0.9 } }).get(b.id)).toBe(1);
    expect(shares(rule, v, 2000, 1, { thresholds: { queueSize: 5, kvCache: 0.4 } }).get(b.id)).toBe(1);
    expectShares(rule, v, { [a.id]: 0.5, [b.id]: 0.5 });
  });
});

describe('pickOrdered: result shape', () => {
  it('fallbacks are built lazily once, exclude the primary, list each id once', () => {
    const rule = ruleOf([group('pool-a', 1, [a]), group('llm-pool', 1, [rb, a], 'InferencePoolImport'), group('pool-b', 1, [b])]);
    const p = picked(pickOrdered(rule, EMPTY_SIGNAL_VIEW, scriptedRandom([0])));
    expect(p.primary).toBe(a);
    const f = p.fallbacks;
    expect(p.fallbacks).toBe(f);
    expect(f.map((c) => c.id)).toEqual([b.id, rb.id]);
    expect(Object.isFrozen(f)).toBe(true);
  });

  it('pickWith applies the route policy over the configured default, and the configured thresholds', () => {
    const rule = ruleOf([group('pool-a', 1, [a]), group('llm-pool', 1, [rb], 'InferencePoolImport')], 'prefer-local');
    expect(policyOf(rule, { defaultPolicy: 'weighted' })).toBe('prefer-local');
    expect(policyOf({ ...rule, policy: undefined }, { defaultPolicy: 'least-loaded' })).toBe('least-loaded');
    const p = picked(pickWith(rule, EMPTY_SIGNAL_VIEW, scriptedRandom([0.99]), { defaultPolicy: 'weighted' }));
    expect(p).toMatchObject({ primary: a, policy: 'prefer-local', reason: 'prefer-local' });
    const v = view({ [a.id]: sig({ queueSize: 3 }) });
    expect(picked(pickWith(rule, v, scriptedRandom([0]), { defaultPolicy: 'weighted', saturation: { queueSize: 1, kvCache: 1 } })).primary).toBe(rb);
  });

  it('tolerates a random source returning 1 with invalid and unavailable groups around', () => {
    const rule = ruleOf([group('missing', 1, []), group('pool-a', 1, [a]), group('pool-b', 1, [b])]);
    expect(picked(pickOrdered(rule, view({ [b.id]: NOT_READY }), () => 1)).primary).toBe(a);
    expect(pickOrdered(ruleOf([group('pool-a', 1, [a]), group('missing', 1, [])]), EMPTY_SIGNAL_VIEW, () => 1).type).toBe('invalid-backend');
  });
});
