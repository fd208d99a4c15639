/**
 * The failover order of a rule: usable candidates tier by tier (ready before
 * saturated; prefer-local: local before remote in each), by effective weight
 * descending within a tier, ties in rule order, each id once. Not-ready and
 * ejected candidates are included only in panic mode (when nothing else is).
 * Off the hot path: built when the data path first asks for fallbacks.
 */
import type { SaturationThresholds, SignalView } from '../signals/types.js';
import type { Candidate, RouteRule } from '../snapshot/types.js';
import type { PickPolicy } from '../config/pick-policy.js';
import { classOfTier, NONE, S, scan, tierCount, tierWeights, UNAVAILABLE } from './weights.js';

export function candidateOrder(
  rule: RouteRule,
  view: SignalView,
  policy: PickPolicy,
  thresholds: SaturationThresholds | undefined,
  exclude?: string,
): Candidate[] {
  scan(rule, view, policy, thresholds);
  const flat: Candidate[] = [];
  for (const g of rule.backends) for (const c of g.candidates) flat.push(c);
  const panic = S.bestTier !== NONE && classOfTier(S.bestTier, policy) === UNAVAILABLE;
  const seen = new Set<string>();
  if (exclude !== undefined) seen.add(exclude);
  const out: Candidate[] = [];
  const members: number[] = [];
  const weights: number[] = [];
  const tiers = tierCount(policy);
  for (let tr = 0; tr < tiers; tr++) {
    if (!panic && classOfTier(tr, policy) === UNAVAILABLE) continue;
    if (!(tierWeights(rule, policy, tr) > 0)) continue;
    members.length = 0;
    for (let i = 0; i < S.n; i++) {
      if (S.tier[i] !== tr) continue;
      members.push(i);
      weights[i] = S.eff[i]!;
    }
    members.sort((a, b) => weights[b]! - weights[a]! || a - b);
    for (const i of members) {
      const c = flat[i]!;
      if (seen.has(c.id)) continue;
      seen.add(c.id);
      out.push(c);
    }
  }
  return out;
}
