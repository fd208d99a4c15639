import { describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { pickOrdered } from '../../src/picker/pick.js';
import { parsePickPolicy, PICK_POLICY_ANNOTATION } from '../../src/config/pick-policy.js';
import type { PickResult } from '../../src/picker/types.js';
import { EMPTY_SIGNAL_VIEW } from '../../src/signals/types.js';
import type { HTTPRoute } from '../../src/model/types.js';
import { seededRandom } from '../helpers/random.js';
import { build, config, importRef, LOCAL, localPool, poolImport, poolRef, route, rule, servedGateway } from '../snapshot/fixtures.js';
import { cand, EJECTED, expectShares, group, NOT_READY, ruleOf, SATURATED, shares, sig, view } from './fixtures.js';

const a = cand(LOCAL, 'pool-a');
const b = cand(LOCAL, 'pool-b');
const rb = cand('cluster-b', 'llm-pool');
const rc = cand('cluster-c', 'llm-pool');

const reasonOf = (p: PickResult) => (p.type === 'picked' ? p.reason : p.type);

describe('prefer-local', () => {
  const r = ruleOf([group('pool-a', 30, [a]), group('pool-b', 10, [b]), group('llm-pool', 60, [rb, rc], 'InferencePoolImport')]);
  const opts = { policy: 'prefer-local' as const };

  it('sends everything to local pools (by their weights) while they are usable', () => {
    expectShares(r, EMPTY_SIGNAL_VIEW, { [a.id]: 0.75, [b.id]: 0.25 }, opts);
    expect(reasonOf(pickOrdered(r, EMPTY_SIGNAL_VIEW, seededRandom(1), 'prefer-local'))).toBe('prefer-local');
  });

  it('one local pool down or saturated: the other local pool takes it all', () => {
    expect(shares(r, view({ [a.id]: NOT_READY }), 2000, 1, opts).get(b.id)).toBe(1);
    expect(shares(r, view({ [a.id]: SATURATED }), 2000, 1, opts).get(b.id)).toBe(1);
  });

  it('spills to remote (by weight and capacity) once every local pool is saturated or unready; reason spillover', () => {
    const v = view({ [a.id]: SATURATED, [b.id]: EJECTED, [rb.id]: sig({ readyPods: 3 }), [rc.id]: sig({ readyPods: 1 }) });
    expectShares(r, v, { [rb.id]: 0.75, [rc.id]: 0.25 }, opts);
    const p = pickOrdered(r, v, seededRandom(3), 'prefer-local');
    expect(reasonOf(p)).toBe('spillover');
    // Fallbacks: the other remote, then the saturated local; never the ejected one.
    expect(p.type === 'picked' && p.fallbacks.map((c) => c.id)).toEqual([p.type === 'picked' && p.primary === rb ? rc.id : rb.id, a.id]);
  });

  it('everything saturated: local saturated first, then remote saturated', () => {
    const v = view({ [a.id]: SATURATED, [b.id]: SATURATED, [rb.id]: SATURATED, [rc.id]: SATURATED });
    expectShares(r, v, { [a.id]: 0.75, [b.id]: 0.25 }, opts);
    const p = pickOrdered(r, v, seededRandom(3), 'prefer-local');
    expect(p.type === 'picked' && p.fallbacks.map((c) => c.cluster)).toEqual([LOCAL, 'cluster-b', 'cluster-c']);
  });

  it('panic keeps local first too', () => {
    const v = view({ [a.id]: NOT_READY, [b.id]: NOT_READY, [rb.id]: EJECTED, [rc.id]: NOT_READY });
    expectShares(r, v, { [a.id]: 0.75, [b.id]: 0.25 }, opts);
    expect(reasonOf(pickOrdered(r, v, seededRandom(3), 'prefer-local'))).toBe('panic');
  });

  it('a rule without local pools is plain weighted (reason weighted)', () => {
    const remote = ruleOf([group('llm-pool', 1, [rb, rc], 'InferencePoolImport')]);
    expectShares(remote, EMPTY_SIGNAL_VIEW, { [rb.id]: 0.5, [rc.id]: 0.5 }, opts);
    expect(reasonOf(pickOrdered(remote, EMPTY_SIGNAL_VIEW, seededRandom(3), 'prefer-local'))).toBe('weighted');
  });
});

describe('least-loaded', () => {
  const imp = ruleOf([group('llm-pool', 1, [rb, rc], 'InferencePoolImport')]);
  const opts = { policy: 'least-loaded' as const };

  it('scales weight by free capacity (headroom below the thresholds)', () => {
    // rb: queue 1/5 -> headroom 0.8; rc: KV 0.45/0.9 -> 0.5. Equal pods -> 0.8 : 0.5.
    const v = view({ [rb.id]: sig({ readyPods: 4, queueSize: 1, kvCache: 0.1 }), [rc.id]: sig({ readyPods: 4, queueSize: 0, kvCache: 0.45 }) });
    expectShares(imp, v, { [rb.id]: 0.8 / 1.3, [rc.id]: 0.5 / 1.3 }, opts);
    expect(reasonOf(pickOrdered(imp, v, seededRandom(1), 'least-loaded'))).toBe('least-loaded');
  });

  it('combines capacity (ready pods) and headroom: free capacity', () => {
    const v = view({ [rb.id]: sig({ readyPods: 2, queueSize: 0, kvCache: 0 }), [rc.id]: sig({ readyPods: 6, queueSize: 2.5, kvCache: 0 }) });
    // rb 2 x 1.0 = 2 ; rc 6 x 0.5 = 3.
    expectShares(imp, v, { [rb.id]: 0.4, [rc.id]: 0.6 }, opts);
  });

  it('unknown load counts as the mean headroom (no bias); no load known anywhere = weighted', () => {
    const v = view({ [rb.id]: sig({ queueSize: 2.5 }) });
    expectShares(imp, v, { [rb.id]: 0.5, [rc.id]: 0.5 }, opts);
    expectShares(imp, EMPTY_SIGNAL_VIEW, { [rb.id]: 0.5, [rc.id]: 0.5 }, opts);
  });

  it('a pool at its threshold keeps a trickle; a saturated one none while another is free', () => {
    const s = shares(imp, view({ [rb.id]: sig({ queueSize: 5 }), [rc.id]: sig({ queueSize: 0 }) }), 100_000, 2, opts);
    expect(s.get(rb.id)).toBeGreaterThan(0.03);
    expect(s.get(rb.id)).toBeLessThan(0.07);
    expect(shares(imp, view({ [rb.id]: SATURATED, [rc.id]: sig({ queueSize: 4.9 }) }), 5000, 2, opts).get(rc.id)).toBe(1);
  });
});

describe('policy selection', () => {
  it('parsePickPolicy accepts the three names (trimmed, any case) and nothing else', () => {
    expect(parsePickPolicy(' Prefer-Local ')).toBe('prefer-local');
    expect(parsePickPolicy('least-loaded')).toBe('least-loaded');
    expect(parsePickPolicy('weighted')).toBe('weighted');
    expect(parsePickPolicy('random')).toBeUndefined();
  });

  const objects = (annotation?: string): Record<string, ReturnType<typeof localPool>> => {
    const rt: HTTPRoute = route('r', [rule([poolRef('llm-pool', 50), importRef('llm-pool', 50)]), rule([poolRef('llm-pool')])]);
    const annotated = annotation === undefined ? rt : { ...rt, metadata: { ...rt.metadata, annotations: { [PICK_POLICY_ANNOTATION]: annotation } } };
    return {
      [LOCAL]: [servedGateway(), ...localPool('llm-pool'), poolImport('llm-pool', [['cluster-b']]), annotated],
      'cluster-b': localPool('llm-pool', { exported: true }),
    };
  };

  it(`the snapshot builder reads ${PICK_POLICY_ANNOTATION} into every rule of the route`, () => {
    const { snapshot, diagnostics } = build(config(), objects('prefer-local'));
    expect(snapshot.routes[0]!.rules.map((r) => r.policy)).toEqual(['prefer-local', 'prefer-local']);
    expect(diagnostics.filter((d) => d.reason === 'InvalidPickPolicy')).toEqual([]);
    // prefer-local: the 50/50 local/import split becomes all-local.
    expect(shares(snapshot.routes[0]!.rules[0]!, EMPTY_SIGNAL_VIEW, 1000, 1, { policy: 'prefer-local' }).get(`${LOCAL}/example/llm-pool`)).toBe(1);
  });

  it('no annotation: no policy on the rule (the config default applies); an unknown value is one warning', () => {
    expect(build(config(), objects()).snapshot.routes[0]!.rules[0]!.policy).toBeUndefined();
    const { snapshot, diagnostics } = build(config(), objects('fastest'));
    expect(snapshot.routes[0]!.rules[0]!.policy).toBeUndefined();
    const warnings = diagnostics.filter((d) => d.reason === 'InvalidPickPolicy');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ severity: 'warning', message: expect.stringContaining('"fastest"') });
  });

  it('router config: picker.defaultPolicy and picker.saturation with defaults; unknown values rejected', () => {
    const base = { clusterName: 'a', gateways: [{ namespace: 'n', name: 'g' }], clusters: [{ name: 'a', manifests: { paths: ['x'] } }] };
    expect(routerConfigSchema.parse(base).picker).toEqual({ defaultPolicy: 'weighted', saturation: { queueSize: 5, kvCache: 0.9 } });
    const set = routerConfigSchema.parse({ ...base, picker: { defaultPolicy: 'least-loaded', saturation: { queueSize: 8 } } }).picker;
    expect(set).toEqual({ defaultPolicy: 'least-loaded', saturation: { queueSize: 8, kvCache: 0.9 } });
    expect(routerConfigSchema.safeParse({ ...base, picker: { defaultPolicy: 'fastest' } }).success).toBe(false);
    expect(routerConfigSchema.safeParse({ ...base, picker: { saturation: { kvCache: 1.5 } } }).success).toBe(false);
  });
});
