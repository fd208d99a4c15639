/**
 * Decision explainability: for a rule (or a request shape matched against a
 * snapshot), each candidate's weight, signals, state, effective weight and its
 * exact probability of being the primary, computed analytically with the same
 * core as the picker (weights.ts), plus the failover order. Backs
 * /debug/pick. Not on the request path: allocates freely.
 */
import { DEFAULT_SATURATION } from '../config/defaults.js';
import { type CandidateSignals, type SaturationThresholds, type SignalView } from '../signals/types.js';
import { matchRequest } from '../snapshot/match.js';
import type { Exclusion, RouteRule, RoutingSnapshot } from '../snapshot/types.js';
import { candidateOrder } from './order.js';
import { reasonOf } from './pick.js';
import type { PickPolicy } from '../config/pick-policy.js';
import type { PickerSettings, PickReason } from './types.js';
import { classOfTier, HEALTHY, headroom, isSaturated, meanPods, NONE, S, SATURATED, scan, tierCount, tierWeights } from './weights.js';

export type CandidateState = 'ready' | 'not-ready' | 'unknown' | 'ejected' | 'saturated';

export interface ExplainedEntry {
  /** "InferencePoolImport example/llm-pool". */
  readonly backendRef: string;
  readonly backendIndex: number;
  /** The backendRef's weight. */
  readonly weight: number;
  /** Candidate id; null for a backendRef with no usable pool (its share gets 500). */
  readonly id: string | null;
  readonly cluster?: string;
  readonly local?: boolean;
  readonly via?: 'epp' | 'parent';
  readonly state: CandidateState | 'invalid';
  readonly signals?: CandidateSignals;
  /** Selection tier, best first (e.g. "unsaturated", "local-saturated"); null for weight 0 or invalid. */
  readonly tier: string | null;
  /** Its share of the backendRef weight (by ready pods, times headroom for least-loaded) within its tier. */
  readonly effectiveWeight: number;
  /** least-loaded: free capacity scaling the weight; absent when unknown (the mean of the known is used). */
  readonly headroom?: number;
  /** Exact probability of being the primary (invalid rows: of getting 500). Sums to 1 over all rows. */
  readonly probability: number;
  /** Position in the failover order (0 = first choice after nothing failed); null when never tried. */
  readonly fallbackRank: number | null;
  readonly excluded?: readonly Exclusion[];
}

export interface PickExplanation {
  readonly policy: PickPolicy;
  /** Thresholds the picker re-derives saturation with; null: the signal view's own flag. */
  readonly thresholds: SaturationThresholds | null;
  /** Probability of each pick outcome: the picked reasons, and 'invalid-backend' (500). Sums to 1 unless nothing is weighted. */
  readonly reasons: Partial<Record<PickReason | 'invalid-backend', number>>;
  readonly totalWeight: number;
  /** Probability of a 500 for landing on an invalid backendRef. */
  readonly invalidShare: number;
  readonly entries: readonly ExplainedEntry[];
  /** Candidate ids in failover order; a pick's fallbacks are this minus its primary. */
  readonly order: readonly string[];
}

function tierName(tier: number, policy: PickPolicy): string {
  const cls = ['unsaturated', 'saturated', 'unavailable'][classOfTier(tier, policy)]!;
  return policy === 'prefer-local' ? `${tier & 1 ? 'remote' : 'local'}-${cls}` : cls;
}

function stateOf(s: CandidateSignals, t: SaturationThresholds | undefined): CandidateState {
  if (s.ejected) return 'ejected';
  if (s.ready === 'not-ready' || s.readyPods === 0) return 'not-ready';
  if (isSaturated(s, t)) return 'saturated';
  return s.ready;
}

/** After scan(): the share of all draws the plain split gives to saturated candidates (what spills over). */
function nominalSaturatedShare(rule: RouteRule, policy: PickPolicy): number {
  const total = rule.totalWeight;
  let share = 0;
  let i0 = 0;
  for (const group of rule.backends) {
    const m = group.candidates.length;
    if (group.weight > 0 && m > 0 && total > 0) {
      const mean = meanPods(i0, m);
      const pods = Array.from(S.pods.subarray(i0, i0 + m), (p) => (p === p ? p : mean));
      const all = pods.reduce((x, y) => x + y, 0);
      pods.forEach((p, j) => {
        if (classOfTier(S.tier[i0 + j]!, policy) === SATURATED) share += (group.weight / total) * (p / all);
      });
    }
    i0 += m;
  }
  return share;
}

export function explainPick(rule: RouteRule, signals: SignalView, policy: PickPolicy, thresholds?: SaturationThresholds): PickExplanation {
  const total = rule.totalWeight;
  const order = candidateOrder(rule, signals, policy, thresholds).map((c) => c.id);
  scan(rule, signals, policy, thresholds);
  const n = S.n;
  const t = thresholds ?? DEFAULT_SATURATION;
  const tiers = Array.from(S.tier.subarray(0, n));
  const best = S.bestTier;
  const validTotal = S.validTotal;
  const hasLocal = S.hasLocal;
  const nominalSaturated = nominalSaturatedShare(rule, policy);
  const eff = new Float64Array(n);
  const tierTotals = new Float64Array(tierCount(policy));
  for (let tr = 0; tr < tierTotals.length; tr++) {
    tierTotals[tr] = tierWeights(rule, policy, tr);
    for (let i = 0; i < n; i++) if (tiers[i] === tr) eff[i] = S.eff[i]!;
  }
  const live = total > 0 && best !== NONE && validTotal > 0 && tierTotals[best]! > 0;
  const entries: ExplainedEntry[] = [];
  let invalidShare = 0;
  let i = 0;
  rule.backends.forEach((g, backendIndex) => {
    const backendRef = `${g.ref.kind} ${g.ref.namespace}/${g.ref.name}`;
    if (g.candidates.length === 0) {
      const p = total > 0 && g.weight > 0 ? g.weight / total : 0;
      invalidShare += p;
      entries.push({ backendRef, backendIndex, weight: g.weight, id: null, state: 'invalid', tier: null, effectiveWeight: 0, probability: p, fallbackRank: null, excluded: g.excluded });
      return;
    }
    for (const c of g.candidates) {
      const s = signals.get(c.id);
      const tr = tiers[i]!;
      const e = tr === NONE ? 0 : eff[i]!;
      const probability = live && tr === best ? (validTotal / total) * (e / tierTotals[best]!) : 0;
      const rank = order.indexOf(c.id);
      const h = policy === 'least-loaded' ? headroom(s, t) : NaN;
      entries.push({
        backendRef, backendIndex, weight: g.weight, id: c.id, cluster: c.cluster, local: c.local, via: c.via,
        state: stateOf(s, thresholds), signals: s,
        tier: tr === NONE ? null : tierName(tr, policy),
        effectiveWeight: e,
        ...(h === h ? { headroom: h } : {}),
        probability,
        fallbackRank: rank >= 0 && tr !== NONE ? rank : null,
      });
      i++;
    }
  });
  const reasons: Partial<Record<PickReason | 'invalid-backend', number>> = {};
  if (invalidShare > 0) reasons['invalid-backend'] = invalidShare;
  if (live) {
    const valid = validTotal / total;
    const spill = policy !== 'prefer-local' && classOfTier(best, policy) === HEALTHY ? Math.min(valid, nominalSaturated) : 0;
    const base = reasonOf(policy, best, hasLocal, false);
    if (valid - spill > 0) reasons[base] = valid - spill;
    if (spill > 0) reasons.spillover = spill;
  }
  return {
    policy,
    thresholds: thresholds ?? null,
    reasons,
    totalWeight: total,
    invalidShare,
    entries,
    order,
  };
}

/** A request shape for /debug/pick. */
export interface PickRequestShape {
  readonly host: string;
  readonly path?: string;
  readonly method?: string;
  /** Lower-case header name -> value, for header matches. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface DebugReply {
  readonly status: number;
  readonly body: unknown;
}

/** Matches the request shape against the snapshot and explains its rule's pick. */
export function explainRequest(snapshot: RoutingSnapshot | undefined, req: PickRequestShape, view: SignalView, settings: PickerSettings): DebugReply {
  if (snapshot === undefined) return { status: 503, body: { error: 'no routing snapshot yet' } };
  const headers = req.headers ?? {};
  const attrs = {
    authority: req.host,
    path: req.path ?? '/',
    method: (req.method ?? 'GET').toUpperCase(),
    header: (name: string) => headers[name.toLowerCase()],
  };
  const request = { host: attrs.authority, path: attrs.path, method: attrs.method, headers };
  const m = matchRequest(snapshot, attrs);
  if (m.type === 'no-route') return { status: 404, body: { error: 'no HTTPRoute rule matches', request } };
  const rule = m.rule;
  const where = { request, snapshotVersion: snapshot.version, route: `${rule.route.namespace}/${rule.route.name}`, rule: rule.index };
  // A refused rule picks nothing: every request it matches gets HTTP 500.
  if (rule.unsupported !== undefined) return { status: 200, body: { ...where, refused: rule.unsupported.map((u) => ({ ...u })), httpStatus: 500 } };
  const policy = rule.policy ?? settings.defaultPolicy;
  return {
    status: 200,
    body: {
      request,
      snapshotVersion: snapshot.version,
      signalsAt: new Date(view.at).toISOString(),
      route: `${rule.route.namespace}/${rule.route.name}`,
      rule: rule.index,
      ...(rule.name !== undefined ? { ruleName: rule.name } : {}),
      policySource: rule.policy !== undefined ? 'annotation' : 'default',
      ...explainPick(rule, view, policy, settings.saturation),
    },
  };
}

/**
 * The /debug/pick handler body: `?host=...&path=...&method=...&header=name:value` (header repeatable).
 * Wire as: `'/debug/pick': (url) => { const r = explainPickQuery(store.snapshot(), url.searchParams, signals.view(), config.picker); return json(r.status, r.body); }`.
 */
export function explainPickQuery(snapshot: RoutingSnapshot | undefined, params: URLSearchParams, view: SignalView, settings: PickerSettings): DebugReply {
  const host = params.get('host');
  if (host === null || host === '') return { status: 400, body: { error: 'query parameter "host" is required (also: path, method, header=name:value)' } };
  const headers: Record<string, string> = {};
  for (const h of params.getAll('header')) {
    const colon = h.indexOf(':');
    if (colon <= 0) return { status: 400, body: { error: `header "${h}" must be name:value` } };
    headers[h.slice(0, colon).trim().toLowerCase()] ??= h.slice(colon + 1).trim();
  }
  return explainRequest(
    snapshot,
    { host, path: params.get('path') ?? '/', method: params.get('method') ?? 'GET', headers },
    view,
    settings,
  );
}
