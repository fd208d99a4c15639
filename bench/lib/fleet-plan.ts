/**
 * Pure parts of the fleet cell: member and pool names, the local member's
 * routes (one per pool name, each to the InferencePoolImport of that name),
 * the churn schedule, and the slope of a cost over the fleet's size.
 */
export const FLEET_NAMESPACE = 'default';
export const memberName = (i: number): string => `member-${String(i).padStart(2, '0')}`;
/** The exported pools every member holds from the start. */
export const steadyPools = (pools: number): string[] => Array.from({ length: pools }, (_, i) => `pool-${i}`);
/** Pools written once each to time a new export. */
export const probePools = (trials: number): string[] => Array.from({ length: trials }, (_, i) => `probe-${i}`);
/** Names the churn cycles through (at most `live` at once, so a name is free again before it is reused). */
export const churnPools = (live: number): string[] => Array.from({ length: 2 * live }, (_, i) => `churn-${i}`);

/** One write of the churn: an exported pool added to a member, or removed from it. */
export interface ChurnOp {
  readonly op: 'add' | 'delete';
  readonly member: string;
  readonly pool: string;
}

/**
 * `count` writes spreading adds over the members (a stride through them), keeping `live`
 * churn pools at most: once that many are live, each add is preceded by deleting the oldest.
 */
export function churnSchedule(members: number, live: number, count: number): ChurnOp[] {
  const names = churnPools(live);
  const out: ChurnOp[] = [];
  const alive: { member: string; pool: string }[] = [];
  let added = 0;
  while (out.length < count) {
    if (alive.length >= live) {
      const old = alive.shift()!;
      out.push({ op: 'delete', ...old });
      continue;
    }
    const entry = { member: memberName((added * 7) % members), pool: names[added % names.length]! };
    added++;
    alive.push(entry);
    out.push({ op: 'add', ...entry });
  }
  return out;
}

/** Least-squares slope of y over x (NaN with fewer than two distinct x). */
export function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  if (sxx === 0) return NaN;
  return points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
}

/** The value at quantile q (0..1) of xs, nearest rank. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
