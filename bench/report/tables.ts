/** Markdown table helpers of the bench reports. */
import type { Cell } from '../lib/types.js';

export const n = (v: number | undefined, d = 2): string => (v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));
const row = (cells: readonly (string | number)[]): string => `| ${cells.join(' | ')} |`;
export const table = (head: readonly string[], rows: readonly (readonly (string | number)[])[]): string =>
  [row(head), row(head.map(() => '---')), ...rows.map(row)].join('\n');

export function cellRows(cells: readonly Cell<string>[]): (string | number)[][] {
  return cells.map((c) => [
    c.label,
    c.setup,
    c.throughput.toFixed(0),
    n(c.latencyMs.p50, 3),
    n(c.latencyMs.p90, 3),
    n(c.latencyMs.p99, 3),
    n(c.latencyMs.p999, 3),
    n(c.proxy?.cpuMsPerRequest, 3),
    n(c.proxy?.cpuPct, 0),
    n(c.proxy?.rssMaxMb, 0),
    n(c.epp?.cpuMsPerRequest, 3),
    c.generatorCpuPct,
    c.errors ? `${c.errors} (${(c.firstError ?? '').slice(0, 40)})` : 0,
  ]);
}
