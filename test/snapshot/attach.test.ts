import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/model/types.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { Diagnostic } from '../../src/snapshot/types.js';
import { build, config, gateway, listener, LOCAL, localPool, parentRef, poolRef, route, rule, servedGateway } from './fixtures.js';

const cfg = config();
const backend = localPool('llm-pool');

function attached(objects: KubeObject[]) {
  const { snapshot, diagnostics } = build(cfg, { [LOCAL]: [...backend, ...objects] });
  return { routes: snapshot.routes, diagnostics };
}

const reasons = (ds: readonly Diagnostic[]) => ds.map((d) => d.reason);
const r = (name: string, o: Parameters<typeof route>[2] = {}) => route(name, [rule([poolRef('llm-pool')])], o);

describe('route attachment', () => {
  it('attaches a route whose parentRef names a served Gateway (namespace defaults to the route)', () => {
    const { routes } = attached([servedGateway(), r('a')]);
    expect(routes.map((x) => x.route.name)).toEqual(['a']);
    expect(routes[0]!.parents).toEqual(['example/inf-gw']);
  });

  it('ignores routes for other Gateways, other kinds and other groups without diagnostics', () => {
    const { routes, diagnostics } = attached([
      servedGateway(),
      gateway('other'),
      gateway('inf-gw', { ns: 'elsewhere' }),
      r('other-gw', { parentRefs: [parentRef('other')] }),
      r('other-ns', { parentRefs: [parentRef('inf-gw', { namespace: 'elsewhere' })] }),
      r('other-kind', { parentRefs: [parentRef('inf-gw', { kind: 'Service', group: '' })] }),
    ]);
    expect(routes).toEqual([]);
    expect(diagnostics.filter((d) => d.subject.includes('HTTPRoute'))).toEqual([]);
  });

  it('a parentRef to a Gateway that exists nowhere is an error when the route attaches to nothing else, a warning otherwise', () => {
    const { routes, diagnostics } = attached([
      servedGateway(),
      r('typo', { parentRefs: [parentRef('inf-gateway')] }),
      r('partly', { parentRefs: [parentRef('inf-gateway'), parentRef('inf-gw')] }),
    ]);
    expect(routes.map((x) => x.route.name)).toEqual(['partly']);
    const d = diagnostics.filter((x) => x.reason === 'NoMatchingParent');
    expect(d.map((x) => [x.severity, x.subject, x.path])).toEqual([
      ['error', 'cluster-a: HTTPRoute example/typo', 'spec.parentRefs[0]'],
      ['warning', 'cluster-a: HTTPRoute example/partly', 'spec.parentRefs[0]'],
    ]);
    expect(d[0]!.message).toBe(
      'Gateway example/inf-gateway is neither served by this router (config gateways: example/inf-gw) nor among cluster cluster-a\'s objects; ' +
        'the route is not attached to it; attached to no served Gateway, its requests get 404',
    );
    // No implementation owns a Gateway that does not exist: no status condition is written for it.
    expect(d[0]!.status).toBeUndefined();
  });

  it('a route refused by every served parentRef is an error (its requests get 404)', () => {
    const { diagnostics } = attached([servedGateway(), r('bad-section', { parentRefs: [parentRef('inf-gw', { sectionName: 'missing' })] })]);
    expect(diagnostics.find((x) => x.reason === 'NoMatchingParent')?.severity).toBe('error');
  });

  it('an explicit parentRef namespace must name the served Gateway', () => {
    const { routes } = attached([
      servedGateway(),
      r('cross', { ns: 'team', parentRefs: [parentRef('inf-gw', { namespace: 'example' })] }),
    ]);
    expect(routes.map((x) => x.route.name)).toEqual(['cross']);
  });

  it('reads HTTPRoutes from the local cluster only', () => {
    const { snapshot } = build(cfg, { [LOCAL]: [...backend, servedGateway()], 'cluster-b': [r('remote')] });
    expect(snapshot.routes).toEqual([]);
  });

  it('attaches anyway, with an info GatewayNotFound, when the served Gateway object is absent', () => {
    const { routes, diagnostics } = attached([r('a', { hostnames: ['My.Model.com'], parentRefs: [parentRef('inf-gw', { sectionName: 'nope' })] })]);
    expect(routes.map((x) => x.hostnames)).toEqual([['my.model.com']]);
    const d = diagnostics.find((x) => x.reason === 'GatewayNotFound');
    expect(d?.severity).toBe('info');
    expect(d?.subject).toBe('cluster-a: Gateway example/inf-gw');
  });

  it('honours sectionName and port against the listeners', () => {
    const gw = servedGateway([
      listener('http', { port: 80, hostname: 'a.example.com', allowedRoutes: { namespaces: { from: 'All' } } }),
      listener('alt', { port: 8080, hostname: 'b.example.com', allowedRoutes: { namespaces: { from: 'All' } } }),
    ]);
    const { routes, diagnostics } = attached([
      gw,
      r('by-section', { parentRefs: [parentRef('inf-gw', { sectionName: 'alt' })] }),
      r('by-port', { parentRefs: [parentRef('inf-gw', { port: 80 })] }),
      r('bad-section', { parentRefs: [parentRef('inf-gw', { sectionName: 'missing' })] }),
      r('bad-port', { parentRefs: [parentRef('inf-gw', { sectionName: 'alt', port: 80 })] }),
    ]);
    expect(Object.fromEntries(routes.map((x) => [x.route.name, x.hostnames]))).toEqual({
      'by-section': ['b.example.com'],
      'by-port': ['a.example.com'],
    });
    const bad = diagnostics.filter((d) => d.reason === 'NoMatchingParent');
    expect(bad.map((d) => d.subject).sort()).toEqual(['cluster-a: HTTPRoute example/bad-port', 'cluster-a: HTTPRoute example/bad-section']);
    expect(bad[0]!.path).toBe('spec.parentRefs[0]');
    expect(bad.find((d) => d.subject.endsWith('bad-section'))!.message).toContain('sectionName "missing"');
    // The route's Accepted condition for that parentRef, with the upstream reason.
    expect(bad.find((d) => d.subject.endsWith('bad-port'))!.status).toEqual({
      kind: 'HTTPRoute', namespace: 'example', name: 'bad-port', condition: 'Accepted', parentRefIndex: 0,
    });
  });

  it('allowedRoutes from Same admits only the Gateway namespace', () => {
    const gw = servedGateway([listener('http', { allowedRoutes: { namespaces: { from: 'Same' } } })]);
    const ref = [parentRef('inf-gw', { namespace: 'example' })];
    const { routes, diagnostics } = attached([gw, r('same'), r('other', { ns: 'team', parentRefs: ref })]);
    expect(routes.map((x) => x.route.name)).toEqual(['same']);
    const d = diagnostics.find((x) => x.reason === 'NotAllowedByListeners');
    expect(d?.subject).toBe('cluster-a: HTTPRoute team/other');
    expect(d?.message).toContain('from: Same');
    expect(d?.status).toEqual({ kind: 'HTTPRoute', namespace: 'team', name: 'other', condition: 'Accepted', parentRefIndex: 0 });
  });

  it('allowedRoutes from All admits every namespace', () => {
    const gw = servedGateway([listener('http', { allowedRoutes: { namespaces: { from: 'All' } } })]);
    const { routes } = attached([gw, r('other', { ns: 'team', parentRefs: [parentRef('inf-gw', { namespace: 'example' })] })]);
    expect(routes.map((x) => x.route.name)).toEqual(['other']);
  });

  it('allowedRoutes from Selector admits every namespace with a warning (namespaces are not read)', () => {
    const gw = servedGateway([listener('http', { allowedRoutes: { namespaces: { from: 'Selector' } } })]);
    const { routes, diagnostics } = attached([gw, r('other', { ns: 'team', parentRefs: [parentRef('inf-gw', { namespace: 'example' })] })]);
    expect(routes.map((x) => x.route.name)).toEqual(['other']);
    const d = diagnostics.find((x) => x.reason === 'SelectorNotEvaluated');
    expect(d?.severity).toBe('warning');
    expect(d?.path).toBe('spec.listeners[0].allowedRoutes.namespaces');
  });

  it('listeners that cannot carry HTTPRoutes do not attach', () => {
    const gw = servedGateway([listener('tcp', { protocol: 'TCP', allowedRoutes: { namespaces: { from: 'All' } } })]);
    const { routes, diagnostics } = attached([gw, r('a')]);
    expect(routes).toEqual([]);
    expect(reasons(diagnostics)).toContain('NotAllowedByListeners');
  });

  it('intersects route hostnames with the listener hostname (wildcards match one or more labels, never the bare domain)', () => {
    const gw = servedGateway([listener('http', { hostname: '*.example.com', allowedRoutes: { namespaces: { from: 'All' } } })]);
    const { routes, diagnostics } = attached([
      gw,
      r('mixed', { hostnames: ['a.example.com', 'x.y.example.com', 'example.com', 'other.org'] }),
      r('none', { hostnames: [] }),
      r('bare', { hostnames: ['example.com'] }),
    ]);
    expect(Object.fromEntries(routes.map((x) => [x.route.name, x.hostnames]))).toEqual({
      mixed: ['a.example.com', 'x.y.example.com'],
      none: ['*.example.com'],
    });
    const d = diagnostics.find((x) => x.reason === 'NoMatchingListenerHostname');
    expect(d?.subject).toBe('cluster-a: HTTPRoute example/bare');
    expect(d?.status).toEqual({ kind: 'HTTPRoute', namespace: 'example', name: 'bare', condition: 'Accepted', parentRefIndex: 0 });
  });

  it('a route wildcard narrows to a more specific listener hostname', () => {
    const gw = servedGateway([listener('http', { hostname: 'my.model.com', allowedRoutes: { namespaces: { from: 'All' } } })]);
    const { routes } = attached([gw, r('w', { hostnames: ['*.model.com'] })]);
    expect(routes[0]!.hostnames).toEqual(['my.model.com']);
  });

  it('unions hostnames over listeners and served Gateways; no restriction anywhere means any host', () => {
    const gw = servedGateway([
      listener('a', { hostname: 'a.com', allowedRoutes: { namespaces: { from: 'All' } } }),
      listener('b', { hostname: 'b.com', allowedRoutes: { namespaces: { from: 'All' } } }),
    ]);
    const gw2 = gateway('gw2', { listeners: [listener('any')] });
    const two = config({ gateways: [{ namespace: 'example', name: 'inf-gw' }, { namespace: 'example', name: 'gw2' }] });
    const both = build(two, { [LOCAL]: [...backend, gw, gw2, r('r1'), r('r2', { parentRefs: [parentRef('inf-gw')] })] }).snapshot.routes;
    expect(both.find((x) => x.route.name === 'r2')!.hostnames).toEqual(['a.com', 'b.com']);
    const any = build(two, { [LOCAL]: [...backend, gw, gw2, r('r3', { parentRefs: [parentRef('inf-gw'), parentRef('gw2')] })] }).snapshot.routes;
    expect(any[0]!.hostnames).toEqual([]);
    expect(any[0]!.parents).toEqual(['example/inf-gw', 'example/gw2']);
  });

  it('records per parentRef the listeners a route attached to (sectionName, hostname) for listener status', () => {
    const all = { namespaces: { from: 'All' as const } };
    const gw = servedGateway([listener('a', { hostname: 'a.com', allowedRoutes: all }), listener('b', { hostname: 'b.com', allowedRoutes: all })]);
    const { routes } = attached([
      gw,
      r('both'),
      r('only-b', { hostnames: ['b.com'] }),
      r('two-refs', { parentRefs: [parentRef('inf-gw', { sectionName: 'a' }), parentRef('other'), parentRef('inf-gw', { sectionName: 'b' })] }),
    ]);
    const by = Object.fromEntries(routes.map((x) => [x.route.name, x.attachments]));
    expect(by.both).toEqual([{ parentRefIndex: 0, gateway: 'example/inf-gw', listeners: ['a', 'b'] }]);
    expect(by['only-b']).toEqual([{ parentRefIndex: 0, gateway: 'example/inf-gw', listeners: ['b'] }]);
    expect(by['two-refs']).toEqual([
      { parentRefIndex: 0, gateway: 'example/inf-gw', listeners: ['a'] },
      { parentRefIndex: 2, gateway: 'example/inf-gw', listeners: ['b'] },
    ]);
  });

  it('a failed attachment names the route condition it turns False (Accepted, per parentRef) with the upstream reason', () => {
    const gw = servedGateway([listener('http', { hostname: 'a.com', allowedRoutes: { namespaces: { from: 'All' } } })]);
    const { diagnostics } = attached([
      gw,
      r('bad', { hostnames: ['b.com'], parentRefs: [parentRef('other'), parentRef('inf-gw')] }),
      r('nosection', { parentRefs: [parentRef('inf-gw', { sectionName: 'x' })] }),
    ]);
    const route = (name: string, i = 0) => diagnostics.find((d) => d.subject === `cluster-a: HTTPRoute example/${name}` && d.path === `spec.parentRefs[${i}]`);
    // parentRefs[0] names a Gateway that exists nowhere: NoMatchingParent on that parentRef.
    expect(route('bad', 0)?.reason).toBe('NoMatchingParent');
    expect(route('bad', 1)?.reason).toBe('NoMatchingListenerHostname');
    expect(route('bad', 1)?.status).toEqual({ kind: 'HTTPRoute', namespace: 'example', name: 'bad', condition: 'Accepted', parentRefIndex: 1 });
    expect(route('nosection')?.status).toEqual({ kind: 'HTTPRoute', namespace: 'example', name: 'nosection', condition: 'Accepted', parentRefIndex: 0 });
  });

  it('a listener whose allowedRoutes.kinds leaves out HTTPRoute takes no route (NotAllowedByListeners, InvalidRouteKinds on the listener)', () => {
    const kinds = [{ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' }];
    const gw = servedGateway([listener('grpc', { allowedRoutes: { namespaces: { from: 'All' }, kinds } })]);
    const { routes, diagnostics } = attached([gw, r('a')]);
    expect(routes).toEqual([]);
    expect(diagnostics.find((d) => d.subject.endsWith('HTTPRoute example/a'))?.reason).toBe('NotAllowedByListeners');
    const l = diagnostics.find((d) => d.reason === 'InvalidRouteKinds');
    expect(l?.status).toEqual({ kind: 'Gateway', namespace: 'example', name: 'inf-gw', condition: 'ResolvedRefs', listener: 'grpc' });
    expect(l?.message).toContain('GRPCRoute');
  });

  it('reports listeners the Envoy does not serve (HTTPS it cannot terminate, another port) without refusing their routes', () => {
    const all = { namespaces: { from: 'All' as const } };
    const gw = servedGateway([listener('http', { port: 80, allowedRoutes: all }), listener('https', { protocol: 'HTTPS', port: 443, allowedRoutes: all })]);
    const ports = namedConfig(routerConfigSchema.parse({ ...cfgInput(), gatewayListeners: { ports: [8080] } }));
    const { snapshot, diagnostics } = build(ports, { [LOCAL]: [...backend, gw, r('a')] });
    expect(snapshot.routes.map((x) => x.attachments[0]?.listeners)).toEqual([['http', 'https']]);
    const gwDiag = diagnostics.filter((d) => d.subject === 'cluster-a: Gateway example/inf-gw');
    expect(gwDiag.map((d) => [d.path, d.reason, d.status?.listener, d.status?.condition])).toEqual([
      ['spec.listeners[0]', 'PortUnavailable', 'http', 'Accepted'],
      ['spec.listeners[1]', 'UnsupportedProtocol', 'https', 'Accepted'],
    ]);
    expect(gwDiag[1]!.message).toContain('does not terminate TLS');
    // Without a port list only the protocol is judged; HTTPS is served once the config says the Envoy terminates TLS.
    const tls = namedConfig(routerConfigSchema.parse({ ...cfgInput(), gatewayListeners: { protocols: ['HTTP', 'HTTPS'] } }));
    const ok = build(tls, { [LOCAL]: [...backend, gw, r('a')] }).diagnostics.filter((d) => d.subject === 'cluster-a: Gateway example/inf-gw');
    expect(ok).toEqual([]);
  });
});

function cfgInput(): Record<string, unknown> {
  return {
    clusterName: LOCAL,
    gateways: [{ namespace: 'example', name: 'inf-gw' }],
    clusters: [{ name: LOCAL, manifests: { paths: ['a/'] } }, { name: 'cluster-b', manifests: { paths: ['b/'] } }],
  };
}
