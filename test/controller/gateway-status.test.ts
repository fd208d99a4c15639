/** The Gateway API status plan, pure: snapshot + local objects -> desired status per object. */
import { describe, expect, it } from 'vitest';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { gatewayAddresses, planGatewayStatuses, type GatewayClassView, type GatewayStatusInput } from '../../src/controller/gateway-status.js';
import type { Gateway, KubeObject } from '../../src/model/types.js';
import type { Diagnostic } from '../../src/snapshot/types.js';
import { build, gateway, listener, LOCAL, localPool, meta, parentRef, poolRef, route, rule, service } from '../snapshot/fixtures.js';

const OURS = 'mcip-router.dev/gateway-controller';
const ALL = { namespaces: { from: 'All' as const } };

function cfg(extra: Record<string, unknown> = {}): RouterConfig {
  return namedConfig(routerConfigSchema.parse({
    clusterName: LOCAL,
    gateways: [{ namespace: 'example', name: 'inf-gw' }],
    clusters: [{ name: LOCAL, manifests: { paths: ['a/'] } }],
    ...extra,
  }));
}

const cls = (name: string, o: Partial<GatewayClassView> = {}): GatewayClassView => ({ name, controllerName: OURS, generation: 4, hasParametersRef: false, ...o });

function gw(listeners = [listener('http', { allowedRoutes: ALL })], className = 'mcip'): Gateway {
  const g = gateway('inf-gw', { listeners });
  return { ...g, metadata: meta('inf-gw', 'example', { generation: 7 }), spec: { ...g.spec, gatewayClassName: className } };
}

function plan(objects: KubeObject[], o: { config?: RouterConfig; classes?: GatewayClassView[]; addresses?: GatewayStatusInput['addresses']; diagnostics?: Diagnostic[] } = {}) {
  const config = o.config ?? cfg();
  const all = [...localPool('llm-pool'), ...objects];
  const { snapshot } = build(config, { [LOCAL]: all });
  return planGatewayStatuses({
    controllerName: OURS,
    classes: o.classes ?? [cls('mcip')],
    served: config.gateways,
    localObjects: all,
    snapshot: { routes: snapshot.routes, diagnostics: [...snapshot.diagnostics, ...(o.diagnostics ?? [])] },
    listeners: config.gatewayListeners,
    addresses: o.addresses ?? [{ type: 'IPAddress', value: '10.0.0.9' }],
  });
}

const r = (name: string, o: Parameters<typeof route>[2] = {}) => {
  const x = route(name, [rule([poolRef('llm-pool')])], o);
  return { ...x, metadata: { ...x.metadata, generation: 2 } };
};
const brief = (cs: readonly { type: string; status: string; reason: string }[]) => cs.map((c) => `${c.type}=${c.status}/${c.reason}`);

describe('planGatewayStatuses', () => {
  it('accepts GatewayClasses with our controllerName only; a parametersRef is InvalidParameters', () => {
    const p = plan([gw()], { classes: [cls('mcip'), cls('theirs', { controllerName: 'example.com/other' }), cls('params', { hasParametersRef: true })] });
    expect(p.classes.map((c) => [c.name, brief(c.conditions)])).toEqual([
      ['mcip', ['Accepted=True/Accepted']],
      ['params', ['Accepted=False/InvalidParameters']],
    ]);
    expect(p.classes[0]!.conditions[0]).toMatchObject({ observedGeneration: 4, lastTransitionTime: '' });
  });

  it('a served Gateway of our class: addresses, Accepted, Programmed, and per listener kinds, attached routes and four conditions', () => {
    const p = plan([gw([listener('http', { allowedRoutes: ALL }), listener('other', { port: 81, hostname: 'b.com', allowedRoutes: ALL })]), r('a'), r('b', { hostnames: ['b.com'] }), r('c', { hostnames: ['c.com'] })]);
    const [g] = p.gateways;
    expect(g).toMatchObject({ namespace: 'example', name: 'inf-gw', generation: 7 });
    expect(g!.status.addresses).toEqual([{ type: 'IPAddress', value: '10.0.0.9' }]);
    expect(brief(g!.status.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=True/Programmed']);
    expect(g!.status.conditions.every((c) => c.observedGeneration === 7)).toBe(true);
    expect(g!.status.listeners.map((l) => [l.name, l.attachedRoutes, l.supportedKinds, brief(l.conditions)])).toEqual([
      ['http', 3, [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }], ['Accepted=True/Accepted', 'Conflicted=False/NoConflicts', 'Programmed=True/Programmed', 'ResolvedRefs=True/ResolvedRefs']],
      // a (any host) and b (b.com) attach there too; c (c.com) does not.
      ['other', 2, [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }], ['Accepted=True/Accepted', 'Conflicted=False/NoConflicts', 'Programmed=True/Programmed', 'ResolvedRefs=True/ResolvedRefs']],
    ]);
  });

  it('only served Gateways whose class is ours get a plan', () => {
    expect(plan([gw([listener('http')], 'someone-else')]).gateways).toEqual([]);
    const twoServed = cfg({ gateways: [{ namespace: 'example', name: 'inf-gw' }, { namespace: 'example', name: 'missing' }] });
    expect(plan([gw()], { config: twoServed }).gateways.map((g) => g.name)).toEqual(['inf-gw']);
    const notServed = { ...gw(), metadata: meta('unserved', 'example') };
    expect(plan([gw(), notServed]).gateways.map((g) => g.name)).toEqual(['inf-gw']);
  });

  it('an HTTPS listener the Envoy cannot terminate is reported, never pretended: ListenersNotValid, UnsupportedProtocol, no kinds', () => {
    const p = plan([gw([listener('http', { allowedRoutes: ALL }), listener('https', { protocol: 'HTTPS', port: 443, allowedRoutes: ALL })]), r('a')]);
    const g = p.gateways[0]!;
    expect(brief(g.status.conditions)).toEqual(['Accepted=True/ListenersNotValid', 'Programmed=True/Programmed']);
    expect(g.status.conditions[0]!.message).toContain('listener "https"');
    const https = g.status.listeners[1]!;
    expect(https.supportedKinds).toEqual([]);
    expect(https.attachedRoutes).toBe(1);
    expect(brief(https.conditions)).toEqual(['Accepted=False/UnsupportedProtocol', 'Conflicted=False/NoConflicts', 'Programmed=False/Invalid', 'ResolvedRefs=True/ResolvedRefs']);
    const only = plan([gw([listener('https', { protocol: 'HTTPS', port: 443, allowedRoutes: ALL })])]).gateways[0]!;
    expect(brief(only.status.conditions)).toEqual(['Accepted=False/ListenersNotValid', 'Programmed=False/Invalid']);
  });

  it('spec.addresses the router cannot assign: Programmed False AddressNotUsable; one it reports anyway is fine', () => {
    const asking = (addresses: { type: string; value?: string }[]): Gateway => ({ ...gw(), spec: { ...gw().spec, addresses } });
    const bad = plan([asking([{ type: 'IPAddress', value: '192.0.2.1' }])]).gateways[0]!;
    expect(brief(bad.status.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=False/AddressNotUsable']);
    expect(bad.status.conditions[1]!.message).toContain('192.0.2.1');
    expect(brief(plan([asking([{ type: 'IPAddress', value: '10.0.0.9' }])]).gateways[0]!.status.conditions)[1]).toBe('Programmed=True/Programmed');
    expect(brief(plan([asking([{ type: 'IPAddress' }])]).gateways[0]!.status.conditions)[1]).toBe('Programmed=True/Programmed');
    expect(brief(plan([asking([{ type: 'Hostname' }])]).gateways[0]!.status.conditions)[1]).toBe('Programmed=False/AddressNotUsable');
  });

  it('no known address: Programmed False AddressNotAssigned', () => {
    const g = plan([gw()], { addresses: [] }).gateways[0]!;
    expect(brief(g.status.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=False/AddressNotAssigned']);
    expect(g.status.addresses).toEqual([]);
  });

  it('conflicted and kind-restricted listeners', () => {
    const kinds = [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }, { group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' }];
    const g = plan([gw([listener('a', { allowedRoutes: { ...ALL, kinds } }), listener('b', { allowedRoutes: ALL })])]).gateways[0]!;
    expect(g.status.listeners.map((l) => brief(l.conditions))).toEqual([
      ['Accepted=True/Accepted', 'Conflicted=True/HostnameConflict', 'Programmed=False/Invalid', 'ResolvedRefs=False/InvalidRouteKinds'],
      ['Accepted=True/Accepted', 'Conflicted=True/HostnameConflict', 'Programmed=False/Invalid', 'ResolvedRefs=True/ResolvedRefs'],
    ]);
    expect(brief(g.status.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=False/Invalid']);
  });
});

describe('HTTPRoute status.parents plan', () => {
  it('one entry per parentRef to our Gateway, Accepted and ResolvedRefs True, generation observed; other parents get none', () => {
    const p = plan([gw(), r('a', { parentRefs: [parentRef('inf-gw', { sectionName: 'http' }), parentRef('elsewhere')] })]);
    expect(p.routes).toHaveLength(1);
    const entry = p.routes[0]!.parents;
    expect(entry).toEqual([
      {
        parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'example', name: 'inf-gw', sectionName: 'http' },
        controllerName: OURS,
        conditions: [
          { type: 'Accepted', status: 'True', reason: 'Accepted', message: 'attached to listener(s) http', observedGeneration: 2, lastTransitionTime: '' },
          { type: 'ResolvedRefs', status: 'True', reason: 'ResolvedRefs', message: 'every backendRef resolves', observedGeneration: 2, lastTransitionTime: '' },
        ],
      },
    ]);
  });

  it('attachment failures are Accepted False with the upstream reason, per parentRef, and do not count on listeners', () => {
    const g = gw([listener('http', { hostname: 'a.com', allowedRoutes: ALL })]);
    const p = plan([
      g,
      r('host', { hostnames: ['b.com'] }),
      r('section', { parentRefs: [parentRef('inf-gw', { sectionName: 'nope' })] }),
      r('ns', { ns: 'team', parentRefs: [parentRef('inf-gw', { namespace: 'example' })] }),
    ]);
    const by = Object.fromEntries(p.routes.map((x) => [x.name, brief(x.parents[0]!.conditions)]));
    expect(by).toEqual({
      host: ['Accepted=False/NoMatchingListenerHostname', 'ResolvedRefs=True/ResolvedRefs'],
      section: ['Accepted=False/NoMatchingParent', 'ResolvedRefs=True/ResolvedRefs'],
      // Attached, so its backendRef is expanded: the pool it names does not exist in namespace team.
      ns: ['Accepted=True/Accepted', 'ResolvedRefs=False/BackendNotFound'],
    });
    expect(p.gateways[0]!.status.listeners[0]!.attachedRoutes).toBe(1);
    const sameOnly = plan([gw([listener('http')]), r('ns', { ns: 'team', parentRefs: [parentRef('inf-gw', { namespace: 'example' })] })]);
    expect(brief(sameOnly.routes[0]!.parents[0]!.conditions)[0]).toBe('Accepted=False/NotAllowedByListeners');
  });

  it('route diagnostics with a status target turn Accepted / ResolvedRefs False with their reasons (UnsupportedValue, BackendNotFound, RefNotPermitted)', () => {
    const diag = (reason: string, condition: 'Accepted' | 'ResolvedRefs', parentRefIndex?: number): Diagnostic => ({
      severity: 'error',
      subject: 'cluster-a: HTTPRoute example/a',
      reason,
      message: `${reason} message`,
      status: { kind: 'HTTPRoute', namespace: 'example', name: 'a', condition, ...(parentRefIndex !== undefined ? { parentRefIndex } : {}) },
    });
    const p = plan([gw(), r('a', { parentRefs: [parentRef('inf-gw'), parentRef('inf-gw', { sectionName: 'http' })] })], {
      diagnostics: [diag('BackendNotFound', 'ResolvedRefs'), diag('RefNotPermitted', 'ResolvedRefs'), diag('UnsupportedValue', 'Accepted', 1)],
    });
    const [first, second] = p.routes[0]!.parents;
    expect(brief(first!.conditions)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=False/BackendNotFound']);
    expect(first!.conditions[1]!.message).toBe('BackendNotFound: BackendNotFound message; RefNotPermitted: RefNotPermitted message');
    expect(brief(second!.conditions)).toEqual(['Accepted=False/UnsupportedValue', 'ResolvedRefs=False/BackendNotFound']);
    expect(second!.conditions[0]!.message).toBe('UnsupportedValue message');
    // attachedRoutes counts the route once, on the parentRef that is accepted.
    expect(p.gateways[0]!.status.listeners[0]!.attachedRoutes).toBe(1);
  });

  it('a route with a refused rule beside a routed one is Accepted with PartiallyInvalid ("Dropped Rule"); a route whose every rule is refused is not Accepted', () => {
    const timeouts = (i: number) => [{ path: `spec.rules[${i}].timeouts`, feature: 'timeouts', message: 'timeouts: not honoured' }];
    const withRules = (name: string, rules: ReturnType<typeof rule>[]) => {
      const x = route(name, rules);
      return { ...x, metadata: { ...x.metadata, generation: 2 } };
    };
    const p = plan([
      gw(),
      withRules('partly', [rule([poolRef('llm-pool')]), rule([poolRef('llm-pool')], undefined, undefined, timeouts(1))]),
      withRules('wholly', [rule([poolRef('llm-pool')], undefined, undefined, timeouts(0))]),
    ]);
    const by = Object.fromEntries(p.routes.map((x) => [x.name, x.parents[0]!.conditions]));
    expect(brief(by.partly!)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs', 'PartiallyInvalid=True/UnsupportedValue']);
    expect(by.partly![2]!.message).toMatch(/^Dropped Rule: spec\.rules\[1\]\.timeouts: timeouts: not honoured; rule 1 is refused/);
    expect(brief(by.wholly!)).toEqual(['Accepted=False/UnsupportedValue', 'ResolvedRefs=True/ResolvedRefs']);
  });

  it('attachedRoutes counts an attached route whose Accepted is False (Gateway API: attachment, not acceptance)', () => {
    const refused: Diagnostic = {
      severity: 'error',
      subject: 'cluster-a: HTTPRoute example/a',
      reason: 'UnsupportedValue',
      message: 'timeouts: not honoured',
      status: { kind: 'HTTPRoute', namespace: 'example', name: 'a', condition: 'Accepted' },
    };
    const p = plan([gw(), r('a'), r('b')], { diagnostics: [refused] });
    const by = Object.fromEntries(p.routes.map((x) => [x.name, brief(x.parents[0]!.conditions)[0]]));
    expect(by).toEqual({ a: 'Accepted=False/UnsupportedValue', b: 'Accepted=True/Accepted' });
    expect(p.gateways[0]!.status.listeners[0]!.attachedRoutes).toBe(2);
  });

  it('a route whose cached status still has our entry for a served Gateway it no longer names is planned (to remove it); others are not', () => {
    const ours = { parentRef: parentRef('inf-gw'), controllerName: OURS, conditions: [] };
    const theirs = { parentRef: parentRef('inf-gw'), controllerName: 'example.com/other', conditions: [] };
    const p = plan([gw(), r('left', { parentRefs: [parentRef('other')], statusParents: [ours] }), r('foreign', { parentRefs: [parentRef('other')], statusParents: [theirs] })]);
    expect(p.routes.map((x) => [x.name, x.parents])).toEqual([['left', []]]);
    expect([...p.routes[0]!.owned]).toEqual(['example/inf-gw']);
  });
});

describe('gatewayAddresses', () => {
  const settings = (o: Record<string, unknown> = {}) => cfg({ controller: { gatewayStatus: o } }).controller.gatewayStatus;
  it('configured addresses, then the Service: load-balancer ingress, else external IPs, else cluster IP', () => {
    const svc = service('envoy', { ns: 'mcip', ingress: [{ ip: '203.0.113.5' }, { hostname: 'lb.example.com' }], externalIPs: ['198.51.100.1'] });
    const ref = { addressService: { namespace: 'mcip', name: 'envoy' } };
    expect(gatewayAddresses(settings({ ...ref, addresses: [{ value: '192.0.2.1' }] }), [svc])).toEqual([
      { type: 'IPAddress', value: '192.0.2.1' },
      { type: 'IPAddress', value: '203.0.113.5' },
      { type: 'Hostname', value: 'lb.example.com' },
    ]);
    expect(gatewayAddresses(settings(ref), [service('envoy', { ns: 'mcip', externalIPs: ['198.51.100.1'] })])).toEqual([{ type: 'IPAddress', value: '198.51.100.1' }]);
    expect(gatewayAddresses(settings(ref), [service('envoy', { ns: 'mcip' })])).toEqual([{ type: 'IPAddress', value: '10.96.0.10' }]);
    expect(gatewayAddresses(settings(ref), [service('envoy', { ns: 'mcip', clusterIP: 'None' })])).toEqual([]);
    expect(gatewayAddresses(settings(ref), [])).toEqual([]);
  });
});
