import { describe, expect, it } from 'vitest';
import { pick } from '../../src/picker/pick.js';
import type { PickResult } from '../../src/picker/types.js';
import type { RouteRule } from '../../src/snapshot/types.js';
import { scriptedRandom, seededRandom } from '../helpers/random.js';
import { build, config, importRef, LOCAL, localPool, poolImport, poolRef, route, rule, servedGateway } from '../snapshot/fixtures.js';
import { cand, group, ruleOf, tolerance } from './fixtures.js';

/** Share of `n` picks (no signals) whose key (candidate id, or the result type) equals each key. */
function shares(r: RouteRule, n: number, seed: number): Map<string, number> {
  const random = seededRandom(seed);
  const counts = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const p = pick(r, random);
    const key = p.type === 'picked' ? p.primary.id : p.type;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return new Map([...counts].map(([k, c]) => [k, c / n]));
}

const a = cand(LOCAL, 'pool-a');
const b = cand(LOCAL, 'pool-b');

describe('pick', () => {
  it('70/30 between two InferencePools over 200 seeded draws is within tolerance (10 seeds)', () => {
    const r = ruleOf([group('pool-a', 70, [a]), group('pool-b', 30, [b])]);
    for (let seed = 1; seed <= 10; seed++) {
      const s = shares(r, 200, seed);
      expect(Math.abs((s.get(a.id) ?? 0) - 0.7)).toBeLessThanOrEqual(tolerance(0.7, 200));
      expect(Math.abs((s.get(b.id) ?? 0) - 0.3)).toBeLessThanOrEqual(tolerance(0.3, 200));
    }
  });

  it('50/50 between an InferencePool and an InferencePoolImport of the same name splits local/imported equally (built snapshot)', () => {
    const { snapshot } = build(config(), {
      [LOCAL]: [servedGateway(), ...localPool('llm-pool'), poolImport('llm-pool', [['cluster-b']]), route('r', [rule([poolRef('llm-pool', 50), importRef('llm-pool', 50)])])],
      'cluster-b': localPool('llm-pool', { exported: true }),
    });
    const r = snapshot.routes[0]!.rules[0]!;
    for (let seed = 1; seed <= 10; seed++) {
      const s = shares(r, 200, seed);
      expect(Math.abs((s.get('cluster-a/example/llm-pool') ?? 0) - 0.5)).toBeLessThanOrEqual(tolerance(0.5, 200));
      expect(Math.abs((s.get('cluster-b/example/llm-pool') ?? 0) - 0.5)).toBeLessThanOrEqual(tolerance(0.5, 200));
    }
  });

  it('an import with two exporting clusters splits its weight equally between them', () => {
    const b1 = cand('cluster-b', 'llm-pool');
    const c1 = cand('cluster-c', 'llm-pool');
    const s = shares(ruleOf([group('llm-pool', 1, [b1, c1], 'InferencePoolImport')]), 200, 7);
    expect(Math.abs(s.get(b1.id)! - 0.5)).toBeLessThanOrEqual(tolerance(0.5, 200));
    expect(Math.abs(s.get(c1.id)! - 0.5)).toBeLessThanOrEqual(tolerance(0.5, 200));
  });

  it('never picks a weight-0 backendRef, even at the edges of the draw range', () => {
    const r = ruleOf([group('zero-first', 0, [b]), group('pool-a', 5, [a]), group('zero-last', 0, [b])]);
    for (const v of [0, 0.5, 0.999999999999]) {
      const p = pick(r, scriptedRandom([v]));
      expect(p.type === 'picked' && p.primary).toBe(a);
    }
    expect(shares(r, 1000, 3).get(b.id)).toBeUndefined();
  });

  it('is unavailable when every weight is 0 or there are no backendRefs', () => {
    expect(pick(ruleOf([group('a', 0, [a]), group('b', 0, [b])]), seededRandom(1))).toMatchObject({ type: 'unavailable', message: expect.stringContaining('weight 0') });
    expect(pick(ruleOf([]), seededRandom(1))).toMatchObject({ type: 'unavailable', message: expect.stringContaining('no backendRefs') });
  });

  it('a draw that falls on a backendRef without candidates is invalid-backend (its share gets 500)', () => {
    const bad = group('missing', 30, []);
    const r = ruleOf([group('pool-a', 70, [a]), bad]);
    const p = pick(r, scriptedRandom([0.85]));
    expect(p).toMatchObject({ type: 'invalid-backend', group: bad });
    expect((p as Extract<PickResult, { type: 'invalid-backend' }>).message).toContain('PoolNotFound');
    const s = shares(r, 200, 11);
    expect(Math.abs((s.get('invalid-backend') ?? 0) - 0.3)).toBeLessThanOrEqual(tolerance(0.3, 200));
  });

  it('returns the chosen group and reason, and maps draws to groups by cumulative weight', () => {
    const ga = group('pool-a', 1, [a]);
    const gb = group('pool-b', 3, [b]);
    const r = ruleOf([ga, gb]);
    const p = pick(r, scriptedRandom([0.24]));
    expect(p).toEqual({ type: 'picked', primary: a, group: ga, reason: 'weighted', policy: 'weighted' });
    expect(p.type === 'picked' && p.fallbacks).toEqual([b]);
    expect(pick(r, scriptedRandom([0.25]))).toMatchObject({ primary: b, group: gb });
  });

  it('tolerates a random source returning 1', () => {
    const r = ruleOf([group('pool-a', 1, [a]), group('pool-b', 1, [b, cand('cluster-b', 'pool-b')])]);
    expect(pick(r, () => 1)).toMatchObject({ type: 'picked', primary: { id: 'cluster-b/example/pool-b' } });
  });

  it('100k draws over 50 (pool) / 30 (import of two clusters) / 20 (invalid) land within 1% of target', () => {
    const b1 = cand('cluster-b', 'llm-pool');
    const c1 = cand('cluster-c', 'llm-pool');
    const r = ruleOf([group('pool-a', 50, [a]), group('llm-pool', 30, [b1, c1], 'InferencePoolImport'), group('missing', 20, [])]);
    const s = shares(r, 100_000, 2025);
    const expected: [string, number][] = [[a.id, 0.5], [b1.id, 0.15], [c1.id, 0.15], ['invalid-backend', 0.2]];
    for (const [key, p] of expected) expect(Math.abs((s.get(key) ?? 0) - p)).toBeLessThanOrEqual(0.01);
  });
});

describe('seededRandom (test helper)', () => {
  it('is deterministic per seed and stays in [0, 1)', () => {
    const x = seededRandom(42);
    const y = seededRandom(42);
    const xs = Array.from({ length: 1000 }, () => x());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => y()));
    expect(xs.every((v) => v >= 0 && v < 1)).toBe(true);
    expect(seededRandom(43)()).not.toBe(xs[0]);
  });
});
