/**
 * Deterministic random sources for tests: a seeded mulberry32 PRNG returning
 * floats in [0, 1), and a scripted source that replays fixed values.
 */
import type { RandomSource } from '../../src/picker/types.js';

/** mulberry32: tiny, fast, good enough statistically for weighted-split tests. */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Replays `values` in order (cycling), for tests that need an exact draw. */
export function scriptedRandom(values: readonly number[]): RandomSource {
  if (values.length === 0) throw new Error('scriptedRandom needs at least one value');
  let i = 0;
  return () => {
    const v = values[i % values.length]!;
    i += 1;
    return v;
  };
}
