/**
 * ReconcileLoop: one pass at a time, one rerun for triggers during a pass,
 * retries with doubling backoff after a failure, a bounded stop. Timers are
 * vitest's fake timers, so delays are exact.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ReconcileLoop, type ReconcileLoopOptions } from '../../src/controller/reconcile-loop.js';

/** A pass the test ends by hand; records when each pass started and how many ran at once. */
class ScriptedPass {
  readonly starts: number[] = [];
  private pending: { resolve: (v: boolean) => void; reject: (e: unknown) => void }[] = [];
  active = 0;
  maxActive = 0;

  readonly run = (): Promise<boolean> => {
    this.starts.push(Date.now());
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    return new Promise<boolean>((resolve, reject) => this.pending.push({ resolve, reject })).finally(() => this.active--);
  };

  /** Ends the running pass: true = it failed. */
  async end(failed = false): Promise<void> {
    const p = this.pending.shift();
    if (!p) throw new Error('no pass is running');
    p.resolve(failed);
    await vi.advanceTimersByTimeAsync(0);
  }

  async throwError(err: Error): Promise<void> {
    const p = this.pending.shift();
    if (!p) throw new Error('no pass is running');
    p.reject(err);
    await vi.advanceTimersByTimeAsync(0);
  }
}

const loops: ReconcileLoop<boolean>[] = [];
function loopOf(pass: ScriptedPass, o: Partial<ReconcileLoopOptions<boolean>> = {}): ReconcileLoop<boolean> {
  const loop = new ReconcileLoop<boolean>({ pass: pass.run, failed: (f) => f, retryInitialMs: 100, retryMaxMs: 400, onError: () => undefined, ...o });
  loops.push(loop);
  return loop;
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(async () => {
  const stopping = Promise.all(loops.splice(0).map((l) => l.stop()));
  await vi.runAllTimersAsync();
  await stopping;
  vi.useRealTimers();
});

describe('ReconcileLoop', () => {
  it('runs one pass at a time: triggers during a pass coalesce into exactly one more', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass);
    loop.start();
    expect(pass.starts).toHaveLength(1);
    loop.trigger();
    loop.trigger();
    loop.trigger();
    await vi.advanceTimersByTimeAsync(0);
    expect(pass.starts).toHaveLength(1);
    await pass.end();
    expect(pass.starts).toHaveLength(2);
    await pass.end();
    await vi.advanceTimersByTimeAsync(1000);
    expect(pass.starts).toHaveLength(2);
    expect(pass.maxActive).toBe(1);
  });

  it('a trigger during the rerun queues another; an idle loop runs at once', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass);
    loop.trigger();
    loop.trigger();
    await pass.end();
    loop.trigger(); // during the rerun
    await pass.end();
    expect(pass.starts).toHaveLength(3);
    await pass.end();
    loop.trigger(); // idle
    expect(pass.starts).toHaveLength(4);
    await pass.end();
    expect(pass.maxActive).toBe(1);
  });

  it('reconcile() waits for the running pass, then runs one and returns its result', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass, { failed: () => false });
    loop.trigger();
    let result: boolean | undefined;
    const done = loop.reconcile().then((r) => (result = r));
    await vi.advanceTimersByTimeAsync(0);
    expect(pass.starts).toHaveLength(1);
    await pass.end(false);
    expect(pass.starts).toHaveLength(2);
    expect(result).toBeUndefined();
    await pass.end(true);
    await done;
    expect(result).toBe(true);
  });

  it('a failed pass is retried after 100, 200, 400, 400, 400 ms (max 400); a success resets the delay', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass);
    loop.start();
    const failedAt: number[] = [];
    for (let i = 0; i < 5; i++) {
      failedAt.push(Date.now());
      await pass.end(true);
      await vi.advanceTimersByTimeAsync(1000);
    }
    expect(pass.starts.slice(1).map((t, i) => t - failedAt[i]!)).toEqual([100, 200, 400, 400, 400]);
    // Succeeds: no more retries; the next failure waits the initial delay again.
    await pass.end(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(pass.starts).toHaveLength(6);
    loop.trigger();
    const lastFailure = Date.now();
    await pass.end(true);
    await vi.advanceTimersByTimeAsync(99);
    expect(pass.starts).toHaveLength(7);
    await vi.advanceTimersByTimeAsync(1);
    expect(pass.starts.at(-1)! - lastFailure).toBe(100);
  });

  it('a pass that throws is reported and retried like a failed one; reconcile() rejects with its error', async () => {
    const pass = new ScriptedPass();
    const errors: unknown[] = [];
    const loop = loopOf(pass, { onError: (e) => errors.push(e) });
    const boom = new Error('boom');
    const r = loop.reconcile();
    const rejected = expect(r).rejects.toBe(boom);
    await pass.throwError(boom);
    await rejected;
    expect(errors).toEqual([boom]);
    await vi.advanceTimersByTimeAsync(100);
    expect(pass.starts).toHaveLength(2);
    await pass.end(false);
  });

  it('a success while a retry is pending cancels it', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass);
    loop.trigger();
    await pass.end(true);
    loop.trigger();
    await pass.end(false);
    await vi.advanceTimersByTimeAsync(1000);
    expect(pass.starts).toHaveLength(2);
  });

  it('triggers a pass every resyncMs', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass, { resyncMs: 1000 });
    loop.start();
    await pass.end();
    await vi.advanceTimersByTimeAsync(999);
    expect(pass.starts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(pass.starts).toEqual([0, 1000]);
    await pass.end();
  });

  it('stop() waits for a hung pass at most stopTimeoutMs; nothing runs afterwards', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass, { resyncMs: 1000, stopTimeoutMs: 300 });
    loop.start();
    loop.trigger(); // a rerun queued behind the hung pass
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(299);
    expect(stopped).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await stopping;
    expect(stopped).toBe(true);
    await pass.end(true); // it ends late, failed: no rerun, no retry
    loop.trigger();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pass.starts).toHaveLength(1);
  });

  it('stop() of an idle loop returns at once and cancels a pending retry', async () => {
    const pass = new ScriptedPass();
    const loop = loopOf(pass);
    loop.trigger();
    await pass.end(true);
    await loop.stop();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(pass.starts).toHaveLength(1);
  });
});
