/** What the bench reads from a running router's admin server. */
import type { RouterProcess } from './proc.js';
import type { DataPathResults } from './types.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The router's process metrics from its admin endpoint (prom-client default metrics), MiB. */
export async function routerMemory(router: RouterProcess): Promise<DataPathResults['routerMemoryAfterLoad']> {
  const mb = (text: string, name: string): number => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'm').exec(text);
    return m ? Math.round((Number(m[1]) / 1048576) * 10) / 10 : NaN;
  };
  try {
    const text = await (await fetch(`http://${router.admin}/metrics`)).text();
    return {
      rssMb: mb(text, 'process_resident_memory_bytes'),
      heapUsedMb: mb(text, 'nodejs_heap_size_used_bytes'),
      heapTotalMb: mb(text, 'nodejs_heap_size_total_bytes'),
      externalMb: mb(text, 'nodejs_external_memory_bytes'),
    };
  } catch {
    return { rssMb: NaN, heapUsedMb: NaN, heapTotalMb: NaN, externalMb: NaN };
  }
}

/** Waits until `want` candidates are ready with fresh metrics; returns the router's view (id -> readiness). */
export async function waitForSignals(router: RouterProcess, want: number, timeoutMs: number): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  let last: Record<string, string> = {};
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`http://${router.admin}/debug/signals`);
      const body = (await res.json()) as { candidates: Record<string, { ready: string; readyPods?: number }> };
      last = Object.fromEntries(Object.entries(body.candidates).map(([id, s]) => [id, `${s.ready}${s.readyPods !== undefined ? ` pods=${s.readyPods}` : ''}`]));
      const live = Object.values(body.candidates).filter((s) => s.ready === 'ready' && s.readyPods !== undefined).length;
      if (live >= want) return last;
    } catch {
      // not yet
    }
    await sleep(200);
  }
  process.stderr.write(`[bench] warning: router signals not all live after ${timeoutMs} ms: ${JSON.stringify(last)}\n`);
  return last;
}
