import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/model/types.js';
import type { Candidate, Exclusion } from '../../src/snapshot/types.js';
import {
  build,
  config,
  gateway,
  importRef,
  listener,
  LOCAL,
  parentRef,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  servedGateway,
  service,
  state,
  type PoolOpts,
} from './fixtures.js';
import { buildSnapshot } from '../../src/snapshot/build.js';

type Cfg = ReturnType<typeof config>;

/** Resolves one local pool (+ given objects) and returns its candidate or exclusions. */
function local(objects: KubeObject[], cfg: Cfg = config()) {
  const res = build(cfg, { [LOCAL]: [servedGateway(), ...objects, route('r', [rule([poolRef('llm-pool')])])] });
  const g = res.snapshot.routes[0]!.rules[0]!.backends[0]!;
  return { candidate: g.candidates[0], excluded: g.excluded, diagnostics: res.diagnostics };
}

/** Resolves the cluster-b pool through an import. */
function remote(objects: KubeObject[], cfg: Cfg = config(), localObjects: KubeObject[] = []) {
  const res = build(cfg, {
    [LOCAL]: [servedGateway(), poolImport('llm-pool', [['cluster-b']]), route('r', [rule([importRef('llm-pool')])]), ...localObjects],
    'cluster-b': objects,
  });
  const g = res.snapshot.routes[0]!.rules[0]!.backends[0]!;
  return { candidate: g.candidates[0] as Candidate | undefined, excluded: g.excluded as readonly Exclusion[], diagnostics: res.diagnostics, objects: res.snapshot.excludedObjects };
}

const exportedPool = (o: PoolOpts = {}) => pool('llm-pool', { exported: true, ...o });

describe('EPP resolution', () => {
  it('uses the endpointPickerRef Service in the pool namespace with the ref port, and the cluster TLS config', () => {
    const cfg = config();
    const { candidate } = local([pool('llm-pool', { epp: 'epp', eppPort: 9010 }), service('epp', { clusterIP: '10.0.0.7', ports: [9010] })], cfg);
    expect(candidate!.epp).toEqual({
      address: '10.0.0.7:9010',
      host: '10.0.0.7',
      port: 9010,
      cluster: LOCAL,
      service: { namespace: 'example', name: 'epp' },
      source: 'clusterIP',
      tls: cfg.clusters[0]!.epp.tls,
    });
    expect(candidate!.epp!.tls).toMatchObject({ enabled: true, insecureSkipVerify: false });
  });

  it('prefers loadBalancer ingress ip, then hostname, then externalIPs, then clusterIP', () => {
    const epp = (o: Parameters<typeof service>[1]) => local([pool('llm-pool', { epp: 'epp' }), service('epp', o)]).candidate!.epp!;
    expect(epp({ ingress: [{ ip: '1.2.3.4' }], externalIPs: ['5.6.7.8'] })).toMatchObject({ host: '1.2.3.4', source: 'loadBalancer' });
    expect(epp({ ingress: [{ hostname: 'lb.example.com' }] })).toMatchObject({ address: 'lb.example.com:9002', source: 'loadBalancer' });
    expect(epp({ externalIPs: ['5.6.7.8', '9.9.9.9'] })).toMatchObject({ host: '5.6.7.8', source: 'externalIP' });
    expect(epp({})).toMatchObject({ host: '10.96.0.10', source: 'clusterIP' });
  });

  it('brackets IPv6 hosts in the address', () => {
    const { candidate } = local([pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: 'fd00:10:96::a' })]);
    expect(candidate!.epp).toMatchObject({ host: 'fd00:10:96::a', address: '[fd00:10:96::a]:9002' });
  });

  it('uses a config address override (its own port wins), even without the Service object', () => {
    const cfg = config({
      clusters: [
        { name: LOCAL, addressOverrides: { services: [{ namespace: 'example', name: 'epp', address: '[fd00::5]:7000' }, { namespace: 'example', name: 'epp2', address: 'epp.internal' }] } },
        { name: 'cluster-b' },
      ],
    });
    expect(local([pool('llm-pool', { epp: 'epp' }), service('epp')], cfg).candidate!.epp).toMatchObject({
      address: '[fd00::5]:7000', host: 'fd00::5', port: 7000, source: 'override',
    });
    expect(local([pool('llm-pool', { epp: 'epp2', eppPort: 9003 })], cfg).candidate!.epp).toMatchObject({
      address: 'epp.internal:9003', source: 'override',
    });
  });

  it('refuses an endpointPickerRef that is not a core Service or lacks a port (InvalidExtensionRef)', () => {
    for (const o of [{ eppKind: 'Deployment' }, { eppGroup: 'apps' }, { eppPort: null }] as PoolOpts[]) {
      const { candidate, excluded } = local([pool('llm-pool', { epp: 'epp', ...o }), service('epp')]);
      expect(candidate).toBeUndefined();
      expect(excluded.map((x) => x.reason)).toEqual(['InvalidExtensionRef']);
    }
  });

  it('reports a missing Service (ServiceNotFound), ExternalName and address-less Services', () => {
    expect(local([pool('llm-pool', { epp: 'epp' })]).excluded[0]).toMatchObject({ reason: 'ServiceNotFound', subject: 'cluster-a/example/llm-pool' });
    expect(local([pool('llm-pool', { epp: 'epp' }), service('epp', { type: 'ExternalName', clusterIP: '' })]).excluded[0]!.reason).toBe('ExternalNameNotSupported');
    expect(local([pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: 'None' })]).excluded[0]!.reason).toBe('NoServiceAddress');
    expect(local([pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: '' })]).excluded[0]!.reason).toBe('NoServiceAddress');
  });

  it('refuses ExternalName Services even with an address override', () => {
    const cfg = config({ clusters: [{ name: LOCAL, addressOverrides: { services: [{ namespace: 'example', name: 'epp', address: '10.0.0.1' }] } }] });
    expect(local([pool('llm-pool', { epp: 'epp' }), service('epp', { type: 'ExternalName' })], cfg).excluded[0]!.reason).toBe('ExternalNameNotSupported');
  });

  it('warns when the Service does not expose the ref port but still resolves', () => {
    const { candidate, diagnostics } = local([pool('llm-pool', { epp: 'epp', eppPort: 9002 }), service('epp', { ports: [80] })]);
    expect(candidate!.epp!.port).toBe(9002);
    expect(diagnostics.find((d) => d.reason === 'ServicePortMismatch')?.severity).toBe('warning');
  });

  it('resolves a remote pool EPP in its own cluster with that cluster TLS config (Endpoint mode)', () => {
    const cfg = config({ clusters: [{ name: LOCAL }, { name: 'cluster-b', epp: { tls: { enabled: false } } }] });
    const { candidate } = remote([exportedPool({ epp: 'epp' }), service('epp', { ingress: [{ ip: '34.1.1.1' }] })], cfg, [service('epp', { clusterIP: '10.0.0.1' })]);
    expect(candidate).toMatchObject({ via: 'epp', local: false, cluster: 'cluster-b' });
    expect(candidate!.epp).toMatchObject({ address: '34.1.1.1:9002', cluster: 'cluster-b', tls: { enabled: false } });
    expect(candidate!.parent).toBeUndefined();
  });

  it('excludes a remote candidate whose EPP does not resolve in Endpoint mode', () => {
    expect(remote([exportedPool({ epp: 'epp' })]).excluded[0]!.reason).toBe('ServiceNotFound');
  });
});

describe("EPP addresses from the member's Service are held to its destination rules", () => {
  /** The Service fields an address can come from, each with the other fields empty. */
  const FIELDS = [
    { field: 'status.loadBalancer.ingress[0].ip', svc: (a: string) => service('epp', { ingress: [{ ip: a }], externalIPs: ['192.0.2.1'] }) },
    { field: 'spec.externalIPs[0]', svc: (a: string) => service('epp', { externalIPs: [a] }) },
    { field: 'spec.clusterIP', svc: (a: string) => service('epp', { clusterIP: a }) },
  ];
  const DENIED = ['127.0.0.1', '169.254.169.254', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '::1', 'fe80::1'];

  it.each(FIELDS)('leaves the pool out when $field holds a denied address (EppAddressDenied), naming the Service, the field and the fixes', ({ field, svc }) => {
    for (const a of DENIED) {
      const res = build(config(), { [LOCAL]: [servedGateway(), pool('llm-pool', { epp: 'epp' }), svc(a), route('r', [rule([poolRef('llm-pool')])])] });
      const g = res.snapshot.routes[0]!.rules[0]!.backends[0]!;
      expect(g.candidates, a).toEqual([]);
      expect(g.excluded[0]).toMatchObject({ reason: 'EppAddressDenied', subject: 'cluster-a/example/llm-pool' });
      const message = g.excluded[0]!.message;
      expect(message).toContain(`EPP Service example/epp ${field}:`);
      expect(message).toContain('inside destinations.deny');
      expect(message).toContain('clusters[cluster-a].addressOverrides.services');
      expect(message).toContain('clusters[cluster-a].eppAnswers.destinations');
      expect(res.snapshot.candidates.size).toBe(0);
      expect(res.snapshot.excludedObjects).toEqual([
        { cluster: LOCAL, kind: 'Service', namespace: 'example', name: 'epp', field, reason: 'EppAddressDenied', message },
      ]);
      expect(res.diagnostics.find((d) => d.reason === 'EppAddressDenied')).toMatchObject({ severity: 'error', subject: 'cluster-a: InferencePool example/llm-pool' });
    }
  });

  it.each(FIELDS)('uses an allowed address in $field, and one the member allows', ({ svc }) => {
    expect(local([pool('llm-pool', { epp: 'epp' }), svc('10.1.2.3')]).candidate!.epp!.address).toBe('10.1.2.3:9002');
    const lab = config({ clusters: [{ name: LOCAL, eppAnswers: { destinations: { allow: ['127.0.0.0/8'], deny: [] } } }, { name: 'cluster-b' }] });
    const { candidate, excluded } = local([pool('llm-pool', { epp: 'epp' }), svc('127.0.0.1')], lab);
    expect(excluded).toEqual([]);
    expect(candidate!.epp!.address).toBe('127.0.0.1:9002');
  });

  it("judges the address by the member's own rules: outside destinations.allow is refused too", () => {
    const narrow = config({ clusters: [{ name: LOCAL, eppAnswers: { destinations: { allow: ['10.0.0.0/8'] } } }, { name: 'cluster-b' }] });
    const { excluded } = local([pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: '192.168.1.1' })], narrow);
    expect(excluded[0]).toMatchObject({ reason: 'EppAddressDenied' });
    expect(excluded[0]!.message).toContain('192.168.1.1:9002 is outside destinations.allow');
  });

  it('refuses a field that must hold an IP but holds a name, and a load-balancer hostname that is not a DNS name', () => {
    const reason = (o: Parameters<typeof service>[1]) => local([pool('llm-pool', { epp: 'epp' }), service('epp', o)]).excluded[0];
    expect(reason({ clusterIP: 'localhost' })).toMatchObject({ reason: 'EppAddressDenied' });
    expect(reason({ clusterIP: 'localhost' })!.message).toContain('spec.clusterIP: "localhost" is not an IP address');
    expect(reason({ externalIPs: ['metadata.google.internal'] })!.message).toContain('spec.externalIPs[0]: "metadata.google.internal" is not an IP address');
    expect(reason({ ingress: [{ ip: 'localhost' }] })!.reason).toBe('EppAddressDenied');
    expect(reason({ ingress: [{ hostname: 'a:b@evil' }] })!.message).toContain('status.loadBalancer.ingress[0].hostname: "a:b@evil" is not a DNS name');
  });

  it('keeps a load-balancer hostname (judged when the router connects), and an IP written in the hostname field is judged now', () => {
    const epp = (o: Parameters<typeof service>[1]) => local([pool('llm-pool', { epp: 'epp' }), service('epp', o)]);
    expect(epp({ ingress: [{ hostname: 'localhost' }] }).candidate!.epp).toMatchObject({ host: 'localhost', source: 'loadBalancer' });
    expect(epp({ ingress: [{ hostname: '127.0.0.1' }] }).excluded[0]!.message).toContain('status.loadBalancer.ingress[0].hostname: 127.0.0.1:9002 is inside destinations.deny');
  });

  it('judges a load-balancer hostname that a URL reads as an IP (trailing dot, one number, short or octal/hex forms) as that IP', () => {
    const epp = (hostname: string) => local([pool('llm-pool', { epp: 'epp' }), service('epp', { ingress: [{ hostname }] })]);
    // Node dials these as the IP they spell without asking the connect-time lookup hook.
    for (const [hostname, ip] of [['127.0.0.1.', '127.0.0.1'], ['2130706433', '127.0.0.1'], ['127.1', '127.0.0.1'], ['0x7f.1', '127.0.0.1'], ['0251.0376.0251.0376', '169.254.169.254'], ['169.254.169.254.', '169.254.169.254']]) {
      const { candidate, excluded } = epp(hostname!);
      expect(candidate, hostname).toBeUndefined();
      expect(excluded[0], hostname).toMatchObject({ reason: 'EppAddressDenied' });
      expect(excluded[0]!.message).toContain(`status.loadBalancer.ingress[0].hostname: "${hostname}" is the IP address ${ip}: ${ip}:9002 is inside destinations.deny`);
    }
    expect(epp('10.1.2.3.').candidate!.epp).toMatchObject({ host: '10.1.2.3.', source: 'loadBalancer' });
    expect(epp('epp.example.123').excluded[0]!.message).toContain('"epp.example.123" is not a DNS name');
  });

  it("does not check the operator's address override", () => {
    const cfg = config({ clusters: [{ name: LOCAL, addressOverrides: { services: [{ namespace: 'example', name: 'epp', address: '127.0.0.1:9102' }] } }, { name: 'cluster-b' }] });
    const { candidate, excluded } = local([pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: '169.254.169.254' })], cfg);
    expect(excluded).toEqual([]);
    expect(candidate!.epp).toMatchObject({ address: '127.0.0.1:9102', source: 'override' });
  });

  it('lists a Service shared by two denied pools once, and other pools keep serving', () => {
    const res = build(config(), {
      [LOCAL]: [
        servedGateway(),
        pool('p1', { epp: 'bad' }), pool('p2', { epp: 'bad' }), pool('p3', { epp: 'good' }),
        service('bad', { clusterIP: '169.254.169.254' }), service('good', { clusterIP: '10.0.0.9' }),
        route('r', [rule([poolRef('p1'), poolRef('p2'), poolRef('p3')])]),
      ],
    });
    expect(res.snapshot.excludedObjects.map((x) => `${x.kind} ${x.name} ${x.reason}`)).toEqual(['Service bad EppAddressDenied']);
    expect([...res.snapshot.candidates.keys()]).toEqual(['cluster-a/example/p3']);
  });

  it('reports the refused Service again on a rebuild that reuses the cached resolution', () => {
    const states = [state(LOCAL, [servedGateway(), pool('llm-pool', { epp: 'epp' }), service('epp', { clusterIP: '127.0.0.1' }), route('r', [rule([poolRef('llm-pool')])])])];
    const cfg = config();
    const first = buildSnapshot({ config: cfg, clusters: states, version: 1 });
    const second = buildSnapshot({ config: cfg, clusters: states, version: 2 });
    expect(second.snapshot.excludedObjects).toEqual(first.snapshot.excludedObjects);
    expect(second.snapshot.excludedObjects).toHaveLength(1);
    expect(second.diagnostics.filter((d) => d.reason === 'EppAddressDenied')).toHaveLength(1);
  });

  it('in Parent mode a remote pool stays routed through its parent, without its denied EPP, and the Service is reported', () => {
    const cfg = config({ mode: 'Parent' });
    const res = build(cfg, {
      [LOCAL]: [servedGateway(), poolImport('llm-pool', [['cluster-b']]), route('r', [rule([importRef('llm-pool')])])],
      'cluster-b': [exportedPool({ epp: 'epp', parents: [parentRef('gw-b')] }), service('epp', { clusterIP: '127.0.0.1' }), gateway('gw-b', { addresses: ['192.0.2.10'] })],
    });
    const c = res.snapshot.routes[0]!.rules[0]!.backends[0]!.candidates[0]!;
    expect(c).toMatchObject({ via: 'parent' });
    expect(c.epp).toBeUndefined();
    expect(res.snapshot.excludedObjects).toMatchObject([{ cluster: 'cluster-b', kind: 'Service', name: 'epp', field: 'spec.clusterIP', reason: 'EppAddressDenied' }]);
    expect(res.diagnostics.find((d) => d.reason === 'EppAddressDenied')).toMatchObject({ severity: 'warning', subject: 'cluster-b: InferencePool example/llm-pool' });
  });
});

describe('parent resolution (Parent mode)', () => {
  const parentCfg = (gateways: object[] = []) => config({ mode: 'Parent', clusters: [{ name: LOCAL }, { name: 'cluster-b', addressOverrides: { gateways } }] });
  const withGw = (gw: KubeObject, refs = [parentRef('gw-b')], extra: KubeObject[] = []) =>
    remote([exportedPool({ epp: 'epp', parents: refs }), service('epp'), gw, ...extra], parentCfg());

  it('routes a remote candidate via its parent Gateway status address and listener port; EPP kept when resolvable', () => {
    const { candidate } = withGw(gateway('gw-b', { addresses: ['192.0.2.10'], listeners: [listener('http', { port: 8080 })] }));
    expect(candidate).toMatchObject({ via: 'parent', local: false });
    expect(candidate!.parent).toEqual({ address: '192.0.2.10:8080', cluster: 'cluster-b', gateway: { namespace: 'example', name: 'gw-b' }, source: 'status' });
    expect(candidate!.epp?.address).toBe('10.96.0.10:9002');
  });

  it('a remote EPP that does not resolve is fine in Parent mode', () => {
    const { candidate } = remote([exportedPool({ epp: 'missing', parents: [parentRef('gw-b')] }), gateway('gw-b', { addresses: ['192.0.2.10'] })], parentCfg());
    expect(candidate).toMatchObject({ via: 'parent' });
    expect(candidate!.epp).toBeUndefined();
  });

  it('local candidates in Parent mode stay via epp without a parent', () => {
    const { candidate } = local([pool('llm-pool', { epp: 'epp', parents: [parentRef('inf-gw')] }), service('epp')], parentCfg());
    expect(candidate).toMatchObject({ via: 'epp', local: true });
    expect(candidate!.parent).toBeUndefined();
  });

  it('takes the port from the sectionName listener, else parentRef.port, else the first HTTP listener, else the first listener', () => {
    const listeners = [listener('tls', { port: 443, protocol: 'HTTPS' }), listener('web', { port: 8080 }), listener('alt', { port: 9090 })];
    const gw = gateway('gw-b', { addresses: ['192.0.2.10'], listeners });
    const port = (ref: ReturnType<typeof parentRef>, g: KubeObject = gw) => withGw(g, [ref]).candidate!.parent!.address;
    expect(port(parentRef('gw-b', { sectionName: 'alt', port: 1 }))).toBe('192.0.2.10:9090');
    expect(port(parentRef('gw-b', { sectionName: 'nope', port: 7777 }))).toBe('192.0.2.10:7777');
    expect(port(parentRef('gw-b'))).toBe('192.0.2.10:8080');
    const httpsOnly = gateway('gw-b', { addresses: ['192.0.2.10'], listeners: [listener('tls', { port: 443, protocol: 'HTTPS' })] });
    expect(port(parentRef('gw-b'), httpsOnly)).toBe('192.0.2.10:443');
  });

  it('brackets an IPv6 parent address', () => {
    expect(withGw(gateway('gw-b', { addresses: ['2001:db8::10'] })).candidate!.parent!.address).toBe('[2001:db8::10]:80');
  });

  it('excludes a parent whose status address is a hostname (ParentAddressNotIP)', () => {
    for (const a of [{ type: 'Hostname', value: 'gw.example.com' }, { type: 'IPAddress', value: 'gw.example.com' }]) {
      const { candidate, excluded } = withGw(gateway('gw-b', { addresses: [a] }));
      expect(candidate).toBeUndefined();
      expect(excluded[0]).toMatchObject({ reason: 'ParentAddressNotIP', subject: 'cluster-b/example/llm-pool' });
      expect(excluded[0]!.message).toContain('ORIGINAL_DST');
    }
  });

  it("excludes a parent whose status address the member's destination rules deny (ParentAddressDenied); a member may allow it", () => {
    // The Gateway status comes from the member cluster: it must not steer prompts to a metadata service or loopback.
    for (const a of ['169.254.169.254', '::ffff:169.254.169.254', '127.0.0.1', 'fe80::1']) {
      const { candidate, excluded, objects } = withGw(gateway('gw-b', { addresses: [a] }));
      expect(candidate).toBeUndefined();
      expect(excluded[0]).toMatchObject({ reason: 'ParentAddressDenied', subject: 'cluster-b/example/llm-pool' });
      expect(excluded[0]!.message).toContain('eppAnswers.destinations');
      // The Gateway is listed among the excluded objects, naming the field, as a denied EPP Service is.
      expect(objects).toEqual([
        { cluster: 'cluster-b', kind: 'Gateway', namespace: 'example', name: 'gw-b', field: 'status.addresses[0]', reason: 'ParentAddressDenied', message: excluded[0]!.message },
      ]);
    }
    // Two parents, both denied: the pool has no resolvable parent, and both Gateways are listed.
    const two = withGw(gateway('gw-b', { addresses: ['127.0.0.1'] }), [parentRef('gw-b'), parentRef('gw-c')], [gateway('gw-c', { addresses: ['169.254.169.254'] })]);
    expect(two.excluded[0]).toMatchObject({ reason: 'NoResolvableParent' });
    expect(two.objects.map((o) => `${o.kind} ${o.name} ${o.field}`)).toEqual(['Gateway gw-b status.addresses[0]', 'Gateway gw-c status.addresses[0]']);
    const allowLoopback = config({ mode: 'Parent', clusters: [{ name: LOCAL }, { name: 'cluster-b', eppAnswers: { destinations: { allow: ['127.0.0.0/8'], deny: [] } } }] });
    const objects = [exportedPool({ epp: 'epp', parents: [parentRef('gw-b')] }), service('epp'), gateway('gw-b', { addresses: ['127.0.0.1'] })];
    expect(remote(objects, allowLoopback).candidate!.parent!.address).toBe('127.0.0.1:80');
  });

  it('uses a gateway address override (ip or ip:port) before status', () => {
    const cfg = parentCfg([{ namespace: 'example', name: 'gw-b', address: '198.51.100.1' }, { namespace: 'example', name: 'gw-c', address: '[2001:db8::1]:8443' }]);
    const gw = gateway('gw-b', { addresses: ['gw.example.com'], listeners: [listener('http', { port: 8000 })] });
    const a = remote([exportedPool({ epp: 'epp', parents: [parentRef('gw-b')] }), service('epp'), gw], cfg).candidate!.parent!;
    expect(a).toMatchObject({ address: '198.51.100.1:8000', source: 'override' });
    const b = remote([exportedPool({ epp: 'epp', parents: [parentRef('gw-c')] })], cfg).candidate!.parent!;
    expect(b).toMatchObject({ address: '[2001:db8::1]:8443', source: 'override' });
  });

  it('refuses a hostname override (InvalidAddressOverride) and a portless override with nothing to take a port from (NoParentPort)', () => {
    const cfg = parentCfg([{ namespace: 'example', name: 'gw-b', address: 'gw.example.com:80' }, { namespace: 'example', name: 'gw-c', address: '198.51.100.1' }]);
    expect(remote([exportedPool({ parents: [parentRef('gw-b')] })], cfg).excluded[0]!.reason).toBe('InvalidAddressOverride');
    expect(remote([exportedPool({ parents: [parentRef('gw-c')] })], cfg).excluded[0]!.reason).toBe('NoParentPort');
  });

  it('reports NoParentGateway, ParentNotFound and NoParentAddress', () => {
    expect(remote([exportedPool(), service('llm-pool-epp')], parentCfg()).excluded[0]!.reason).toBe('NoParentGateway');
    const nonGateway = exportedPool({ parents: [parentRef('imp', { kind: 'InferencePoolImport', group: 'inference.networking.x-k8s.io' })] });
    expect(remote([nonGateway], parentCfg()).excluded[0]!.reason).toBe('NoParentGateway');
    expect(remote([exportedPool({ parents: [parentRef('gw-b')] })], parentCfg()).excluded[0]!.reason).toBe('ParentNotFound');
    expect(withGw(gateway('gw-b')).excluded[0]!.reason).toBe('NoParentAddress');
  });

  it('picks the first resolvable parent in name order; the namespace defaults to the pool namespace', () => {
    const refs = [parentRef('zeta'), parentRef('alpha', { namespace: 'gw-ns' }), parentRef('beta')];
    const gws = [
      gateway('zeta', { addresses: ['192.0.2.3'] }),
      gateway('alpha', { ns: 'gw-ns', addresses: ['gw.example.com'] }),
      gateway('beta', { addresses: ['192.0.2.2'] }),
    ];
    const { candidate } = remote([exportedPool({ epp: 'epp', parents: refs }), service('epp'), ...gws], parentCfg());
    expect(candidate!.parent).toMatchObject({ address: '192.0.2.2:80', gateway: { namespace: 'example', name: 'beta' } });
  });

  it('lists every failure when no parent resolves (NoResolvableParent)', () => {
    const refs = [parentRef('a'), parentRef('b')];
    const { excluded } = remote([exportedPool({ parents: refs }), gateway('a', { addresses: ['x.example.com'] })], parentCfg());
    expect(excluded[0]!.reason).toBe('NoResolvableParent');
    expect(excluded[0]!.message).toContain('ParentAddressNotIP');
    expect(excluded[0]!.message).toContain('ParentNotFound');
  });
});
