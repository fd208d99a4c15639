// When every EPP attempt failed, the primary pool's failureMode decides, through real sockets:
// FailOpen routes to the parent, a recently returned endpoint, or a static one (else 503);
// FailClose answers 503 with the attempts. Parent destinations carry x-mcip-destination-kind.
import { afterEach, describe, expect, it } from 'vitest';
import { getHeader, type StandinResult } from '../harness/envoy-standin.js';
import { frames, jsonBody, PARENT_B, POOL_A_ENDPOINTS, startScenario, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const KIND = 'x-mcip-destination-kind';
const BODY = jsonBody(4096);

function run(authority: string, trailers = false): Promise<StandinResult> {
  return sc!.envoy.run({ authority, path: '/v1/completions', body: frames(BODY, 1000), trailers: trailers ? { 'x-t': '1' } : undefined });
}

function expectServed(r: StandinResult): void {
  expect(r.reason).toBeUndefined();
  expect(r.outcome).toBe('forwarded');
  expect(r.routeCacheCleared).toBe(true);
  expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': r.destination });
  expect(r.forwardedBody!.equals(BODY)).toBe(true);
  expect(r.status).toBe(200);
}

describe('FailOpen', () => {
  it('a remote pool with a known parent -> the parent Gateway, marked as a parent destination', async () => {
    sc = await startScenario({ failureModeB: 'FailOpen' });
    await sc.eppB.kill();
    const r = await run('remote.example', true);
    expectServed(r);
    expect(r.destination).toBe(PARENT_B);
    expect(getHeader(r.upstreamHeaders, KIND)).toBe('parent');
    expect(getHeader(r.upstreamTrailers, 'x-t')).toBe('1');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['fail_open']);
    expect(sc.observer.reasons).toEqual(['weighted', 'fail-open']);
  });

  it('a local pool -> an endpoint its EPP returned recently (no parent marker)', async () => {
    sc = await startScenario({ failureModeA: 'FailOpen' });
    const first = await run('local.example');
    expectServed(first);
    await sc.eppA.kill();
    for (const mode of ['FULL_DUPLEX_STREAMED', 'BUFFERED', 'STREAMED'] as const) {
      const r = await sc.envoy.run(
        { authority: 'local.example', path: '/', body: frames(BODY, 1000) },
        { requestBodyMode: mode, responseBodyMode: mode, messageTimeoutMs: 5000 },
      );
      expectServed(r);
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
      expect(getHeader(r.upstreamHeaders, KIND)).toBeUndefined();
    }
  });

  it('no recent answer -> the endpoints listed statically for the pool', async () => {
    sc = await startScenario({
      failureModeA: 'FailOpen',
      clusterA: { failOpen: { endpoints: [{ namespace: 'example', pool: 'pool-a', endpoints: ['10.1.9.9:8000'] }] } },
    });
    await sc.eppA.kill();
    const r = await run('local.example');
    expectServed(r);
    expect(r.destination).toBe('10.1.9.9:8000');
    expect(getHeader(r.upstreamHeaders, KIND)).toBeUndefined();
  });

  it('nothing known -> 503 saying so', async () => {
    sc = await startScenario({ failureModeA: 'FailOpen' });
    await sc.eppA.kill();
    const r = await run('local.example');
    expect(r.status).toBe(503);
    const e = JSON.parse(r.response.body.toString()).error;
    expect(e.message).toContain('FailOpen, but no endpoint of the pool is known');
    expect(e.attempts).toHaveLength(1);
  });
});

describe('FailClose', () => {
  it('503 with a JSON body giving the reason and every attempt', async () => {
    sc = await startScenario();
    await sc.eppA.kill();
    await sc.eppB.kill();
    const r = await run('split.example');
    expect(r.status).toBe(503);
    expect(getHeader(r.response.headers, 'content-type')).toBe('application/json');
    const e = JSON.parse(r.response.body.toString()).error;
    expect(e.type).toBe('epp_unavailable');
    expect(e.message).toMatch(/^all 2 attempts failed: /);
    expect(e.attempts).toEqual([
      expect.objectContaining({ reason: 'connect' }),
      expect.objectContaining({ reason: 'connect' }),
    ]);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['epp_unavailable']);
  });
});

describe('the parent destination marker', () => {
  it('Parent mode answers set x-mcip-destination-kind: parent', async () => {
    sc = await startScenario({ mode: 'Parent' });
    const r = await run('remote.example');
    expect(r.destination).toBe(PARENT_B);
    expect(getHeader(r.upstreamHeaders, KIND)).toBe('parent');
  });

  it('Endpoint mode answers (relayed from an EPP) never do', async () => {
    sc = await startScenario();
    for (const host of ['local.example', 'remote.example']) {
      const r = await run(host);
      expectServed(r);
      expect(getHeader(r.upstreamHeaders, KIND)).toBeUndefined();
    }
  });

  it('Parent mode: a failing local EPP fails over to the remote parent, marked', async () => {
    sc = await startScenario({ mode: 'Parent' });
    await sc.eppA.kill();
    const results: StandinResult[] = [];
    for (let i = 0; i < 6; i++) results.push(await run('split.example'));
    for (const r of results) {
      expectServed(r);
      expect(r.destination).toBe(PARENT_B);
      expect(getHeader(r.upstreamHeaders, KIND)).toBe('parent');
    }
    expect(sc.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: 'connect' });
  });
});
