import { describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { judgeListeners, takesHttpRoutes } from '../../src/snapshot/listeners.js';
import { gateway, listener } from './fixtures.js';

const caps = (o: Record<string, unknown> = {}) =>
  routerConfigSchema.parse({
    clusterName: 'a',
    gateways: [{ namespace: 'example', name: 'gw' }],
    clusters: [{ name: 'a', manifests: { paths: ['a/'] } }],
    gatewayListeners: o,
  }).gatewayListeners;

const HTTP_ROUTE = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' };

describe('judgeListeners', () => {
  it('an HTTP listener on a served port is accepted, programmed, takes HTTPRoute and conflicts with nothing', () => {
    const [v] = judgeListeners(gateway('gw', { listeners: [listener('http', { port: 80 })] }), caps({ ports: [80] }));
    expect(v).toMatchObject({
      name: 'http',
      supportedKinds: [HTTP_ROUTE],
      accepted: { ok: true, reason: 'Accepted' },
      resolvedRefs: { ok: true, reason: 'ResolvedRefs' },
      conflicted: { ok: true, reason: 'NoConflicts' },
      programmed: { ok: true, reason: 'Programmed' },
    });
  });

  it('HTTPS, TLS and TCP are UnsupportedProtocol with the default (plain HTTP) Envoy, and take no route kind', () => {
    const gw = gateway('gw', {
      listeners: [listener('https', { protocol: 'HTTPS', port: 443 }), listener('tls', { protocol: 'TLS', port: 8443 }), listener('tcp', { protocol: 'TCP', port: 9000 })],
    });
    for (const v of judgeListeners(gw, caps())) {
      expect(v.accepted).toMatchObject({ ok: false, reason: 'UnsupportedProtocol' });
      expect(v.programmed).toMatchObject({ ok: false, reason: 'Invalid' });
      expect(v.supportedKinds).toEqual([]);
    }
    const [https] = judgeListeners(gw, caps({ protocols: ['HTTP', 'HTTPS'] }));
    expect(https?.accepted.ok).toBe(true);
    expect(https?.supportedKinds).toEqual([HTTP_ROUTE]);
  });

  it('a port the Envoy is not reached on is PortUnavailable; no port list means ports are not judged', () => {
    const gw = gateway('gw', { listeners: [listener('alt', { port: 8081 })] });
    expect(judgeListeners(gw, caps({ ports: [80] }))[0]?.accepted).toMatchObject({ ok: false, reason: 'PortUnavailable' });
    expect(judgeListeners(gw, caps())[0]?.accepted.ok).toBe(true);
  });

  it('allowedRoutes.kinds: other kinds are InvalidRouteKinds and left out of supportedKinds; HTTPRoute among them stays', () => {
    const mixed = listener('m', { allowedRoutes: { namespaces: { from: 'Same' }, kinds: [HTTP_ROUTE, { group: 'gateway.networking.k8s.io', kind: 'TCPRoute' }] } });
    const none = listener('n', { port: 81, allowedRoutes: { namespaces: { from: 'Same' }, kinds: [{ group: 'example.com', kind: 'HTTPRoute' }] } });
    const [m, n] = judgeListeners(gateway('gw', { listeners: [mixed, none] }), caps());
    expect(m?.resolvedRefs).toMatchObject({ ok: false, reason: 'InvalidRouteKinds' });
    expect(m?.supportedKinds).toEqual([HTTP_ROUTE]);
    expect(takesHttpRoutes(mixed)).toBe(true);
    expect(n?.supportedKinds).toEqual([]);
    expect(n?.resolvedRefs.message).toContain('HTTPRoute.example.com');
    expect(takesHttpRoutes(none)).toBe(false);
  });

  it('conflicts: one port with two protocols (ProtocolConflict), one port and protocol with the same hostname (HostnameConflict)', () => {
    const gw = gateway('gw', {
      listeners: [
        listener('a', { port: 80, hostname: 'a.com' }),
        listener('b', { port: 80, hostname: 'a.com' }),
        listener('c', { port: 80, hostname: 'c.com' }),
        listener('d', { port: 90 }),
        listener('e', { port: 90, protocol: 'HTTPS' }),
      ],
    });
    const v = judgeListeners(gw, caps({ protocols: ['HTTP', 'HTTPS'] }));
    expect(v.map((x) => x.conflicted.reason)).toEqual(['HostnameConflict', 'HostnameConflict', 'NoConflicts', 'ProtocolConflict', 'ProtocolConflict']);
    expect(v.map((x) => x.programmed.ok)).toEqual([false, false, true, false, false]);
    expect(v[0]?.conflicted.message).toContain('"b"');
  });
});
