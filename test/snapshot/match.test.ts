import { describe, expect, it } from 'vitest';
import type { HTTPRoute, HTTPRouteMatch } from '../../src/model/types.js';
import { matchRequest } from '../../src/snapshot/match.js';
import type { RequestAttributes, RoutingSnapshot } from '../../src/snapshot/types.js';
import { build, config, LOCAL, localPool, match, poolRef, route, rule, servedGateway, type MatchOpts, type RouteOpts } from './fixtures.js';

function snapshotOf(routes: HTTPRoute[]): RoutingSnapshot {
  return build(config(), { [LOCAL]: [servedGateway(), ...localPool('p'), ...routes] }).snapshot;
}

function req(path: string, o: { host?: string; method?: string; headers?: Record<string, string> } = {}): RequestAttributes {
  const headers = o.headers ?? {};
  return { authority: o.host ?? 'my.model.com', path, method: o.method ?? 'POST', header: (n) => headers[n] };
}

/** "route#rule" of the winner, or "none". */
function winner(s: RoutingSnapshot, r: RequestAttributes): string {
  const m = matchRequest(s, r);
  return m.type === 'matched' ? `${m.rule.route.name}#${m.rule.index}` : 'none';
}

/** One single-rule route per entry: [name, match options, route options]. */
function routes(...defs: [string, MatchOpts | HTTPRouteMatch[], RouteOpts?][]): RoutingSnapshot {
  return snapshotOf(defs.map(([name, m, o]) => route(name, [rule([poolRef('p')], Array.isArray(m) ? m : [match(m)])], o)));
}

const OLD = '2024-01-01T00:00:00Z';
const NEW = '2024-06-01T00:00:00Z';

describe('path matching', () => {
  it('PathPrefix matches by path segment and ignores a trailing slash in the prefix', () => {
    for (const prefix of ['/foo', '/foo/']) {
      const s = routes(['r', { path: prefix }]);
      expect(['/foo', '/foo/', '/foo/bar', '/foo?x=1', '/foobar', '/fo', '/'].map((p) => winner(s, req(p)))).toEqual(
        ['r#0', 'r#0', 'r#0', 'r#0', 'none', 'none', 'none'],
      );
    }
  });

  it('PathPrefix "/" matches everything', () => {
    const s = routes(['r', { path: '/' }]);
    expect(winner(s, req('/'))).toBe('r#0');
    expect(winner(s, req('/a/b?c'))).toBe('r#0');
  });

  it('Exact matches the path without its query string only', () => {
    const s = routes(['r', { path: '/v1/completions', type: 'Exact' }]);
    expect(['/v1/completions', '/v1/completions?stream=1', '/v1/completions/', '/v1/completions/x'].map((p) => winner(s, req(p)))).toEqual(
      ['r#0', 'r#0', 'none', 'none'],
    );
  });

  it('RegularExpression must match the whole path (without the query string)', () => {
    const s = routes(['r', { path: '/v[0-9]+/chat', type: 'RegularExpression' }]);
    expect(['/v1/chat', '/v12/chat?x=y', '/v1/chat/more', '/x/v1/chat'].map((p) => winner(s, req(p)))).toEqual(['r#0', 'r#0', 'none', 'none']);
  });

  it('an invalid regex is reported and dropped; the rule other matches still work', () => {
    const { snapshot, diagnostics } = build(config(), {
      [LOCAL]: [servedGateway(), ...localPool('p'), route('r', [rule([poolRef('p')], [match({ path: '/([', type: 'RegularExpression' }), match({ path: '/ok' })])])],
    });
    expect(winner(snapshot, req('/ok'))).toBe('r#0');
    const d = diagnostics.find((x) => x.reason === 'UnsupportedValue');
    expect(d).toMatchObject({
      severity: 'error',
      subject: 'cluster-a: HTTPRoute example/r',
      path: 'spec.rules[0].matches[0].path.value',
      status: { kind: 'HTTPRoute', namespace: 'example', name: 'r', condition: 'Accepted' },
    });
    expect(d?.message).toMatch(/^invalid RE2 regular expression "\/\(\[": .*; this match never matches$/);
  });
});

describe('method, header and query matching', () => {
  it('method must equal', () => {
    const s = routes(['r', { method: 'POST' }]);
    expect(winner(s, req('/', { method: 'POST' }))).toBe('r#0');
    expect(winner(s, req('/', { method: 'GET' }))).toBe('none');
  });

  it('headers: exact and regex values, names case-insensitive, all must match', () => {
    const headers = [
      { type: 'Exact' as const, name: 'X-Model', value: 'llama' },
      { type: 'RegularExpression' as const, name: 'x-tier', value: 'gold|silver' },
    ];
    const s = routes(['r', { headers }]);
    expect(winner(s, req('/', { headers: { 'x-model': 'llama', 'x-tier': 'gold' } }))).toBe('r#0');
    expect(winner(s, req('/', { headers: { 'x-model': 'llama', 'x-tier': 'golden' } }))).toBe('none');
    expect(winner(s, req('/', { headers: { 'x-model': 'Llama', 'x-tier': 'gold' } }))).toBe('none');
    expect(winner(s, req('/', { headers: { 'x-tier': 'gold' } }))).toBe('none');
  });

  it('only the first match entry per header name counts', () => {
    const s = routes(['r', { headers: [{ type: 'Exact', name: 'x-a', value: '1' }, { type: 'Exact', name: 'X-A', value: '2' }] }]);
    expect(winner(s, req('/', { headers: { 'x-a': '1' } }))).toBe('r#0');
  });

  it('query params: exact and regex on decoded values, names case-sensitive, first value wins', () => {
    const s = routes(['r', { query: [{ type: 'Exact', name: 'model', value: 'a b' }, { type: 'RegularExpression', name: 'v', value: '\\d+' }] }]);
    expect(winner(s, req('/x?model=a%20b&v=12'))).toBe('r#0');
    expect(winner(s, req('/x?v=1&model=a%20b&model=c'))).toBe('r#0');
    expect(winner(s, req('/x?model=c&model=a%20b&v=1'))).toBe('none');
    expect(winner(s, req('/x?Model=a%20b&v=1'))).toBe('none');
    expect(winner(s, req('/x?model=a%20b&v=x'))).toBe('none');
    expect(winner(s, req('/x'))).toBe('none');
    expect(winner(s, req('/x?model=%E0%A4%A&v=1'))).toBe('none');
  });
});

describe('hostnames', () => {
  it('ignores the authority port, case and a trailing dot', () => {
    const s = routes(['r', {}, { hostnames: ['my.model.com'] }]);
    for (const host of ['my.model.com', 'My.Model.COM:8080', 'my.model.com.', 'MY.MODEL.COM.:443']) expect(winner(s, req('/', { host }))).toBe('r#0');
    expect(winner(s, req('/', { host: 'other.com' }))).toBe('none');
  });

  it('wildcards match one or more labels but not the bare domain', () => {
    const s = routes(['r', {}, { hostnames: ['*.model.com'] }]);
    expect(['a.model.com', 'a.b.model.com:80', 'model.com', 'xmodel.com'].map((host) => winner(s, req('/', { host })))).toEqual(['r#0', 'r#0', 'none', 'none']);
  });

  it('routes without hostnames match any host, IPv6 literal authorities included', () => {
    const s = routes(['r', {}]);
    expect(winner(s, req('/', { host: '[::1]:8080' }))).toBe('r#0');
    expect(winner(s, req('/', { host: '' }))).toBe('r#0');
  });
});

describe('precedence (one test per step)', () => {
  it('1. exact hostname, then the longest wildcard, then no hostnames, falling through when a bucket has no matching rule', () => {
    const s = routes(
      ['any', { path: '/' }, { created: OLD }],
      ['wide', { path: '/' }, { hostnames: ['*.com'], created: OLD }],
      ['narrow', { path: '/' }, { hostnames: ['*.model.com'], created: OLD }],
      ['exact', { path: '/only', type: 'Exact' }, { hostnames: ['my.model.com'], created: NEW }],
    );
    expect(winner(s, req('/only'))).toBe('exact#0');
    expect(winner(s, req('/other'))).toBe('narrow#0');
    expect(winner(s, req('/', { host: 'x.other.com' }))).toBe('wide#0');
    expect(winner(s, req('/', { host: 'localhost' }))).toBe('any#0');
  });

  it('2. Exact path beats PathPrefix', () => {
    const s = routes(['a-prefix', { path: '/v1/completions' }, { created: OLD }], ['b-exact', { path: '/v1/completions', type: 'Exact' }, { created: NEW }]);
    expect(winner(s, req('/v1/completions'))).toBe('b-exact#0');
    expect(winner(s, req('/v1/completions/x'))).toBe('a-prefix#0');
  });

  it('3. the longer PathPrefix wins (trailing slash not counted)', () => {
    const s = routes(['a-short', { path: '/v1/' }, { created: OLD }], ['b-long', { path: '/v1/chat' }, { created: NEW }]);
    expect(winner(s, req('/v1/chat/completions'))).toBe('b-long#0');
    expect(winner(s, req('/v1/models'))).toBe('a-short#0');
  });

  it('3b. PathPrefix beats RegularExpression (regexes rank last)', () => {
    const s = routes(['a-regex', { path: '/v1/.*', type: 'RegularExpression' }, { created: OLD }], ['b-prefix', { path: '/' }, { created: NEW }]);
    expect(winner(s, req('/v1/chat'))).toBe('b-prefix#0');
  });

  it('4. a method match beats none', () => {
    const s = routes(['a', { path: '/v1' }, { created: OLD }], ['b', { path: '/v1', method: 'POST' }, { created: NEW }]);
    expect(winner(s, req('/v1', { method: 'POST' }))).toBe('b#0');
    expect(winner(s, req('/v1', { method: 'GET' }))).toBe('a#0');
  });

  it('5. more header matches win', () => {
    const s = routes(
      ['a', { method: 'POST', headers: { 'x-a': '1' } }, { created: OLD }],
      ['b', { method: 'POST', headers: { 'x-a': '1', 'x-b': '2' } }, { created: NEW }],
    );
    expect(winner(s, req('/', { headers: { 'x-a': '1', 'x-b': '2' } }))).toBe('b#0');
    expect(winner(s, req('/', { headers: { 'x-a': '1' } }))).toBe('a#0');
  });

  it('6. more query param matches win', () => {
    const s = routes(['a', { query: { q: '1' } }, { created: OLD }], ['b', { query: { q: '1', r: '2' } }, { created: NEW }]);
    expect(winner(s, req('/?q=1&r=2'))).toBe('b#0');
    expect(winner(s, req('/?q=1'))).toBe('a#0');
  });

  it('7. the oldest route wins; a route without creationTimestamp sorts last', () => {
    const s = routes(['a', {}, { created: NEW }], ['b', {}, { created: OLD }], ['0-none', {}]);
    expect(winner(s, req('/'))).toBe('b#0');
  });

  it('8. then namespace/name alphabetically', () => {
    const s = routes(['b', {}, { created: OLD }], ['a', {}, { created: OLD }], ['a', {}, { created: OLD, ns: 'zzz', parentRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'inf-gw', namespace: 'example' }] }]);
    expect(winner(s, req('/'))).toBe('a#0');
    const m = matchRequest(s, req('/'));
    expect(m.type === 'matched' && m.rule.route.namespace).toBe('example');
  });

  it('9. then rule order within a route, then match order', () => {
    const s = snapshotOf([route('r', [
      rule([poolRef('p')], [match({ path: '/x', method: 'PUT' }), match({ path: '/a' })]),
      rule([poolRef('p')], [match({ path: '/a' })]),
    ])]);
    expect(winner(s, req('/a'))).toBe('r#0');
  });

  it('returns the snapshot rule object, and no-route when nothing matches', () => {
    const s = routes(['r', { path: '/v1' }]);
    const m = matchRequest(s, req('/v1'));
    expect(m.type === 'matched' && m.rule).toBe(s.routes[0]!.rules[0]);
    expect(matchRequest(s, req('/v2'))).toEqual({ type: 'no-route' });
    expect(matchRequest(snapshotOf([]), req('/'))).toEqual({ type: 'no-route' });
  });
});
