// Routing scenarios through real sockets: Envoy stand-in -> router -> simulated EPPs.
import { afterEach, describe, expect, it } from 'vitest';
import { getHeader } from '../harness/envoy-standin.js';
import { blackHole, buildScenarioSnapshot, jsonBody, PARENT_B, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, type Scenario } from './scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const body = (): Buffer[] => [jsonBody(1024).subarray(0, 500), jsonBody(1024).subarray(500)];

function errorJson(b: Buffer): { type: string; message: string } {
  return (JSON.parse(b.toString()) as { error: { type: string; message: string } }).error;
}

describe('Endpoint mode', () => {
  it('local pool: the EPP picks, the router relays unchanged', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run(
      { authority: 'local.example', path: '/v1/completions', body: body() },
      { grpcMetadata: { 'x-route-tag': 'blue' } },
    );
    expect(r.outcome).toBe('forwarded');
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(r.routeCacheCleared).toBe(true);
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': r.destination });
    expect(r.forwardedBody).toEqual(jsonBody(1024));
    expect(r.status).toBe(200);
    expect(sc.eppA.counters.streamsOpened).toBe(1);
    expect(sc.eppB.counters.streamsOpened).toBe(0);
    // Envoy's per-route gRPC metadata reaches the EPP; the protocol_config and the
    // message order reach it as Envoy sent them.
    const rec = sc.eppA.streams[0]!;
    expect(rec.grpcMetadata['x-route-tag']).toBe('blue');
    expect(rec.received[0]!.protocol_config?.request_body_mode).toBe(4);
    expect(rec.received.map((m) => m.request)).toEqual([
      'request_headers', 'request_body', 'request_body', 'response_headers', 'response_body',
    ]);
    await sc.settled();
    expect(sc.observer.finished).toHaveLength(1);
    expect(sc.observer.finished[0]).toMatchObject({ route: 'example/local', pool: 'example/pool-a', cluster: 'cluster-a', outcome: 'relayed' });
  });

  it('remote pool: relayed to the remote EPP', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run({ authority: 'remote.example', path: '/v1/completions', body: body() });
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe(POOL_B_ENDPOINTS[0]);
    expect(sc.eppB.counters.streamsOpened).toBe(1);
    await sc.settled();
    expect(sc.observer.finished[0]).toMatchObject({ pool: 'example/pool-b', cluster: 'cluster-b', outcome: 'relayed' });
  });

  it('no route -> 404 with a JSON body', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run({ authority: 'nowhere.example', path: '/v1/chat', body: body() });
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(404);
    expect(getHeader(r.response.headers, 'content-type')).toBe('application/json');
    const e = errorJson(r.response.body);
    expect(e.type).toBe('no_route');
    expect(e.message).toContain('nowhere.example');
    expect(e.message).toContain('/v1/chat');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['no_route']);
  });

  it('a rule refused for a feature the router does not honour -> 500 naming it; no EPP is called', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run({ authority: 'refused.example', path: '/v1/completions', body: body() });
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(500);
    const e = errorJson(r.response.body);
    expect(e.message).toBe('rule 0 of HTTPRoute example/refused is refused: it uses timeouts (spec.rules[0].timeouts), which the router does not honour');
    expect(sc.eppA.counters.streamsOpened).toBe(0);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['invalid_backend']);
  });

  it('a backendRef without a pool -> 500 naming it', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run({ authority: 'missing.example', path: '/', body: body() });
    expect(r.status).toBe(500);
    const e = errorJson(r.response.body);
    expect(e.type).toBe('invalid_backend');
    expect(e.message).toContain('ghost');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['invalid_backend']);
  });

  it('no snapshot yet -> 503 not ready', async () => {
    sc = await startScenario({ noSnapshot: true });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.status).toBe(503);
    expect(errorJson(r.response.body).type).toBe('not_ready');
  });

  it('EPP down -> 503 FailClose naming the pool and the reason', async () => {
    sc = await startScenario();
    await sc.eppA.kill();
    const r = await sc.envoy.run({ authority: 'local.example', path: '/v1/completions', body: body() });
    expect(r.status).toBe(503);
    const e = errorJson(r.response.body);
    expect(e.type).toBe('epp_unavailable');
    expect(e.message).toContain('cluster-a/example/pool-a');
    expect(e.message).toMatch(/ECONNREFUSED|UNAVAILABLE/);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['epp_unavailable']);
  });

  it('EPP down with FailOpen and no endpoint known -> 503 saying so', async () => {
    sc = await startScenario({ failureModeA: 'FailOpen' });
    await sc.eppA.kill();
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.status).toBe(503);
    expect(errorJson(r.response.body).message).toContain('FailOpen, but no endpoint of the pool is known');
  });

  it('an unreachable EPP address fails within eppConnectTimeoutMs', async () => {
    sc = await startScenario({ eppConnectTimeoutMs: 300 });
    const hole = await blackHole();
    try {
      // The TLS handshake to a server that never answers hangs: only the timeout ends it.
      sc.setSnapshot(buildScenarioSnapshot({ eppA: hole.address, eppB: sc.eppB.address, tls: { enabled: true } }));
      const r = await withinProcessMs(2000, 'unreachable EPP', () => sc!.envoy.run({ authority: 'local.example', path: '/', body: body() }));
      expect(r.status).toBe(503);
      expect(errorJson(r.response.body).message).toContain(`no connection to EPP ${hole.address} within 300 ms`);
    } finally {
      hole.close();
    }
  });

  it.each([503, 429])('EPP immediate %i with no candidate left: %i with the attempts, retry-after kept', async (status) => {
    sc = await startScenario({ eppA: { immediate: { status, body: 'saturated', headers: { 'retry-after': '1' } } } });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(status);
    const e = JSON.parse(r.response.body.toString()).error;
    expect(e.type).toBe(status === 429 ? 'epp_overloaded' : 'epp_unavailable');
    expect(e.attempts).toEqual([expect.objectContaining({ cluster: 'cluster-a', pool: 'example/pool-a', reason: `status-${status}` })]);
    if (status === 429) expect(getHeader(r.response.headers, 'retry-after')).toBe('1');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual([status === 429 ? 'epp_overloaded' : 'epp_unavailable']);
  });

  it('EPP immediate 400 (the EPP decided) is relayed unchanged', async () => {
    const immediate = { status: 400, body: 'no model' };
    sc = await startScenario({ eppA: { immediate }, eppB: { immediate } });
    const r = await sc.envoy.run({ authority: 'split.example', path: '/', body: body() });
    expect(r.status).toBe(400);
    expect(r.response.body.toString()).toBe('no model');
    // No failover on a 400: one EPP was asked.
    expect(sc.eppA.counters.streamsOpened + sc.eppB.counters.streamsOpened).toBe(1);
  });

  it("EPP list: the header carries the primary, envoy.lb metadata the list ('primary', default)", async () => {
    sc = await startScenario({ eppA: { listSize: 2 } });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.outcome).toBe('forwarded');
    const list = sc.eppA.streams[0]!.destination!;
    expect(list.split(',')).toHaveLength(2);
    expect(r.destination).toBe(list.split(',')[0]);
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': list });
  });

  it("EPP list in 'list' mode reaches Envoy as sent (ORIGINAL_DST then rejects it)", async () => {
    sc = await startScenario({ eppA: { listSize: 2 }, destinationHeader: 'list' });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    const list = sc.eppA.streams[0]!.destination!;
    expect(r.destinationHeader).toBe(list);
    expect(r.status).toBe(503);
  });
});

describe('Parent mode', () => {
  it('remote pool -> the parent Gateway address, answered by the router', async () => {
    sc = await startScenario({ mode: 'Parent' });
    const r = await sc.envoy.run({ authority: 'remote.example', path: '/v1/completions', body: body(), trailers: { 'x-t': '1' } });
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe(PARENT_B);
    expect(r.routeCacheCleared).toBe(true);
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': PARENT_B });
    expect(r.forwardedBody).toEqual(jsonBody(1024));
    expect(getHeader(r.upstreamTrailers, 'x-t')).toBe('1');
    expect(sc.eppB.counters.streamsOpened).toBe(0);
    await sc.settled();
    expect(sc.observer.finished[0]).toMatchObject({ pool: 'example/pool-b', cluster: 'cluster-b', outcome: 'parent' });
  });

  it('local pool -> relayed to the local EPP', async () => {
    sc = await startScenario({ mode: 'Parent' });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(sc.eppA.counters.streamsOpened).toBe(1);
  });

  it('request headers skipped -> pass-through answers every message for the mode', async () => {
    sc = await startScenario({ mode: 'Parent' });
    const r = await sc.envoy.run(
      { authority: 'remote.example', path: '/', body: body(), response: { status: 200, body: [Buffer.from('a'), Buffer.from('b')] } },
      { requestHeaderMode: 'SKIP', requestBodyMode: 'STREAMED', requestTrailerMode: 'SKIP' },
    );
    // Nothing routed it: ORIGINAL_DST has no header (503), but the processor answered correctly.
    expect(r.destinationHeader).toBeUndefined();
    expect(r.messages.filter((m) => m.dir === 'in').map((m) => m.type)).toEqual([
      'request_body', 'request_body', 'response_headers', 'response_body',
    ]);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['passthrough']);
  });
});
