import { describe, expect, it } from 'vitest';
import { explainPick, explainPickQuery, type PickExplanation } from '../../src/picker/explain.js';
import { pickOrdered } from '../../src/picker/pick.js';
import type { PickPolicy } from '../../src/config/pick-policy.js';
import { EMPTY_SIGNAL_VIEW, type SignalView } from '../../src/signals/types.js';
import type { RouteRule } from '../../src/snapshot/types.js';
import { seededRandom } from '../helpers/random.js';
import { build, config, importRef, LOCAL, localPool, poolImport, poolRef, route, rule, servedGateway } from '../snapshot/fixtures.js';
import { cand, EJECTED, group, NOT_READY, ruleOf, SATURATED, sig, view } from './fixtures.js';

const a = cand(LOCAL, 'pool-a');
const b = cand(LOCAL, 'pool-b');
const rb = cand('cluster-b', 'llm-pool');
const rc = cand('cluster-c', 'llm-pool');
const rd = cand('cluster-d', 'llm-pool');

const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);
const byId = (e: PickExplanation) => {
  const m = new Map<string, number>();
  for (const x of e.entries) {
    const k = x.id ?? 'invalid-backend';
    m.set(k, (m.get(k) ?? 0) + x.probability);
  }
  return m;
};

const rule5 = ruleOf([
  group('pool-a', 40, [a]),
  group('llm-pool', 30, [rb, rc, rd], 'InferencePoolImport'),
  group('pool-b', 20, [b]),
  group('missing', 10, []),
]);

const scenarios: [string, SignalView, PickPolicy][] = [
  ['all unknown', EMPTY_SIGNAL_VIEW, 'weighted'],
  ['capacity + an unready exporter', view({ [rb.id]: sig({ readyPods: 6 }), [rc.id]: sig({ readyPods: 2 }), [rd.id]: NOT_READY }), 'weighted'],
  ['spillover', view({ [a.id]: SATURATED, [rb.id]: sig({ readyPods: 2 }), [rc.id]: SATURATED, [rd.id]: EJECTED }), 'weighted'],
  ['all saturated', view({ [a.id]: SATURATED, [b.id]: SATURATED, [rb.id]: SATURATED, [rc.id]: SATURATED, [rd.id]: SATURATED }), 'weighted'],
  ['panic', view({ [a.id]: NOT_READY, [b.id]: EJECTED, [rb.id]: NOT_READY, [rc.id]: NOT_READY, [rd.id]: EJECTED }), 'weighted'],
  ['prefer-local, local saturated', view({ [a.id]: SATURATED, [b.id]: NOT_READY, [rb.id]: sig({ readyPods: 1 }) }), 'prefer-local'],
  ['least-loaded', view({ [a.id]: sig({ queueSize: 4 }), [rb.id]: sig({ readyPods: 3, kvCache: 0.3 }), [rc.id]: sig({ readyPods: 1, queueSize: 1 }) }), 'least-loaded'],
];

function sample(r: RouteRule, v: SignalView, policy: PickPolicy, n: number): { ids: Map<string, number>; reasons: Map<string, number> } {
  const random = seededRandom(31);
  const ids = new Map<string, number>();
  const reasons = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const p = pickOrdered(r, v, random, policy);
    const k = p.type === 'picked' ? p.primary.id : p.type;
    const reason = p.type === 'picked' ? p.reason : p.type;
    ids.set(k, (ids.get(k) ?? 0) + 1 / n);
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1 / n);
  }
  return { ids, reasons };
}

describe('explainPick', () => {
  it.each(scenarios)('%s: probabilities sum to 1 and match 100k sampled picks (ids and reasons)', (_, v, policy) => {
    const e = explainPick(rule5, v, policy);
    expect(sum(e.entries.map((x) => x.probability))).toBeCloseTo(1, 12);
    expect(sum(Object.values(e.reasons))).toBeCloseTo(1, 12);
    expect(e.invalidShare).toBeCloseTo(0.1, 12);
    const { ids, reasons } = sample(rule5, v, policy, 100_000);
    for (const [id, p] of byId(e)) expect(Math.abs((ids.get(id) ?? 0) - p), id).toBeLessThan(0.006);
    for (const [k, p] of Object.entries(e.reasons)) expect(Math.abs((reasons.get(k) ?? 0) - p), k).toBeLessThan(0.006);
  });

  it('reports weight, effective weight, state, tier, signals and the failover order', () => {
    const v = view({ [a.id]: SATURATED, [rb.id]: sig({ readyPods: 6 }), [rc.id]: sig({ readyPods: 2 }), [rd.id]: EJECTED });
    const e = explainPick(rule5, v, 'weighted');
    const row = (id: string | null) => e.entries.find((x) => x.id === id)!;
    expect(row(a.id)).toMatchObject({ backendRef: 'InferencePool example/pool-a', weight: 40, state: 'saturated', tier: 'saturated', effectiveWeight: 40, probability: 0, fallbackRank: 3 });
    expect(row(rb.id)).toMatchObject({ weight: 30, state: 'ready', tier: 'unsaturated', signals: { readyPods: 6 }, fallbackRank: 0 });
    expect(row(rb.id).effectiveWeight).toBeCloseTo(22.5, 12);
    expect(row(rb.id).probability).toBeCloseTo(0.9 * (22.5 / 50), 12);
    expect(row(rd.id)).toMatchObject({ state: 'ejected', tier: 'unavailable', probability: 0, fallbackRank: null });
    expect(row(b.id)).toMatchObject({ state: 'unknown', effectiveWeight: 20 });
    expect(row(null)).toMatchObject({ backendRef: 'InferencePool example/missing', state: 'invalid', probability: 0.1, excluded: [{ reason: 'PoolNotFound' }] });
    expect(e.order).toEqual([rb.id, b.id, rc.id, a.id]);
    expect(e.reasons.spillover).toBeCloseTo(0.4, 12);
  });

  it('least-loaded shows each known headroom and scales effective weight by it', () => {
    const imp = ruleOf([group('llm-pool', 1, [rb, rc], 'InferencePoolImport')]);
    const e = explainPick(imp, view({ [rb.id]: sig({ queueSize: 1 }) }), 'least-loaded', { queueSize: 5, kvCache: 0.9 });
    expect(e.entries[0]).toMatchObject({ headroom: 0.8, effectiveWeight: 0.4, probability: 0.5 });
    expect(e.entries[1]!.headroom).toBeUndefined();
    expect(e.reasons).toEqual({ 'least-loaded': 1 });
  });

  it('nothing weighted: no probabilities, no reasons', () => {
    const e = explainPick(ruleOf([group('pool-a', 0, [a])]), EMPTY_SIGNAL_VIEW, 'weighted');
    expect(e.entries.map((x) => x.probability)).toEqual([0]);
    expect(e.reasons).toEqual({});
  });
});

describe('explainPickQuery (/debug/pick)', () => {
  const { snapshot } = build(config(), {
    [LOCAL]: [servedGateway(), ...localPool('llm-pool'), poolImport('llm-pool', [['cluster-b']]), route('r', [rule([poolRef('llm-pool', 70), importRef('llm-pool', 30)])], { hostnames: ['llm.example.com'] })],
    'cluster-b': localPool('llm-pool', { exported: true }),
  });
  const settings = { defaultPolicy: 'weighted' as const };
  const q = (s: string) => new URLSearchParams(s);

  it('matches the request shape and explains its rule', () => {
    const r = explainPickQuery(snapshot, q('host=llm.example.com&path=/v1/completions&method=POST'), EMPTY_SIGNAL_VIEW, settings);
    expect(r.status).toBe(200);
    const body = r.body as PickExplanation & { route: string; rule: number; policySource: string };
    expect(body).toMatchObject({ route: 'example/r', rule: 0, policy: 'weighted', policySource: 'default', reasons: { weighted: 1 } });
    expect(body.entries.map((x) => [x.id, x.probability])).toEqual([[`${LOCAL}/example/llm-pool`, 0.7], ['cluster-b/example/llm-pool', 0.3]]);
    expect(JSON.parse(JSON.stringify(r.body))).toMatchObject({ route: 'example/r' });
  });

  it('a refused rule explains what it uses and that its requests get 500, instead of a pick', () => {
    const retry = { path: 'spec.rules[0].retry', feature: 'retry', message: 'retry: not honoured' };
    const { snapshot: s } = build(config(), {
      [LOCAL]: [servedGateway(), ...localPool('llm-pool'), route('r', [rule([poolRef('llm-pool')], undefined, undefined, [retry])], { hostnames: ['llm.example.com'] })],
    });
    const r = explainPickQuery(s, q('host=llm.example.com'), EMPTY_SIGNAL_VIEW, settings);
    expect(r).toEqual({
      status: 200,
      body: { request: { host: 'llm.example.com', path: '/', method: 'GET', headers: {} }, snapshotVersion: 1, route: 'example/r', rule: 0, refused: [retry], httpStatus: 500 },
    });
  });

  it('400 without host or with a malformed header; 404 without a matching route; 503 without a snapshot', () => {
    expect(explainPickQuery(snapshot, q('path=/'), EMPTY_SIGNAL_VIEW, settings).status).toBe(400);
    expect(explainPickQuery(snapshot, q('host=llm.example.com&header=nocolon'), EMPTY_SIGNAL_VIEW, settings).status).toBe(400);
    expect(explainPickQuery(snapshot, q('host=other.example.com'), EMPTY_SIGNAL_VIEW, settings).status).toBe(404);
    expect(explainPickQuery(undefined, q('host=llm.example.com'), EMPTY_SIGNAL_VIEW, settings).status).toBe(503);
  });
});
