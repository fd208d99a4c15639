import { describe, expect, it, vi } from 'vitest';
import { classifyError } from '../../../src/sources/kubernetes/api-errors.js';
import { Backoff, TokenBucket } from '../../../src/sources/kubernetes/backoff.js';
import { Coalescer } from '../../../src/sources/kubernetes/coalescer.js';
import { RESOURCE_SPECS } from '../../../src/sources/kubernetes/resources.js';

describe('Backoff', () => {
  it('doubles up to the cap, with jitter in [cap/2, cap], and resets', () => {
    const lo = new Backoff(100, 1000, () => 0);
    expect([lo.next(), lo.next(), lo.next(), lo.next(), lo.next(), lo.next()]).toEqual([50, 100, 200, 400, 500, 500]);
    const hi = new Backoff(100, 1000, () => 1);
    expect([hi.next(), hi.next(), hi.next()]).toEqual([100, 200, 400]);
    hi.reset();
    expect(hi.next()).toBe(100);
  });
});

describe('TokenBucket', () => {
  it('allows a burst, then paces to qps', async () => {
    const b = new TokenBucket(20, 2);
    const t0 = Date.now();
    for (let i = 0; i < 4; i++) await b.take();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(80);
  });
  it('unlimited without qps', async () => {
    const b = new TokenBucket(undefined);
    const t0 = Date.now();
    for (let i = 0; i < 1000; i++) await b.take();
    expect(Date.now() - t0).toBeLessThan(1000); // ~1 ms; paced at under 500 qps, 1,000 takes need over a second
  });
});

describe('Coalescer', () => {
  it('one fire per quiet period, and at most maxMs after the first trigger', () => {
    vi.useFakeTimers();
    try {
      const fire = vi.fn();
      const c = new Coalescer(fire, 100, 300);
      c.trigger();
      vi.advanceTimersByTime(50);
      c.trigger();
      vi.advanceTimersByTime(99);
      expect(fire).not.toHaveBeenCalled();
      vi.advanceTimersByTime(1);
      expect(fire).toHaveBeenCalledTimes(1);
      // A continuous stream of triggers every 50 ms still fires by 300 ms.
      for (let t = 0; t < 300; t += 50) {
        c.trigger();
        vi.advanceTimersByTime(50);
      }
      expect(fire).toHaveBeenCalledTimes(2);
      c.trigger();
      c.cancel();
      vi.advanceTimersByTime(1000);
      expect(fire).toHaveBeenCalledTimes(2);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('classifyError', () => {
  const spec = RESOURCE_SPECS.InferencePoolImport;
  it('maps HTTP statuses and transport errors to reasons', () => {
    expect(classifyError(Object.assign(new Error('x'), { code: 404, body: { message: 'not found' } }), spec)).toMatchObject({ reason: 'missing-crd' });
    expect(classifyError(Object.assign(new Error('x'), { statusCode: 403 }), spec).reason).toBe('auth');
    expect(classifyError(Object.assign(new Error('x'), { code: 401 }), spec).reason).toBe('auth');
    expect(classifyError(Object.assign(new Error('x'), { statusCode: 410 }), spec).reason).toBe('gone');
    expect(classifyError(Object.assign(new Error('x'), { code: 503 }), spec).reason).toBe('connect');
    const refused = Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    expect(classifyError(refused, spec)).toEqual({ reason: 'connect', message: 'fetch failed: ECONNREFUSED' });
  });
});
