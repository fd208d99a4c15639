/**
 * Seeded fuzzing of the Prometheus text parser: mutated real payloads and
 * pathological token shapes. It never throws, answers ok or a failing line
 * inside the payload, and no input costs more than a bounded time (the
 * event-loop delay a scrape could cause).
 */
import { describe, expect, it } from 'vitest';
import { parsePromText, parsePromTextAsync, type PromParseResult } from '../../src/signals/prom-text.js';
import { fuzz, fuzzSeed, rng, type Rng } from '../helpers/fuzz.js';
import { withLoopDelay } from '../harness/loop-delay.js';

const REAL = [
  '# HELP inference_pool_average_queue_size Average queue size',
  '# TYPE inference_pool_average_queue_size gauge',
  'inference_pool_average_queue_size{name="pool-a"} 1.5',
  'inference_pool_ready_pods{name="pool-a",namespace="default"} 3 1700000000000',
  'llm_d_epp_kv_cache_utilization{name="p",escaped="a\\"b\\\\c\\n"} 0.25',
  'h_bucket{le="+Inf"} 2',
  'up NaN',
  'a_total 1 # {trace_id="x"} 0.5',
  '# EOF',
].join('\n');

const SPECIAL = '{}",=\\# \t\n\r.eE+-0123456789aZ_:\u00e9\ufeff';

function mutate(r: Rng, text: string): string {
  let s = text;
  for (let n = 1 + r.int(4); n > 0; n--) {
    const at = r.int(s.length + 1);
    switch (r.int(5)) {
      case 0: // insert special characters
        s = s.slice(0, at) + r.text(1 + r.int(8), SPECIAL) + s.slice(at);
        break;
      case 1: // delete a range
        s = s.slice(0, at) + s.slice(at + r.int(20));
        break;
      case 2: // duplicate a range
        s = s.slice(0, at) + s.slice(at, at + r.int(200)).repeat(1 + r.int(50)) + s.slice(at);
        break;
      case 3: // truncate
        s = s.slice(0, at);
        break;
      default: // random bytes as latin-1
        s = s.slice(0, at) + r.bytes(1 + r.int(16)).toString('latin1') + s.slice(at);
    }
  }
  return s;
}

/** Long runs of the shapes backtracking parsers choke on. */
function pathological(r: Rng): string {
  const n = 1000 + r.int(100_000);
  const run = (c: string) => c.repeat(n);
  return r.pick([
    () => `m ${run('1')}x\n`,
    () => `m ${run('1')}.${run('1')}e\n`,
    () => `m{a="${run('\\\\')}"} 1\n`,
    () => `m{a="${run('\\"')}\n`,
    () => `m{${run('a="b",')}} 1\n`,
    () => `${run('m')} 1\n`,
    () => run('{'),
    () => run('#'),
    () => `# HELP m ${run('\\n')}\n`,
    () => run('m 1\n'),
    () => `m 1 ${run('9')}\n`,
    () => run(' '),
  ])();
}

function checkResult(text: string, r: PromParseResult = parsePromText(text)): void {
  if (r.ok) {
    expect(r.samples.every((s) => typeof s.value === 'number' && s.name.length > 0)).toBe(true);
  } else {
    expect(r.message.length).toBeGreaterThan(0);
    expect(r.line).toBeGreaterThanOrEqual(0);
    expect(r.line).toBeLessThanOrEqual(text.split('\n').length);
  }
}

describe('fuzz: Prometheus text parser', () => {
  it('mutated real payloads: never throws, a result or a line inside the payload', () => {
    const seed = fuzzSeed(11_3001);
    fuzz('prom mutated', seed, { iterations: 1500, maxInputMs: 100 }, (r) => checkResult(mutate(r, REAL)));
  });

  it('pathological tokens up to 100 KB: parsed as the scraper does (async, pool series kept), event-loop delay under 100 ms each', { retry: 2 }, async () => {
    const seed = fuzzSeed(11_3002);
    const r = rng(seed);
    for (let i = 0; i < 60; i++) {
      const text = pathological(r);
      const { result, maxDelayMs } = await withLoopDelay(() => parsePromTextAsync(text, { keep: (n) => n === 'inference_pool_ready_pods' }));
      checkResult(text, result);
      expect(maxDelayMs, `iteration ${i}, seed ${seed} (rerun with FUZZ_SEED=${seed})`).toBeLessThan(100);
    }
  });

  it('the async parser over a large mutated payload keeps event-loop delay bounded', { retry: 2 }, async () => {
    const seed = fuzzSeed(11_3003);
    const big = Array.from({ length: 20_000 }, (_v, i) => `inference_pool_ready_pods{name="pool-${i}"} ${i}`).join('\n');
    const r = rng(seed);
    const text = mutate(r, big);
    const { result, maxDelayMs } = await withLoopDelay(() => parsePromTextAsync(text));
    expect(result.ok || result.line > 0 || result.line === 0).toBe(true);
    expect(maxDelayMs, `seed ${seed}`).toBeLessThan(100);
  });
});
