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
 * of this process's time: wall-clock time less the time the OS did not run this process (another
 * test file, another suite on a loaded CI machine). That time is what a 10 ms timer fires late by
 * beyond the CPU time the process spent meanwhile, so work this process does itself (the router
 * under test, in process) still counts against the bound.
 */
export async function eventuallyWithin<T>(check: () => T | Promise<T>, boundMs: number, what: string, giveUpMs = 15_000): Promise<T> {
  const tickMs = 10;
  let descheduled = 0;
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  const meter = setInterval(() => {
    const now = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    const late = now - last - tickMs - 2; // timer jitter is no lost time
    const off = now - last - (cpu.user + cpu.system) / 1000;
    descheduled += Math.max(0, Math.min(late, off));
    last = now;
    lastCpu = process.cpuUsage();
  }, tickMs);
  const t0 = performance.now();
  let result: T;
  try {
    result = await eventually(check, giveUpMs, tickMs);
  } finally {
    clearInterval(meter);
  }
  const elapsed = performance.now() - t0;
  if (elapsed - descheduled >= boundMs) {
    throw new Error(`${what}: took ${Math.round(elapsed)} ms, ${Math.round(elapsed - descheduled)} ms of it while this process ran (${Math.round(descheduled)} ms it waited for a CPU), over ${boundMs} ms`);
  }
  return result;
}
