/** Merging measured windows into cells, and the router-vs-floor/direct comparisons. */
import { encodeHistogram, mergeHistograms, summarize } from './hist.js';
import { loadLabel, type Cell, type Comparison, type Load, type ProcessUsage, type Setup, type Variant, type WindowResult } from './types.js';

/** One generator window plus what the servers spent during it. */
export interface Measured {
  readonly window: WindowResult;
  readonly proxyCpuMs: number;
  readonly eppCpuMs: number;
  readonly proxyRss: number;
  readonly eppRss: number;
}

function usage(cpuMs: number, requests: number, elapsedMs: number, rss: number): ProcessUsage {
  return { cpuMs, cpuMsPerRequest: requests > 0 ? cpuMs / requests : NaN, cpuPct: (cpuMs / elapsedMs) * 100, rssMaxMb: Math.round(rss * 10) / 10 };
}

export function mergeCell<S extends string = Setup>(setup: S, variant: Variant, load: Load, parts: readonly Measured[]): Cell<S> {
  const requests = parts.reduce((a, p) => a + p.window.requests, 0);
  const errors = parts.reduce((a, p) => a + p.window.errors, 0);
  const elapsedMs = parts.reduce((a, p) => a + p.window.elapsedMs, 0);
  const h = mergeHistograms(parts.map((p) => p.window.histogram));
  const genCpu = parts.reduce((a, p) => a + p.window.generatorCpuPct * p.window.elapsedMs, 0) / elapsedMs;
  const proxyCpu = parts.reduce((a, p) => a + p.proxyCpuMs, 0);
  const eppCpu = parts.reduce((a, p) => a + p.eppCpuMs, 0);
  const firstError = parts.find((p) => p.window.firstError)?.window.firstError;
  const parts0 = parts[0]!;
  return {
    setup,
    variant,
    load,
    label: loadLabel(load),
    requests,
    errors,
    durationS: elapsedMs / 1000,
    throughput: Math.round((requests / elapsedMs) * 1000 * 10) / 10,
    latencyMs: summarize(h),
    histogram: parts.length === 1 ? parts0.window.histogram : encodeHistogram(h),
    generatorCpuPct: Math.round(genCpu),
    ...(setup === 'direct' ? {} : { proxy: usage(proxyCpu, requests, elapsedMs, Math.max(...parts.map((p) => p.proxyRss))) }),
    ...(setup === 'parent' ? {} : { epp: usage(eppCpu, requests, elapsedMs, Math.max(...parts.map((p) => p.eppRss))) }),
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

export function compare(cells: readonly Cell[]): Comparison[] {
  const out: Comparison[] = [];
  const find = (s: Setup, v: Variant, label: string) => cells.find((c) => c.setup === s && c.variant === v && c.label === label);
  for (const r of cells.filter((c) => c.setup === 'router')) {
    const floor = find('floor', r.variant, r.label);
    const direct = find('direct', r.variant, r.label);
    const parent = find('parent', r.variant, r.label);
    const h2floor = find('h2floor', r.variant, r.label);
    if (!floor || !direct || !parent) continue;
    const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;
    const diff = (a: number, b: number): number => Math.round((a - b) * 1000) / 1000;
    out.push({
      variant: r.variant,
      label: r.label,
      routerOverFloor: {
        p50: ratio(r.latencyMs.p50, floor.latencyMs.p50),
        p99: ratio(r.latencyMs.p99, floor.latencyMs.p99),
        throughput: ratio(r.throughput, floor.throughput),
      },
      routerMinusDirect: {
        p50: diff(r.latencyMs.p50, direct.latencyMs.p50),
        p90: diff(r.latencyMs.p90, direct.latencyMs.p90),
        p99: diff(r.latencyMs.p99, direct.latencyMs.p99),
      },
      parentOverFloor: { p50: ratio(parent.latencyMs.p50, floor.latencyMs.p50), throughput: ratio(parent.throughput, floor.throughput) },
      cpuPerRequestRatio: ratio(r.proxy?.cpuMsPerRequest ?? NaN, floor.proxy?.cpuMsPerRequest ?? NaN),
      ...(h2floor
        ? {
            h2floorMinusDirect: { p50: diff(h2floor.latencyMs.p50, direct.latencyMs.p50), p99: diff(h2floor.latencyMs.p99, direct.latencyMs.p99) },
            cpuOverH2Floor: ratio(r.proxy?.cpuMsPerRequest ?? NaN, h2floor.proxy?.cpuMsPerRequest ?? NaN),
          }
        : {}),
    });
  }
  return out;
}
