import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { decodeObject } from '../../src/model/decode.js';
import type { HTTPRoute } from '../../src/model/types.js';
import { pick } from '../../src/picker/pick.js';
import { formatRoutingTable, snapshotToJson } from '../../src/snapshot/describe.js';
import { matchRequest } from '../../src/snapshot/match.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';
import { build, config, LOCAL, localPool, poolRef, route, rule, servedGateway } from './fixtures.js';

/** A rule with a header modifier (honoured), a request timeout and retries (refused), beside a rule with only the modifier. */
const ROUTE = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: example}
spec:
  parentRefs: [{name: inf-gw}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /featured}}]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {add: [{name: x-tier, value: gold}]}
      timeouts: {request: 30s}
      retry: {attempts: 2}
      backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: p}]
    - backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: p}]
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier: {set: [{name: x-tier, value: gold}], remove: [x-drop]}
`;

function decodeRoute(text: string): HTTPRoute {
  const r = decodeObject(parse(text), 'route.yaml#0');
  if (r.type !== 'ok' || r.object.kind !== 'HTTPRoute') throw new Error(JSON.stringify(r));
  return r.object;
}

function ruleFor(snapshot: RoutingSnapshot, path: string) {
  const m = matchRequest(snapshot, { authority: 'my.model.com', path, method: 'POST', header: () => undefined });
  if (m.type !== 'matched') throw new Error(`no rule for ${path}`);
  return m.rule;
}

describe('rules the router cannot honour', () => {
  const { snapshot, diagnostics } = build(config({ routes: { requestHeaders: ['x-tier', 'x-drop'] } }), { [LOCAL]: [servedGateway(), ...localPool('p'), decodeRoute(ROUTE)] });

  it('are refused with one error per field, naming route, rule and field, turning the route Accepted=False (UnsupportedValue)', () => {
    const refused = diagnostics.filter((d) => d.reason === 'UnsupportedValue');
    expect(refused.map((d) => [d.severity, d.subject, d.path])).toEqual([
      ['error', 'cluster-a: HTTPRoute example/r', 'spec.rules[0].retry'],
      ['error', 'cluster-a: HTTPRoute example/r', 'spec.rules[0].timeouts'],
    ]);
    for (const d of refused) {
      expect(d.status).toEqual({ kind: 'HTTPRoute', namespace: 'example', name: 'r', condition: 'Accepted' });
      expect(d.message).toContain('rule 0 is refused rather than routed without it: every request it matches gets HTTP 500');
    }
  });

  it('still match their requests, which get HTTP 500 instead of being routed without the feature; other rules route', () => {
    const featured = ruleFor(snapshot, '/featured/x');
    expect(featured.index).toBe(0);
    const result = pick(featured, () => 0.5);
    expect(result).toEqual({
      type: 'unavailable',
      message:
        'rule 0 of HTTPRoute example/r is refused: it uses timeouts (spec.rules[0].timeouts), retry (spec.rules[0].retry), which the router does not honour',
    });
    expect(pick(ruleFor(snapshot, '/other'), () => 0.5).type).toBe('picked');
  });

  it('show in the routing table and in /debug/routes', () => {
    expect(formatRoutingTable(snapshot, diagnostics)).toContain(
      '    REFUSED: uses timeouts [spec.rules[0].timeouts], retry [spec.rules[0].retry], which the router does not honour: every matching request gets HTTP 500',
    );
    expect(formatRoutingTable(snapshot, diagnostics)).toContain('    request headers: set x-tier=gold, remove x-drop');
    const json = snapshotToJson(snapshot).routes[0] as { rules: { unsupported?: { path: string }[]; requestHeaderModifier?: unknown }[] };
    expect(json.rules[0]!.unsupported!.map((u) => u.path)).toEqual(['spec.rules[0].timeouts', 'spec.rules[0].retry']);
    expect(json.rules[1]!.unsupported).toBeUndefined();
    expect(json.rules[1]!.requestHeaderModifier).toEqual({ set: [{ name: 'x-tier', value: 'gold' }], add: [], remove: ['x-drop'] });
  });

  it('a misspelt backendRefs key refuses the rule (field backendRef), instead of a silent rule without backends', () => {
    const { diagnostics: d } = build(config(), {
      [LOCAL]: [servedGateway(), ...localPool('p'), decodeRoute(ROUTE.replace('    - backendRefs: [{group', '    - backendRef: [{group'))],
    });
    expect(d.find((x) => x.path === 'spec.rules[1].backendRef')).toMatchObject({
      severity: 'error',
      reason: 'UnsupportedValue',
      message: expect.stringMatching(/^unknown field "backendRef" \(did you mean "backendRefs"\?\)/),
    });
  });
});

describe('a RequestHeaderModifier the Envoy in front would ignore', () => {
  // Envoy's ext_proc mutation_rules (the shipped configs: disallow_all with an allow_expression)
  // silently drop a mutation of any header they do not list: routes.requestHeaders names those they do.
  it('refuses its rule (UnsupportedValue, HTTP 500) when a header it changes is not in routes.requestHeaders', () => {
    const { snapshot, diagnostics } = build(config({ routes: { requestHeaders: ['x-tier'] } }), {
      [LOCAL]: [servedGateway(), ...localPool('p'), decodeRoute(ROUTE)],
    });
    const refused = diagnostics.find((d) => d.path === 'spec.rules[1].filters');
    expect(refused).toMatchObject({ severity: 'error', reason: 'UnsupportedValue', status: { kind: 'HTTPRoute', condition: 'Accepted' } });
    expect(refused!.message).toMatch(/^filter type RequestHeaderModifier: header x-drop is not in the router's routes.requestHeaders/);
    const other = ruleFor(snapshot, '/other');
    expect(other.requestHeaderModifier).toBeUndefined();
    expect(pick(other, () => 0.5).type).toBe('unavailable');
  });

  it('by default (no header listed) every modifier is refused', () => {
    const { diagnostics } = build(config(), { [LOCAL]: [servedGateway(), ...localPool('p'), decodeRoute(ROUTE)] });
    expect(diagnostics.filter((d) => d.path?.endsWith('.filters')).map((d) => d.path)).toEqual(['spec.rules[0].filters', 'spec.rules[1].filters']);
  });
});

describe('rules whose every request fails', () => {
  it('a rule without backendRefs, or with only weight-0 ones, is an error naming the rule', () => {
    const { diagnostics } = build(config(), {
      [LOCAL]: [servedGateway(), ...localPool('p'), route('r', [rule([]), rule([poolRef('p', 0)]), rule([poolRef('p', 1), poolRef('p', 0)])])],
    });
    expect(diagnostics.filter((d) => d.reason === 'NoBackendRefs' || d.reason === 'NoBackendWeight')).toEqual([
      { severity: 'error', subject: 'cluster-a: HTTPRoute example/r', path: 'spec.rules[0].backendRefs', reason: 'NoBackendRefs', message: 'rule 0 has no backendRefs: every request it matches gets HTTP 500' },
      { severity: 'error', subject: 'cluster-a: HTTPRoute example/r', path: 'spec.rules[1].backendRefs', reason: 'NoBackendWeight', message: 'every backendRef of rule 1 has weight 0: every request it matches gets HTTP 500' },
    ]);
  });
});
