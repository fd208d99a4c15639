/**
 * The pure picker. One random draw per pick over the rule's backendRef
 * weights:
 * - a draw that lands on an invalid backendRef (no pool) is 'invalid-backend'
 *   (Gateway API: its share gets 500) in every mode, spillover and panic
 *   included; panic never moves that share onto the valid pools;
 * - otherwise the draw's position among the valid weight is mapped onto the
 *   best non-empty tier (see weights.ts): ready and unsaturated candidates by
 *   effective weight; if none, the saturated ones (spillover); if none, every
 *   candidate anyway (panic). With all signals unknown, or all ready and
 *   unsaturated, this is exactly the Gateway API split.
 *
 * Allocation per pick: the result object only; the fallback order is built on
 * first access of `fallbacks` (i.e. only when the data path fails over).
 */
import { EMPTY_SIGNAL_VIEW, type SaturationThresholds, type SignalView } from '../signals/types.js';
import type { BackendGroup, Candidate, RouteRule } from '../snapshot/types.js';
import { candidateOrder } from './order.js';
import { DEFAULT_PICKER } from '../config/defaults.js';
import type { PickPolicy } from '../config/pick-policy.js';
import type { Picked, PickerSettings, PickReason, PickResult, RandomSource } from './types.js';
import { classOfTier, HEALTHY, nominalIndex, NONE, S, SATURATED, scan, tierWeights, UNAVAILABLE } from './weights.js';

class PickedCandidate implements Picked {
  readonly type = 'picked' as const;
  readonly #rule: RouteRule;
  readonly #view: SignalView;
  readonly #thresholds: SaturationThresholds | undefined;
  #fallbacks: readonly Candidate[] | undefined;

  constructor(
    readonly primary: Candidate,
    readonly group: BackendGroup,
    readonly reason: PickReason,
    readonly policy: PickPolicy,
    rule: RouteRule,
    view: SignalView,
    thresholds: SaturationThresholds | undefined,
  ) {
    this.#rule = rule;
    this.#view = view;
    this.#thresholds = thresholds;
  }

  get fallbacks(): readonly Candidate[] {
    this.#fallbacks ??= Object.freeze(candidateOrder(this.#rule, this.#view, this.policy, this.#thresholds, this.primary.id));
    return this.#fallbacks;
  }
}

/**
 * The reason a primary drawn from `tier` carries. `nominalSaturated`: the plain
 * Gateway API split would have given this draw to a saturated candidate.
 */
export function reasonOf(policy: PickPolicy, tier: number, hasLocal: boolean, nominalSaturated: boolean): PickReason {
  const cls = classOfTier(tier, policy);
  if (cls === UNAVAILABLE) return 'panic';
  if (cls === SATURATED) return 'spillover';
  if (policy === 'prefer-local') return tier === 0 ? 'prefer-local' : hasLocal ? 'spillover' : 'weighted';
  if (nominalSaturated) return 'spillover';
  return policy === 'least-loaded' ? 'least-loaded' : 'weighted';
}

function ruleName(rule: RouteRule): string {
  return `rule ${rule.index} of HTTPRoute ${rule.route.namespace}/${rule.route.name}`;
}

function unavailable(rule: RouteRule): PickResult {
  const refused = rule.unsupported;
  return {
    type: 'unavailable',
    message: refused !== undefined
      ? `${ruleName(rule)} is refused: it uses ${refused.map((u) => `${u.feature} (${u.path})`).join(', ')}, which the router does not honour`
      : rule.backends.length === 0 ? `${ruleName(rule)} has no backendRefs` : `every backendRef of ${ruleName(rule)} has weight 0`,
  };
}

function invalidBackend(group: BackendGroup): PickResult {
  const ref = `${group.ref.kind} ${group.ref.namespace}/${group.ref.name}`;
  const why = group.excluded.map((x) => `${x.subject}: ${x.reason}`).join('; ');
  return { type: 'invalid-backend', group, message: `backendRef ${ref} has no usable pool${why ? ` (${why})` : ''}` };
}

/**
 * Picks the primary candidate of a rule for one request, given live signals
 * and a policy; `fallbacks` on the result is the failover order.
 * `thresholds`: re-derive saturation from the view's metrics with these
 * (default: the view's own `saturated` flag).
 */
export function pickOrdered(
  rule: RouteRule,
  signals: SignalView,
  random: RandomSource,
  policy: PickPolicy = DEFAULT_PICKER.defaultPolicy,
  thresholds?: SaturationThresholds,
): PickResult {
  const backends = rule.backends;
  const total = rule.totalWeight;
  if (backends.length === 0 || !(total > 0) || rule.unsupported !== undefined) return unavailable(rule);
  scan(rule, signals, policy, thresholds);
  const r = random() * total;

  // Where the draw lands under the plain split: invalid backendRefs keep their exact share.
  let start = 0;
  let invalidBefore = 0;
  let lg = -1;
  let li = 0;
  let found = false;
  let i = 0;
  for (let g = 0; g < backends.length; g++) {
    const group = backends[g]!;
    const w = group.weight;
    const m = group.candidates.length;
    if (w > 0) {
      lg = g;
      li = i;
      if (r < start + w) {
        found = true;
        break;
      }
      start += w;
      if (m === 0) invalidBefore += w;
    }
    i += m;
  }
  const landed = backends[lg];
  if (landed === undefined) return unavailable(rule);
  if (landed.candidates.length === 0) return invalidBackend(landed);
  if (!found) start -= landed.weight; // rounding left r at the very top: the last weighted group

  const best = S.bestTier;
  if (best === NONE || !(S.validTotal > 0)) return unavailable(rule);
  const tierTotal = tierWeights(rule, policy, best);
  if (!(tierTotal > 0)) return unavailable(rule);
  const nominalSaturated =
    S.hasSaturated && policy !== 'prefer-local' && classOfTier(best, policy) === HEALTHY &&
    S.tier[nominalIndex(rule, lg, li, Math.min(1, (r - start) / landed.weight))] === SATURATED;

  // The draw's position in the valid weight, mapped onto the best tier's effective weights.
  const x = ((r - invalidBefore) / S.validTotal) * tierTotal;
  const eff = S.eff;
  let acc = 0;
  let pg = -1;
  let pj = -1;
  i = 0;
  outer: for (let g = 0; g < backends.length; g++) {
    const n = backends[g]!.candidates.length;
    for (let j = 0; j < n; j++, i++) {
      const e = eff[i]!;
      if (!(e > 0)) continue;
      acc += e;
      pg = g;
      pj = j;
      if (x < acc) break outer;
    }
  }
  const group = backends[pg];
  const primary = group?.candidates[pj];
  if (group === undefined || primary === undefined) return unavailable(rule);
  const reason = reasonOf(policy, best, S.hasLocal, nominalSaturated);
  return new PickedCandidate(primary, group, reason, policy, rule, signals, thresholds);
}

/** The policy of a rule: its route's annotation, else the configured default. */
export function policyOf(rule: RouteRule, settings: PickerSettings): PickPolicy {
  return rule.policy ?? settings.defaultPolicy;
}

/** pickOrdered with the router config's `picker` settings (what the data path calls). */
export function pickWith(rule: RouteRule, signals: SignalView, random: RandomSource, settings: PickerSettings): PickResult {
  return pickOrdered(rule, signals, random, rule.policy ?? settings.defaultPolicy, settings.saturation);
}

/** Without signals: the plain Gateway API weighted split (every candidate unknown). */
export function pick(rule: RouteRule, random: RandomSource): PickResult {
  return pickOrdered(rule, EMPTY_SIGNAL_VIEW, random, 'weighted');
}
