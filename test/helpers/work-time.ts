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
