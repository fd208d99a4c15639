/**
 * Seeded fuzzing for parsers and decoders of untrusted input: reproducible
 * (mulberry32 from a seed; FUZZ_SEED=n reruns one, FUZZ_SEED=random picks a
 * new one), and a failure names the seed and the iteration. Each input's run
 * time is bounded: the code under test is synchronous, so that time is the
 * event-loop delay the input would cause in the router. It is measured as work
 * done (work-time.ts: the smaller of CPU and wall-clock time), so a loaded CI
 * machine that runs other processes in between does not fail a fast input.
 */
import { seededRandom } from './random.js';
import { describeWorkTime, timeWork, type WorkTime } from './work-time.js';

export interface Rng {
  /** [0, 1) */
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Buffer;
  /** `n` characters drawn from `alphabet`. */
  text(n: number, alphabet: string): string;
}

export function rng(seed: number): Rng {
  const next = seededRandom(seed);
  const int = (n: number): number => Math.floor(next() * n);
  return {
    next,
    int,
    chance: (p) => next() < p,
    pick: (items) => items[int(items.length)]!,
    bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))),
    text: (n, alphabet) => Array.from({ length: n }, () => alphabet[int(alphabet.length)]).join(''),
  };
}

/** The seed for this run: FUZZ_SEED (a number, or "random"), else `fallback`. */
export function fuzzSeed(fallback: number): number {
  const env = process.env['FUZZ_SEED'];
  if (env === 'random') return Math.floor(Math.random() * 2 ** 31);
  return env !== undefined && env !== '' ? Number(env) : fallback;
}

export interface FuzzOptions {
  readonly iterations: number;
  /** Longest one input may take (ms of work, see work-time.ts): the event-loop delay bound. */
  readonly maxInputMs: number;
}

/**
 * Runs `body` on `iterations` inputs from one seed. `body` returns nothing or
 * throws; any failure (an assertion, an unexpected exception, an input over
 * maxInputMs) is rethrown naming the seed and iteration.
 */
export function fuzz(name: string, seed: number, o: FuzzOptions, body: (r: Rng, i: number) => void): { slowestMs: number } {
  const r = rng(seed);
  let slowestMs = 0;
  for (let i = 0; i < o.iterations; i++) {
    let t: WorkTime;
    try {
      t = timeWork(() => body(r, i));
    } catch (e) {
      throw new Error(`fuzz "${name}" failed at iteration ${i} (seed ${seed}; rerun with FUZZ_SEED=${seed}): ${(e as Error)?.stack ?? String(e)}`);
    }
    slowestMs = Math.max(slowestMs, t.ms);
    if (t.ms > o.maxInputMs) {
      throw new Error(`fuzz "${name}": iteration ${i} took ${describeWorkTime(t)}, over ${o.maxInputMs} ms (seed ${seed}; rerun with FUZZ_SEED=${seed})`);
    }
  }
  return { slowestMs };
}

/** Calls `fn`; returns the error it threw, or undefined. Fails on errors that mean a bug rather than bad input. */
export function expectOnlyTypedErrors(fn: () => unknown, allowed: readonly (new (...a: never[]) => Error)[]): Error | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof Error)) throw new Error(`threw a non-Error: ${String(e)}`);
    if (/Maximum call stack/.test(e.message)) throw new Error(`stack overflow: ${e.message}`);
    if (e instanceof TypeError || e instanceof ReferenceError || !allowed.some((c) => e instanceof c)) {
      throw new Error(`unexpected ${e.constructor.name}: ${e.message}`);
    }
    return e;
  }
}
