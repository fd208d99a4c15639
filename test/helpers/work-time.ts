/**
 * The cost of synchronous work, measured so that a time bound on it holds on a
 * loaded machine. The wall-clock time of a synchronous call also counts every
 * moment the OS ran another process instead of this one (CI runs test files in
 * parallel on 2 cores); the process's CPU time does not. A bound is checked
 * against the smaller of the two: an input that is slow to handle (quadratic,
 * backtracking, deep recursion) burns CPU on this thread and exceeds both, while
 * a machine busy with other work inflates only the wall clock, and CPU spent on
 * helper threads (GC, JIT) inflates only the CPU time.
 */
export interface WorkTime {
  /** Wall-clock time (ms). */
  readonly wallMs: number;
  /** CPU time of this process, user + system, all threads (ms). */
  readonly cpuMs: number;
  /** min(wallMs, cpuMs): what to compare with a bound on the work itself. */
  readonly ms: number;
}

/** Runs `fn` (synchronous) and reports its result and its cost. */
export function timeWork<T>(fn: () => T): WorkTime & { readonly result: T } {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { result, wallMs, cpuMs, ms: Math.min(wallMs, cpuMs) };
}

/** "12.3 ms (CPU 12.1 ms, wall 48.0 ms)", for failure messages. */
export function describeWorkTime(t: WorkTime): string {
  return `${t.ms.toFixed(1)} ms (CPU ${t.cpuMs.toFixed(1)} ms, wall ${t.wallMs.toFixed(1)} ms)`;
}

/** timeWork for asynchronous work: CPU time is the whole process's meanwhile, so use it where little else runs. */
export async function timeWorkAsync<T>(fn: () => Promise<T>): Promise<WorkTime & { readonly result: T }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  return { result, wallMs, cpuMs, ms: Math.min(wallMs, cpuMs) };
}

export interface ProcessClock {
  /** Wall-clock time since the clock started (or until stop()), less the time the OS did not run this process (ms). */
  ms(): number;
  /** "took 1200 ms, 300 ms of it while this process ran (900 ms it waited for a CPU)", for failure messages. */
  describe(): string;
  stop(): void;
}

/**
 * A clock for "this happens within N ms" bounds on asynchronous work (timeouts, failover, propagation)
 * that a loaded machine should not fail: the time the OS ran other processes instead of this one
 * (another test file, another suite) is measured and left out. That time is what a 10 ms timer fires
 * late by beyond the CPU time this process spent meanwhile; this process's own work (the code under
 * test, in process) and its idle waits (timers, sockets) still count.
 */
export function processClock(): ProcessClock {
  const tickMs = 10;
  const t0 = performance.now();
  let end: number | undefined;
  let descheduled = 0;
  let last = t0;
  let lastCpu = process.cpuUsage();
  const sample = () => {
    const now = performance.now();
    const cpu = process.cpuUsage(lastCpu);
    const late = now - last - tickMs - 2; // timer jitter is no lost time
    const off = now - last - (cpu.user + cpu.system) / 1000;
    descheduled += Math.max(0, Math.min(late, off));
    last = now;
    lastCpu = process.cpuUsage();
  };
  const meter = setInterval(sample, tickMs);
  const stop = () => {
    if (end !== undefined) return;
    sample();
    clearInterval(meter);
    end = performance.now();
  };
  const elapsed = () => (end ?? performance.now()) - t0;
  return {
    ms: () => elapsed() - descheduled,
    describe: () => `took ${Math.round(elapsed())} ms, ${Math.round(elapsed() - descheduled)} ms of it while this process ran (${Math.round(descheduled)} ms it waited for a CPU)`,
    stop,
  };
}

/** Runs `fn` and fails if it took `boundMs` or more of this process's time (processClock()); returns its result. */
export async function withinProcessMs<T>(boundMs: number, what: string, fn: () => Promise<T>): Promise<T> {
  const clock = processClock();
  let result: T;
  try {
    result = await fn();
  } finally {
    clock.stop();
  }
  if (clock.ms() >= boundMs) throw new Error(`${what}: ${clock.describe()}, over ${boundMs} ms`);
  return result;
}
