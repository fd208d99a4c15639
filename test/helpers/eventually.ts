import { withinProcessMs } from './work-time.js';

/** Polls `check` until it stops throwing or `timeoutMs` passes; then rethrows its last error. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 2000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/**
 * Polls `check` like eventually() (giving up after `giveUpMs`), then asserts it passed within `boundMs`
 * of this process's time (withinProcessMs() in work-time.ts: wall-clock time less the time the OS did not
 * run this process), so work this process does itself (the router under test, in process) still counts.
 */
export function eventuallyWithin<T>(check: () => T | Promise<T>, boundMs: number, what: string, giveUpMs = 15_000): Promise<T> {
  return withinProcessMs(boundMs, what, () => eventually(check, giveUpMs, 10));
}
