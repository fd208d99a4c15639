import { describe, expect, it } from 'vitest';
import { formatRoutingTable, snapshotToJson, summarizeMatch } from '../../src/snapshot/describe.js';
import {
  build,
  config,
  gateway,
  importRef,
  LOCAL,
  localPool,
  match,
  parentRef,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  servedGateway,
  service,
} from './fixtures.js';

const cfg = config({ mode: 'Parent', clusters: [{ name: LOCAL }, { name: 'cluster-b' }] });

function world() {
  return build(cfg, {
    [LOCAL]: [
      servedGateway(),
      ...localPool('llm-pool'),
      poolImport('llm-pool', [['cluster-b', 'cluster-z']]),
      route('llm-route', [
        rule([poolRef('llm-pool', 50), importRef('llm-pool', 50)], [match({ path: '/v1', method: 'POST', headers: { 'x-model': 'a' }, query: { v: '1' } })], 'main'),
        rule([poolRef('missing', 1), poolRef('llm-pool', 0)]),
        rule([]),
      ], { hostnames: ['my.model.com'] }),
    ],
    'cluster-b': [
      pool('llm-pool', { exported: true, epp: 'epp', parents: [parentRef('gw-b')] }),
      service('epp', { ingress: [{ ip: '34.0.0.1' }] }),
      gateway('gw-b', { addresses: ['192.0.2.10'] }),
    ],
  }, 7);
}

describe('formatRoutingTable', () => {
  it('prints routes -> rules -> backendRefs -> candidates and exclusions, then diagnostics', () => {
    const { snapshot, diagnostics } = world();
    const out = formatRoutingTable(snapshot, diagnostics);
    const expectLines = [
      'Routing snapshot v7: cluster cluster-a, mode Parent, built 2025-01-01T00:00:00.000Z',
      'HTTPRoute example/llm-route  hostnames: my.model.com  parents: example/inf-gw',
      '  rule[0] "main": PathPrefix /v1, method POST, header x-model=a, query v=1',
      '    -> InferencePool example/llm-pool  weight 50 (50.0%)',
      '         cluster-a/example/llm-pool  local  via epp  epp 10.96.0.10:9002 (clusterIP of Service example/llm-pool-epp, tls, system CAs)',
      '    -> InferencePoolImport example/llm-pool  weight 50 (50.0%)',
      '         cluster-b/example/llm-pool  remote  via parent  epp 34.0.0.1:9002 (loadBalancer of Service example/epp, tls, system CAs)  parent 192.0.2.10:80 (status of Gateway example/gw-b)',
      '         EXCLUDED cluster-z/example/llm-pool: UnknownCluster: ',
      '    -> InferencePool example/missing  weight 1 (100.0%)  [NO USABLE POOL: its share of requests gets HTTP 500]',
      '         EXCLUDED cluster-a/example/missing: PoolNotFound: cluster cluster-a has no InferencePool example/missing',
      '    -> InferencePool example/llm-pool  weight 0 (0.0%)  [weight 0: receives no traffic]',
      '    (no backendRefs: every matching request gets HTTP 500)',
      'Diagnostics: 3 error(s), 1 warning(s), 0 info',
    ];
    for (const l of expectLines) expect(out).toContain(l);
    expect(out).toMatch(/ {2}error {3}cluster-a: InferencePool example\/missing: PoolNotFound: /);
    expect(out).toContain(
      '  error   cluster-a: HTTPRoute example/llm-route [spec.rules[1].backendRefs[0]]: BackendNotFound: backendRef InferencePool example/missing ' +
        'has no usable pool (cluster-a/example/missing: PoolNotFound); its share of requests gets HTTP 500',
    );
    expect(out).toContain('  warning cluster-a: InferencePoolImport example/llm-pool [status.controllers[0].exportingClusters[1]]: UnknownCluster: ');
  });

  it('says so when no route is attached', () => {
    const { snapshot, diagnostics } = build(config(), { [LOCAL]: [] });
    expect(formatRoutingTable(snapshot, diagnostics)).toContain('No HTTPRoutes are attached to the served Gateways');
  });

  it('summarises regex matches with ~', () => {
    expect(summarizeMatch(match({ path: '/v.*', type: 'RegularExpression', headers: [{ type: 'RegularExpression', name: 'x', value: 'a|b' }] }))).toBe(
      'RegularExpression /v.*, header x~a|b',
    );
  });
});

describe('snapshotToJson', () => {
  it('is plain JSON: no Maps, no regexes, candidates by id', () => {
    const { snapshot } = world();
    const json = snapshotToJson(snapshot);
    const round = JSON.parse(JSON.stringify(json));
    expect(round).toEqual(json);
    expect(Object.keys(json.candidates).sort()).toEqual(['cluster-a/example/llm-pool', 'cluster-b/example/llm-pool']);
    expect(round.candidates['cluster-b/example/llm-pool'].parent.address).toBe('192.0.2.10:80');
    expect(round.routes[0].rules[0].backends[1].candidates).toEqual(['cluster-b/example/llm-pool']);
    expect(round.routes[0].rules[0].backends[1].excluded[0].reason).toBe('UnknownCluster');
    expect(round).not.toHaveProperty('table');
    expect(round.version).toBe(7);
    // Which parentRef attached to which listeners (what listener attachedRoutes counts).
    expect(round.routes[0].attachments).toEqual([{ parentRefIndex: 0, gateway: 'example/inf-gw', listeners: ['http'] }]);
  });
});
