/**
 * The selection core shared by the picker, its fallback order and the
 * explainer: classify every candidate of a rule, then compute effective
 * weights for one tier. Works in module-level scratch buffers (grown, never
 * shrunk) so a pick allocates nothing here; every caller is synchronous and
 * reads the buffers before the next call.
 *
 * Classes: ready-and-unsaturated (HEALTHY) < SATURATED < UNAVAILABLE
 * (not-ready, 0 ready pods, or ejected). Tiers: the class, or for
 * prefer-local class*2 + (remote ? 1 : 0). Primaries come from the best
 * non-empty tier; lower tiers are spillover, the unavailable tiers panic.
 *
 * Effective weight of a candidate in tier T: its backendRef weight split
 * among the backendRef's candidates in T in proportion to ready pods
 * (unknown pods count as the mean of the known ones; none known: equally;
 * unavailable tiers: equally), times its headroom for least-loaded.
 */
import { DEFAULT_SATURATION } from '../config/defaults.js';
import { type CandidateSignals, type SaturationThresholds, type SignalView } from '../signals/types.js';
import type { RouteRule } from '../snapshot/types.js';
import type { PickPolicy } from '../config/pick-policy.js';

export const HEALTHY = 0;
export const SATURATED = 1;
export const UNAVAILABLE = 2;
/** Tier of a candidate in a weight-0 backendRef: never picked, never a fallback. */
export const NONE = 255;

/** least-loaded: a ready candidate at (or past) its thresholds keeps this much headroom, so it still draws a trickle. */
export const HEADROOM_FLOOR = 0.05;

export function isUnavailable(s: CandidateSignals): boolean {
  return s.ejected || s.ready === 'not-ready' || s.readyPods === 0;
}

/** With thresholds: re-derived from the queue / KV metrics when known; otherwise the view's flag. */
export function isSaturated(s: CandidateSignals, t: SaturationThresholds | undefined): boolean {
  if (t === undefined || (s.queueSize === undefined && s.kvCache === undefined)) return s.saturated === true;
  return (s.queueSize ?? 0) > t.queueSize || (s.kvCache ?? 0) > t.kvCache;
}

export function classOf(s: CandidateSignals, t: SaturationThresholds | undefined): number {
  return isUnavailable(s) ? UNAVAILABLE : isSaturated(s, t) ? SATURATED : HEALTHY;
}

function free(value: number, threshold: number): number {
  return threshold > 0 ? 1 - value / threshold : value > 0 ? 0 : 1;
}

/** Free capacity in [HEADROOM_FLOOR, 1] below the thresholds; NaN when no load metric is known. */
export function headroom(s: CandidateSignals, t: SaturationThresholds): number {
  if (s.queueSize === undefined && s.kvCache === undefined) return NaN;
  let h = 1;
  if (s.queueSize !== undefined) h = Math.min(h, free(s.queueSize, t.queueSize));
  if (s.kvCache !== undefined) h = Math.min(h, free(s.kvCache, t.kvCache));
  return h < HEADROOM_FLOOR ? HEADROOM_FLOOR : h; // NaN (a NaN metric) stays NaN: unknown
}

export function tierCount(policy: PickPolicy): number {
  return policy === 'prefer-local' ? 6 : 3;
}

export function classOfTier(tier: number, policy: PickPolicy): number {
  return policy === 'prefer-local' ? tier >> 1 : tier;
}

/** Scratch state of the last scan(); index i = i-th candidate over rule.backends in order. */
export const S = {
  n: 0,
  tier: new Uint8Array(16),
  eff: new Float64Array(16),
  /** Ready pods, NaN when unknown. */
  pods: new Float64Array(16),
  /** Headroom (least-loaded only), NaN when unknown. */
  head: new Float64Array(16),
  headSum: new Float64Array(6),
  headCount: new Float64Array(6),
  /** Best (lowest) tier present among weighted candidates; NONE when there is none. */
  bestTier: NONE,
  /** Sum of the weights of weighted backendRefs with candidates / without any. */
  validTotal: 0,
  invalidTotal: 0,
  /** A weighted backendRef has a local candidate / a saturated candidate. */
  hasLocal: false,
  hasSaturated: false,
};

function ensure(n: number): void {
  if (S.tier.length >= n) return;
  let size = S.tier.length;
  while (size < n) size *= 2;
  S.tier = new Uint8Array(size);
  S.eff = new Float64Array(size);
  S.pods = new Float64Array(size);
  S.head = new Float64Array(size);
}

/** Classifies every candidate of the rule into S. */
export function scan(rule: RouteRule, view: SignalView, policy: PickPolicy, t: SaturationThresholds | undefined): void {
  const backends = rule.backends;
  let n = 0;
  for (let g = 0; g < backends.length; g++) n += backends[g]!.candidates.length;
  ensure(n);
  const preferLocal = policy === 'prefer-local';
  const leastLoaded = policy === 'least-loaded';
  const ht = t ?? DEFAULT_SATURATION;
  const { tier, pods, head, headSum, headCount } = S;
  headSum.fill(0);
  headCount.fill(0);
  let best = NONE;
  let valid = 0;
  let invalid = 0;
  let hasLocal = false;
  let hasSaturated = false;
  let i = 0;
  for (let g = 0; g < backends.length; g++) {
    const group = backends[g]!;
    const w = group.weight;
    const cs = group.candidates;
    if (!(w > 0)) {
      for (let j = 0; j < cs.length; j++) tier[i++] = NONE;
      continue;
    }
    if (cs.length === 0) {
      invalid += w;
      continue;
    }
    valid += w;
    for (let j = 0; j < cs.length; j++, i++) {
      const c = cs[j]!;
      const s = view.get(c.id);
      const cls = classOf(s, t);
      const tr = preferLocal ? cls * 2 + (c.local ? 0 : 1) : cls;
      if (c.local) hasLocal = true;
      if (cls === SATURATED) hasSaturated = true;
      tier[i] = tr;
      if (tr < best) best = tr;
      const p = s.readyPods;
      pods[i] = p !== undefined && p > 0 && p < Infinity ? p : NaN;
      if (leastLoaded) {
        const h = headroom(s, ht);
        head[i] = h;
        if (h === h) {
          headSum[tr] = headSum[tr]! + h;
          headCount[tr] = headCount[tr]! + 1;
        }
      }
    }
  }
  S.n = n;
  S.bestTier = best;
  S.validTotal = valid;
  S.invalidTotal = invalid;
  S.hasLocal = hasLocal;
  S.hasSaturated = hasSaturated;
}

/** Mean known ready pods of flat indices [i0, i0 + m) after scan(); 1 when none is known. */
export function meanPods(i0: number, m: number): number {
  let known = 0;
  let sum = 0;
  for (let j = i0; j < i0 + m; j++) {
    const p = S.pods[j]!;
    if (p === p) {
      known++;
      sum += p;
    }
  }
  return known > 0 ? sum / known : 1;
}

/**
 * The candidate (flat index) the plain Gateway API split would give a draw at
 * fraction `u` of backendRef `g`'s slice, whose first candidate is flat index
 * `i0`: by ready pods (unknown: the mean of the known; none known: equally),
 * whatever the candidates' state. Used to tell spillover picks apart.
 */
export function nominalIndex(rule: RouteRule, g: number, i0: number, u: number): number {
  const m = rule.backends[g]!.candidates.length;
  const pods = S.pods;
  const mean = meanPods(i0, m);
  let all = 0;
  for (let j = i0; j < i0 + m; j++) all += pods[j] === pods[j] ? pods[j]! : mean;
  const x = u * all;
  let acc = 0;
  for (let j = i0; j < i0 + m; j++) {
    const p = pods[j]!;
    acc += p === p ? p : mean;
    if (x < acc) return j;
  }
  return i0 + m - 1;
}

/** Effective weights of tier `tr` into S.eff (0 outside the tier), after scan(); returns their sum. */
export function tierWeights(rule: RouteRule, policy: PickPolicy, tr: number): number {
  const backends = rule.backends;
  const { tier, eff, pods, head } = S;
  const useCapacity = classOfTier(tr, policy) !== UNAVAILABLE;
  const scale = useCapacity && policy === 'least-loaded';
  const meanHead = S.headCount[tr]! > 0 ? S.headSum[tr]! / S.headCount[tr]! : 1;
  let total = 0;
  let i = 0;
  for (let g = 0; g < backends.length; g++) {
    const group = backends[g]!;
    const start = i;
    const end = i + group.candidates.length;
    i = end;
    let members = 0;
    let known = 0;
    let knownSum = 0;
    for (let j = start; j < end; j++) {
      if (tier[j] !== tr) continue;
      members++;
      const p = pods[j]!;
      if (useCapacity && p === p) {
        known++;
        knownSum += p;
      }
    }
    if (members === 0) {
      for (let j = start; j < end; j++) eff[j] = 0;
      continue;
    }
    const mean = known > 0 ? knownSum / known : 1;
    const share = group.weight / (knownSum + (members - known) * mean);
    for (let j = start; j < end; j++) {
      if (tier[j] !== tr) {
        eff[j] = 0;
        continue;
      }
      const p = pods[j]!;
      let e = share * (useCapacity && p === p ? p : mean);
      if (scale) {
        const h = head[j]!;
        e *= h === h ? h : meanHead;
      }
      eff[j] = e;
      total += e;
    }
  }
  return total;
}
