import { describe, expect, it } from 'vitest';
import { clusterSchema, routerConfigSchema } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { planCandidate } from '../../src/signals/plan.js';
import { eppTarget, parentTarget, signalsConfig, viaEpp, viaParent } from './fixtures.js';

const minimal = {
  clusterName: 'a',
  gateways: [{ namespace: 'gw', name: 'g' }],
  clusters: [{ name: 'a', manifests: { paths: ['x.yaml'] } }],
};

describe('signals config', () => {
  it('defaults', () => {
    const cfg = routerConfigSchema.parse(minimal);
    expect(cfg.outlier).toEqual({ consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000 });
    const c = cfg.clusters[0]!;
    expect(c.epp.health).toEqual({
      service: 'envoy.service.ext_proc.v3.ExternalProcessor',
      tls: 'inherit',
      intervalMs: 2000,
      timeoutMs: 1000,
      healthyThreshold: 2,
      unhealthyThreshold: 3,
    });
    expect(c.epp.metrics).toMatchObject({ enabled: true, port: 9090, path: '/metrics', scheme: 'http', intervalMs: 5000, timeoutMs: 2000, tls: { insecureSkipVerify: false }, services: [] });
    expect(c.epp.metrics.names).toEqual({
      readyPods: ['llm_d_epp_ready_endpoints', 'inference_pool_ready_pods', 'llm_d_router_epp_ready_endpoints'],
      queueSize: ['llm_d_epp_average_queue_size', 'inference_pool_average_queue_size', 'llm_d_router_epp_average_queue_size'],
      kvCache: ['llm_d_epp_average_kv_cache_utilization', 'inference_pool_average_kv_cache_utilization', 'llm_d_router_epp_average_kv_cache_utilization'],
      runningRequests: ['llm_d_epp_average_running_requests', 'inference_pool_average_running_requests', 'llm_d_router_epp_average_running_requests'],
    });
    expect(c.parentProbe).toMatchObject({ mode: 'tcp', intervalMs: 2000, timeoutMs: 1000 });
  });

  it.each([
    ['http parent probe without a path', { parentProbe: { mode: 'http' } }],
    ['unknown health key', { epp: { health: { interval: 5 } } }],
    ['bad metric name', { epp: { metrics: { names: { readyPods: ['not a name'] } } } }],
    ['metrics path without slash', { epp: { metrics: { path: 'metrics' } } }],
    ['empty name list', { epp: { metrics: { names: { queueSize: [] } } } }],
  ])('rejects %s', (_n, extra) => {
    expect(clusterSchema.safeParse({ name: 'a', manifests: { paths: ['x'] }, ...extra }).success).toBe(false);
  });
});

describe('planCandidate', () => {
  const config = signalsConfig({
    a: { epp: { health: { port: 9003, service: 'inference-extension', tls: 'disabled' }, metrics: { services: [{ namespace: 'ns', name: 'special', port: 9191, path: '/m' }] } } },
    b: { parentProbe: { mode: 'http', path: '/healthz' } },
  });

  it('health on the configured port and service, TLS per the health setting; metrics with per-Service overrides', () => {
    const tlsEpp = { ...eppTarget('a', '10.0.0.1:9002'), tls: { enabled: true, insecureSkipVerify: true } };
    const p = planCandidate(viaEpp('a', 'pool', tlsEpp), config);
    expect(p.health?.settings).toMatchObject({ address: '10.0.0.1:9003', service: 'inference-extension', tls: { enabled: false } });
    expect(p.metrics?.settings).toMatchObject({ origin: 'http://10.0.0.1:9090', path: '/metrics' });
    expect(p.metrics?.pool).toBe('pool');
    expect(p.parent).toBeUndefined();
    const special = planCandidate(viaEpp('a', 'pool', eppTarget('a', '10.0.0.2:9002', { namespace: 'ns', name: 'special' })), config);
    expect(special.metrics?.settings).toMatchObject({ origin: 'http://10.0.0.2:9191', path: '/m' });
  });

  it('health defaults to the ext_proc port; IPv6 hosts are bracketed; unknown clusters get defaults', () => {
    const p = planCandidate(viaEpp('zz', 'pool', { ...eppTarget('zz', '[fd00::1]:9002'), host: 'fd00::1' }), config);
    expect(p.health?.settings.address).toBe('[fd00::1]:9002');
    expect(p.health?.settings.intervalMs).toBe(2000);
    expect(p.metrics?.settings.origin).toBe('http://[fd00::1]:9090');
  });

  it("scrapes a host name from the member's objects under the member's destination rules; IPs and overrides without", () => {
    const rules = signalsConfig({ a: { eppAnswers: { destinations: { allow: ['10.0.0.0/8'], deny: ['10.9.0.0/16'] } } } });
    const lb = { ...eppTarget('a', 'lb.example.com:9002'), source: 'loadBalancer' as const };
    expect(planCandidate(viaEpp('a', 'pool', lb), rules).metrics?.settings.destinations).toEqual({ allow: ['10.0.0.0/8'], deny: ['10.9.0.0/16'] });
    expect(planCandidate(viaEpp('a', 'pool', { ...lb, source: 'override' }), rules).metrics?.settings).not.toHaveProperty('destinations');
    const ip = { ...eppTarget('a', '10.0.0.1:9002'), source: 'clusterIP' as const };
    expect(planCandidate(viaEpp('a', 'pool', ip), rules).metrics?.settings).not.toHaveProperty('destinations');
    // The rules are part of the scraper's identity: other rules, another scraper.
    const other = signalsConfig({ a: {} });
    expect(planCandidate(viaEpp('a', 'pool', lb), other).metrics?.settings.destinations?.deny).toContain('127.0.0.0/8');
    expect(planCandidate(viaEpp('a', 'pool', lb), other).metrics?.key).not.toBe(planCandidate(viaEpp('a', 'pool', lb), rules).metrics?.key);
  });

  it('a parent candidate gets a parent probe with its parent cluster settings, and EPP probes when it has an EPP', () => {
    const withEpp = planCandidate(viaParent('b', 'pool', parentTarget('b', '192.0.2.1:80'), eppTarget('b', '192.0.2.2:9002')), config);
    expect(withEpp.parent?.settings).toMatchObject({ address: '192.0.2.1:80', mode: 'http', path: '/healthz' });
    expect(withEpp.health).toBeDefined();
    const bare = planCandidate(viaParent('b', 'pool', parentTarget('b', '192.0.2.1:80')), config);
    expect(bare.health).toBeUndefined();
    expect(bare.metrics).toBeUndefined();
    expect(bare.parent?.key).toBe(withEpp.parent?.key);
  });
});

describe('scrape credentials config', () => {
  const cluster = (metrics: object, source: object = { manifests: { paths: ['x'] } }) => clusterSchema.safeParse({ name: 'b', ...source, epp: { metrics } });

  it('refuses a bearerTokenFile over plain http unless allowTokenOverPlainHttp, naming the member and field', () => {
    const r = cluster({ bearerTokenFile: '/t' });
    expect(r.success).toBe(false);
    const issue = r.error!.issues[0]!;
    expect(issue.path).toEqual(['epp', 'metrics', 'bearerTokenFile']);
    expect(issue.message).toMatch(/cluster "b".*allowTokenOverPlainHttp/);
    expect(cluster({ bearerTokenFile: '/t', allowTokenOverPlainHttp: true }).success).toBe(true);
    expect(cluster({ bearerTokenFile: '/t', scheme: 'https' }).success).toBe(true);
  });

  it('client certificate files come in pairs (EPP TLS and scrapes)', () => {
    expect(cluster({ scheme: 'https', tls: { certFile: '/c' } }).error?.issues[0]?.path).toEqual(['epp', 'metrics', 'tls', 'keyFile']);
    expect(clusterSchema.safeParse({ name: 'b', manifests: { paths: ['x'] }, epp: { tls: { keyFile: '/k' } } }).error?.issues[0]?.path).toEqual(['epp', 'tls', 'certFile']);
  });

  it("a Kubernetes member scrapes with its own credentials by default; bearerTokenFile overrides", () => {
    const cfg = namedConfig(routerConfigSchema.parse({
      ...minimal,
      clusters: [
        { name: 'a', kubernetes: { inCluster: true }, epp: { metrics: { scheme: 'https' } } },
        { name: 'b', kubernetes: { kubeconfig: '/k/b' }, epp: { metrics: { scheme: 'https' } } },
        { name: 'c', kubernetes: { kubeconfig: '/k/c' }, epp: { metrics: { scheme: 'https', bearerTokenFile: '/t/c' } } },
        { name: 'd', manifests: { paths: ['x'] } },
      ],
    }));
    const tokenOf = (cluster: string) => planCandidate(viaEpp(cluster, 'p', eppTarget(cluster, '10.0.0.1:9002')), cfg).metrics?.settings.bearerToken;
    expect(tokenOf('a')).toEqual({ file: '/var/run/secrets/kubernetes.io/serviceaccount/token' });
    expect(tokenOf('b')).toMatchObject({ kubeconfig: { kubeconfig: '/k/b' } });
    expect(tokenOf('c')).toEqual({ file: '/t/c' });
    expect(tokenOf('d')).toBeUndefined();
  });
});
