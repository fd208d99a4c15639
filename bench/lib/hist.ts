/**
 * HDR histograms of exchange latency, recorded in microseconds (1 µs to 60 s,
 * 3 significant digits), shipped between processes as compressed base64.
 */
import { build, decodeFromCompressedBase64, encodeIntoCompressedBase64, type Histogram } from 'hdr-histogram-js';
import type { LatencySummary } from './types.js';

export type { Histogram };

export function newHistogram(): Histogram {
  return build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3, bitBucketSize: 32 });
}

export function encodeHistogram(h: Histogram): string {
  return encodeIntoCompressedBase64(h);
}

export function decodeHistogram(s: string): Histogram {
  return decodeFromCompressedBase64(s, 32);
}

/** Merges encoded histograms into one. */
export function mergeHistograms(encoded: readonly string[]): Histogram {
  const out = newHistogram();
  for (const e of encoded) out.add(decodeHistogram(e));
  return out;
}

const ms = (us: number): number => Math.round(us) / 1000;

export function summarize(h: Histogram): LatencySummary {
  if (h.totalCount === 0) return { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN };
  return {
    p50: ms(h.getValueAtPercentile(50)),
    p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)),
    p999: ms(h.getValueAtPercentile(99.9)),
    max: ms(h.maxValue),
    mean: Math.round(h.mean) / 1000,
  };
}

/** Percentiles at which a distribution curve is drawn (x axis: 1 / (1 - p), log scale). */
export const CURVE_PERCENTILES = [0, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.75, 99.9, 99.95, 99.99] as const;

/** [percentile, latency ms] points of the distribution, ending at the max. */
export function curve(h: Histogram): [number, number][] {
  if (h.totalCount === 0) return [];
  // Past the resolution of the sample count a percentile is just the max.
  const limit = 100 * (1 - 1 / h.totalCount);
  const pts: [number, number][] = [];
  for (const p of CURVE_PERCENTILES) {
    if (p > limit && p > 50) break;
    pts.push([p, h.getValueAtPercentile(p) / 1000]);
  }
  pts.push([Math.min(99.999, Math.max(limit, pts.at(-1)?.[0] ?? 0)), h.maxValue / 1000]);
  return pts;
}
