import { describe, expect, it } from 'vitest';
import { config } from '../snapshot/fixtures.js';
import { CACHE_SIZE, FailOpenEndpoints, staticFailOpenEndpoints } from '../../src/extproc/fail-open.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import type { Candidate } from '../../src/snapshot/types.js';

const base = {
  id: 'cluster-a/ns/pool',
  cluster: 'cluster-a',
  namespace: 'ns',
  pool: 'pool',
  local: true,
  failureMode: 'FailOpen' as const,
  targetPorts: [8000],
};
const TLS = { enabled: false, insecureSkipVerify: true };
const epp = { address: '10.0.0.9:9002', host: '10.0.0.9', port: 9002, cluster: 'cluster-a', service: { namespace: 'ns', name: 'epp' }, source: 'override' as const, tls: TLS };
const local: Candidate = { ...base, via: 'epp', epp };
const withParent: Candidate = {
  ...base,
  id: 'cluster-b/ns/pool',
  cluster: 'cluster-b',
  local: false,
  via: 'epp',
  epp,
  parent: { address: '10.2.0.100:443', cluster: 'cluster-b', gateway: { namespace: 'ns', name: 'gw' }, source: 'status' },
};

describe('FailOpenEndpoints', () => {
  it('prefers the parent, then recent EPP endpoints, then static ones', () => {
    let now = 1000;
    const f = new FailOpenEndpoints({ endpoints: new Map([['cluster-a/ns/pool', ['10.1.9.9:8000']]]), ttlMs: 100, now: () => now });
    expect(f.choose(withParent, () => 0)).toEqual({ address: '10.2.0.100:443', source: 'parent' });
    expect(f.choose(local, () => 0)).toEqual({ address: '10.1.9.9:8000', source: 'static' });
    f.remember(local.id, '10.1.0.1:8000,10.1.0.2:8000');
    expect(f.choose(local, () => 0.99)).toEqual({ address: '10.1.0.2:8000', source: 'cache' });
    now += 101; // expired
    expect(f.choose(local, () => 0)).toEqual({ address: '10.1.9.9:8000', source: 'static' });
    expect(f.fresh(local.id)).toEqual([]);
  });

  it('keeps the last CACHE_SIZE distinct endpoints per pool', () => {
    const f = new FailOpenEndpoints();
    for (let i = 0; i < CACHE_SIZE + 4; i++) f.remember(local.id, `10.1.0.${i}:8000`);
    f.remember(local.id, '10.1.0.5:8000'); // seen again: the newest now
    const fresh = f.fresh(local.id);
    expect(fresh).toHaveLength(CACHE_SIZE);
    expect(fresh[0]).toBe('10.1.0.4:8000');
    expect(fresh).not.toContain('10.1.0.3:8000');
    expect(fresh.at(-1)).toBe('10.1.0.5:8000');
  });

  it('nothing known: undefined; a zero TTL keeps no cache', () => {
    const f = new FailOpenEndpoints({ ttlMs: 0 });
    f.remember(local.id, '10.1.0.1:8000');
    expect(f.choose(local, () => 0)).toBeUndefined();
  });
});

describe('config: clusters[].failOpen.endpoints', () => {
  it('are keyed by candidate id', () => {
    const cfg = config({
      clusters: [{ name: 'cluster-a', failOpen: { endpoints: [{ namespace: 'ns', pool: 'pool', endpoints: ['10.1.9.9:8000', '[fd00::1]:8000'] }] } } as never, { name: 'cluster-b' }],
    });
    expect(staticFailOpenEndpoints(cfg)).toEqual(new Map([['cluster-a/ns/pool', ['10.1.9.9:8000', '[fd00::1]:8000']]]));
  });

  it('must be ip:port (Envoy ORIGINAL_DST takes no host names)', () => {
    const parse = (ep: string) =>
      routerConfigSchema.safeParse({
        clusterName: 'a',
        gateways: [{ namespace: 'ns', name: 'gw' }],
        clusters: [{ name: 'a', manifests: { paths: ['x'] }, failOpen: { endpoints: [{ namespace: 'ns', pool: 'p', endpoints: [ep] }] } }],
      }).success;
    expect(parse('10.0.0.1:8000')).toBe(true);
    expect(parse('[::1]:80')).toBe(true);
    expect(parse('pod.example:8000')).toBe(false);
    expect(parse('10.0.0.1')).toBe(false);
    expect(parse('10.0.0.300:80')).toBe(false);
  });

  it('the failover settings have defaults', () => {
    const cfg = config();
    expect(cfg.extProc).toMatchObject({ attemptTimeoutMs: 10_000, replayBufferBytes: 8 * 1024 * 1024, maxAttempts: 3, failOpenCacheTtlMs: 300_000 });
  });
});
