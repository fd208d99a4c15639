import { describe, expect, it } from 'vitest';
import { decodeErrors, decodeOk, edit, expectOneError } from './decode-helpers.js';

const ROUTE = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: llm-route
  namespace: example
spec:
  parentRefs:
    - name: inf-gw
  hostnames:
    - my.model.com
  rules:
    - matches:
        - path:
            type: PathPrefix
            value: /completions
          headers:
            - name: X-Model
              value: llama
            - name: x-model
              value: ignored-second
          queryParams:
            - type: RegularExpression
              name: Tier
              value: "^gold|silver$"
          method: post
      backendRefs:
        - group: inference.networking.k8s.io
          kind: InferencePool
          name: llm-pool
          weight: 50
        - group: inference.networking.x-k8s.io
          kind: InferencePoolImport
          name: llm-pool
          weight: 50
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Tier, value: gold}], add: [{name: x-multi, value: b}], remove: [X-Drop]}}]
    - backendRefs:
        - name: svc
          port: 8080
`;
const R = 'HTTPRoute example/llm-route';
const BACKEND0 = `          name: llm-pool
          weight: 50
        - group: inference.networking.x-k8s.io`;

describe('HTTPRoute', () => {
  it('decodes with defaults applied', () => {
    const route = decodeOk(ROUTE, 'HTTPRoute');
    expect(route.spec.parentRefs).toEqual([{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'inf-gw' }]);
    expect(route.spec.hostnames).toEqual(['my.model.com']);
    expect(route.spec.rules).toEqual([
      {
        matches: [
          {
            path: { type: 'PathPrefix', value: '/completions' },
            headers: [{ type: 'Exact', name: 'x-model', value: 'llama' }],
            queryParams: [{ type: 'RegularExpression', name: 'Tier', value: '^gold|silver$' }],
            method: 'POST',
          },
        ],
        backendRefs: [
          { group: 'inference.networking.k8s.io', kind: 'InferencePool', name: 'llm-pool', weight: 50 },
          { group: 'inference.networking.x-k8s.io', kind: 'InferencePoolImport', name: 'llm-pool', weight: 50 },
        ],
        requestHeaderModifier: { set: [{ name: 'x-tier', value: 'gold' }], add: [{ name: 'x-multi', value: 'b' }], remove: ['x-drop'] },
        unsupported: [],
      },
      {
        matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [], queryParams: [] }],
        backendRefs: [{ group: '', kind: 'Service', name: 'svc', port: 8080, weight: 1 }],
        unsupported: [],
      },
    ]);
  });

  it('defaults a match without a path to PathPrefix "/"', () => {
    const text = edit(ROUTE, '        - path:\n            type: PathPrefix\n            value: /completions\n          headers:', '        - headers:');
    expect(decodeOk(text, 'HTTPRoute').spec.rules[0]?.matches[0]?.path).toEqual({ type: 'PathPrefix', value: '/' });
  });

  it('defaults a path without type or value', () => {
    const text = edit(ROUTE, '            type: PathPrefix\n            value: /completions\n', '            type: Exact\n');
    expect(decodeOk(text, 'HTTPRoute').spec.rules[0]?.matches[0]?.path).toEqual({ type: 'Exact', value: '/' });
  });

  it('applies the CRD default when rules are absent', () => {
    const text = `apiVersion: gateway.networking.k8s.io/v1beta1
kind: HTTPRoute
metadata: {name: r}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: http, port: 80}]
`;
    const route = decodeOk(text, 'HTTPRoute');
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1beta1');
    expect(route.metadata.namespace).toBe('default');
    expect(route.spec.parentRefs).toEqual([
      { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'gw', namespace: 'infra', sectionName: 'http', port: 80 },
    ]);
    expect(route.spec.hostnames).toEqual([]);
    expect(route.spec.rules).toEqual([{ matches: [{ path: { type: 'PathPrefix', value: '/' }, headers: [], queryParams: [] }], backendRefs: [], unsupported: [] }]);
  });

  it('keeps RegularExpression values as written: RE2 compiles them, within the configured limits, when the snapshot is built', () => {
    const text = edit(edit(ROUTE, 'type: PathPrefix\n            value: /completions', 'type: RegularExpression\n            value: "/v1/(chat"'), '"^gold|silver$"', '"(?i)[[:alpha:]]+"');
    const route = decodeOk(text, 'HTTPRoute');
    expect(route.spec.rules[0]?.matches[0]?.path).toEqual({ type: 'RegularExpression', value: '/v1/(chat' });
    expect(route.spec.rules[0]?.matches[0]?.queryParams[0]).toMatchObject({ type: 'RegularExpression', value: '(?i)[[:alpha:]]+' });
  });

  it('accepts weight 0 and a wildcard hostname', () => {
    const text = edit(edit(ROUTE, BACKEND0, BACKEND0.replace('weight: 50', 'weight: 0')), '- my.model.com', '- "*.model.com"');
    const route = decodeOk(text, 'HTTPRoute');
    expect(route.spec.rules[0]?.backendRefs[0]?.weight).toBe(0);
    expect(route.spec.hostnames).toEqual(['*.model.com']);
  });

  it.each([
    ['negative weight', edit(ROUTE, BACKEND0, BACKEND0.replace('weight: 50', 'weight: -1')), 'spec.rules[0].backendRefs[0].weight', /between 0 and 1000000/],
    ['weight too large', edit(ROUTE, 'name: svc\n', 'name: svc\n          weight: 1000001\n'), 'spec.rules[1].backendRefs[0].weight', /between 0 and 1000000/],
    ['fractional weight', edit(ROUTE, BACKEND0, BACKEND0.replace('weight: 50', 'weight: 0.5')), 'spec.rules[0].backendRefs[0].weight', /integer/],
    ['backend without name', edit(ROUTE, '        - name: svc\n          port: 8080', '        - port: 8080'), 'spec.rules[1].backendRefs[0].name', /required/],
    ['backend port out of range', edit(ROUTE, 'port: 8080', 'port: 65536'), 'spec.rules[1].backendRefs[0].port', /between 1 and 65535/],
    ['unknown path type', edit(ROUTE, 'type: PathPrefix', 'type: Prefix'), 'spec.rules[0].matches[0].path.type', /Exact, PathPrefix, RegularExpression/],
    ['relative path', edit(ROUTE, 'value: /completions', 'value: completions'), 'spec.rules[0].matches[0].path.value', /start with "\/"/],
    ['unknown header match type', edit(ROUTE, '            - name: X-Model', '            - type: Prefix\n              name: X-Model'), 'spec.rules[0].matches[0].headers[0].type', /Exact, RegularExpression/],
    ['header without value', edit(ROUTE, '              value: llama\n', ''), 'spec.rules[0].matches[0].headers[0].value', /required/],
    ['invalid header name', edit(ROUTE, 'name: X-Model', 'name: "X Model"'), 'spec.rules[0].matches[0].headers[0].name', /not a valid header name/],
    ['invalid header name to remove', edit(ROUTE, 'remove: [X-Drop]', 'remove: ["X Drop"]'), 'spec.rules[0].filters[0].requestHeaderModifier.remove[0]', /not a valid header name/],
    ['header value with a line break', edit(ROUTE, 'value: gold}', 'value: "gold\\r\\nx-injected: 1"}'), 'spec.rules[0].filters[0].requestHeaderModifier.set[0].value', /NUL, CR or LF/],
    ['unknown method', edit(ROUTE, 'method: post', 'method: FETCH'), 'spec.rules[0].matches[0].method', /GET, HEAD, POST/],
    ['parentRef without name', edit(ROUTE, '    - name: inf-gw', '    - kind: Gateway'), 'spec.parentRefs[0].name', /required/],
    ['bad hostname', edit(ROUTE, '- my.model.com', '- "my model"'), 'spec.hostnames[0]', /DNS name/],
    ['rules not a list', edit(ROUTE, ROUTE.slice(ROUTE.indexOf('  rules:')), '  rules: {}\n'), 'spec.rules', /must be a list/],
  ])('reports %s', (_, text, path, message) => {
    expectOneError(text, R, path, message);
  });

  it('records every rule feature it does not honour, with its path: filters, timeouts, retry, sessionPersistence, backendRef filters', () => {
    const rule1 = `    - backendRefs:
        - name: svc
          port: 8080
          filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: y}]}}]
      filters:
        - type: RequestMirror
          requestMirror: {backendRef: {name: shadow, port: 80}}
        - type: ExtensionRef
          extensionRef: {group: example.com, kind: Thing, name: t}
        - type: SomethingNew
      timeouts: {request: 30s}
      retry: {attempts: 2}
      sessionPersistence: {sessionName: s}
`;
    const text = edit(ROUTE, '    - backendRefs:\n        - name: svc\n          port: 8080\n', rule1);
    const rules = decodeOk(text, 'HTTPRoute').spec.rules;
    expect(rules[1]!.unsupported.map((u) => [u.path, u.feature])).toEqual([
      ['spec.rules[1].backendRefs[0].filters', 'backendRef filters'],
      ['spec.rules[1].filters[0]', 'filter RequestMirror'],
      ['spec.rules[1].filters[1]', 'filter ExtensionRef'],
      ['spec.rules[1].filters[2]', 'filter SomethingNew'],
      ['spec.rules[1].timeouts', 'timeouts'],
      ['spec.rules[1].retry', 'retry'],
      ['spec.rules[1].sessionPersistence', 'sessionPersistence'],
    ]);
    expect(rules[1]!.unsupported[4]!.message).toMatch(/^timeouts: Envoy enforces/);
    expect(rules[1]!.unsupported[3]!.message).toBe('filter type SomethingNew: mcip-router does not know this filter type');
  });

  it('an empty filters list, timeouts or retry object asks for nothing and is not refused', () => {
    const text = edit(ROUTE, 'filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Tier, value: gold}], add: [{name: x-multi, value: b}], remove: [X-Drop]}}]', 'filters: []\n      timeouts: {}\n      retry: {}\n      sessionPersistence: null');
    expect(decodeOk(text, 'HTTPRoute').spec.rules[0]!.unsupported).toEqual([]);
  });

  it('records a misspelt or unknown field of a rule, match or backendRef as unsupported, naming the closest field', () => {
    const text = edit(edit(edit(ROUTE, '    - backendRefs:\n        - name: svc', '    - backendRef:\n        - name: svc'), 'method: post', 'methd: post'), '          port: 8080', '          prot: 8080');
    const rules = decodeOk(text, 'HTTPRoute').spec.rules;
    expect(rules[0]!.unsupported.map((u) => [u.path, u.message])).toContainEqual([
      'spec.rules[0].matches[0].methd',
      'unknown field "methd" (did you mean "method"?); mcip-router does not read it',
    ]);
    expect(rules[1]!.backendRefs).toEqual([]);
    expect(rules[1]!.unsupported).toEqual([{
      path: 'spec.rules[1].backendRef',
      feature: 'field backendRef',
      message: 'unknown field "backendRef" (did you mean "backendRefs"?); mcip-router does not read it',
    }]);
  });

  it('refuses an unknown spec field: the route is left out rather than read without it', () => {
    expectOneError(edit(ROUTE, '  hostnames:\n', '  hostname:\n'), R, 'spec.hostname', /unknown field "hostname" \(did you mean "hostnames"\?\)/);
  });

  it('reports a filter without a type', () => {
    expectOneError(edit(ROUTE, 'type: RequestHeaderModifier, ', ''), R, 'spec.rules[0].filters[0].type', /required/);
  });

  it('refuses a RequestHeaderModifier that Envoy would not apply (host, x-envoy-*) or that touches the destination headers, or a second one', () => {
    for (const name of ['Host', 'x-envoy-retry-on', 'x-gateway-destination-endpoint', 'X-Mcip-Destination-Kind']) {
      const rules = decodeOk(edit(ROUTE, 'remove: [X-Drop]', `remove: [${name}]`), 'HTTPRoute').spec.rules;
      expect(rules[0]!.requestHeaderModifier, name).toBeUndefined();
      expect(rules[0]!.unsupported[0]!.message, name).toContain(`header ${name.toLowerCase()} cannot be changed`);
    }
    const twice = edit(ROUTE, 'remove: [X-Drop]}}]', 'remove: [X-Drop]}}, {type: RequestHeaderModifier, requestHeaderModifier: {remove: [y]}}]');
    expect(decodeOk(twice, 'HTTPRoute').spec.rules[0]!.unsupported).toEqual([
      { path: 'spec.rules[0].filters[1]', feature: 'filter RequestHeaderModifier', message: 'filter type RequestHeaderModifier: given more than once' },
    ]);
  });

  it('reports a RequestHeaderModifier filter without its config', () => {
    expectOneError(edit(ROUTE, ', requestHeaderModifier: {set: [{name: X-Tier, value: gold}], add: [{name: x-multi, value: b}], remove: [X-Drop]}', ''), R, 'spec.rules[0].filters[0].requestHeaderModifier', /required/);
  });

  it('reports errors across rules with their indices', () => {
    const text = edit(edit(ROUTE, 'port: 8080', 'port: 0'), 'method: post', 'method: 1');
    expect(decodeErrors(text).map((e) => `${e.object} ${e.path}`)).toEqual([
      `${R} spec.rules[0].matches[0].method`,
      `${R} spec.rules[1].backendRefs[0].port`,
    ]);
  });
});

describe('HTTPRoute status.parents', () => {
  const STATUS = `status:
  parents:
    - parentRef: { name: inf-gw, sectionName: http }
      controllerName: example.com/other
      conditions:
        - { type: Accepted, status: "True", reason: Accepted, message: ok, observedGeneration: 3, lastTransitionTime: "2025-01-01T00:00:00Z" }
`;

  it('reads the entries (parentRef defaults applied) so the status writer can see its own and others', () => {
    const r = decodeOk(`${ROUTE}${STATUS}`, 'HTTPRoute');
    expect(r.status.parents).toEqual([
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'inf-gw', sectionName: 'http' },
        controllerName: 'example.com/other',
        conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'ok', observedGeneration: 3, lastTransitionTime: '2025-01-01T00:00:00Z' }],
      },
    ]);
    expect(decodeOk(ROUTE, 'HTTPRoute').status.parents).toEqual([]);
  });

  it('a status that does not read as entries leaves the route valid and its status unknown', () => {
    const r = decodeOk(`${ROUTE}${STATUS.replace('status: "True"', 'status: Maybe')}`, 'HTTPRoute');
    expect(r.status).toEqual({});
    expect(r.spec.rules).toHaveLength(2);
  });
});
