// Stream lifecycle through real sockets: cancels, EPP crashes and resets release both
// streams; many concurrent streams; message size limits.
import { afterEach, describe, expect, it } from 'vitest';
import { jsonBody, frames, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, waitFor, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const body = (): Buffer[] => frames(jsonBody(2048), 512);

describe('releasing streams', () => {
  it('Envoy cancels mid-stream: the EPP call is cancelled too', async () => {
    sc = await startScenario({ eppA: { hang: true } });
    const ac = new AbortController();
    const pending = sc.envoy.run({ authority: 'local.example', path: '/', body: body() }, { signal: ac.signal });
    await waitFor(() => sc!.eppA.counters.openStreams === 1, 2000, () => 'EPP stream open');
    expect(sc.server.activeStreams()).toBe(1);
    ac.abort();
    const r = await pending;
    expect(r.outcome).toBe('reset');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['client_cancelled']);
  });

  it('EPP crashes mid-body (nothing relayed yet): 503, both streams released', async () => {
    sc = await startScenario({ eppA: { crash: 'mid-body' } });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.response.body.toString()).error.message).toContain('simulated EPP crash mid-body');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['epp_unavailable']);
  });

  it('EPP crashes after its headers response: the router finishes the echo, the request is served', async () => {
    sc = await startScenario({ eppA: { crash: 'after-headers-response' } });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.outcome).toBe('forwarded');
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(r.forwardedBody!.equals(jsonBody(2048))).toBe(true);
    expect(r.status).toBe(200);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['finished_by_router']);
  });

  it('EPP reset (process killed) mid-stream: 503, both streams released', async () => {
    sc = await startScenario({ eppA: { hang: true } });
    const pending = sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    await waitFor(() => sc!.eppA.counters.openStreams === 1, 2000, () => 'EPP stream open');
    await sc.eppA.kill();
    const r = await pending;
    expect(r.status).toBe(503);
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['epp_unavailable']);
    // The EPP comes back: the channel reconnects and routing works again.
    await sc.eppA.restart();
    sc.eppA.setHang(false);
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      const again = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
      ok = again.outcome === 'forwarded';
      if (!ok) await new Promise((res) => setTimeout(res, 100));
    }
    expect(ok).toBe(true);
  });

  it('the EPP closing its stream OK without answering is a failed attempt (no fallback here: 503)', async () => {
    sc = await startScenario({ eppA: { crash: 'close-ok' } });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.response.body.toString()).error.message).toContain('ended its stream without answering');
    await sc.settled();
    expect(sc.observer.outcomes()).toEqual(['epp_unavailable']);
  });
});

describe('snapshot changes', () => {
  it('retiring an EPP channel (pool left the snapshot) lets its in-flight streams finish', async () => {
    sc = await startScenario({ eppA: { delayMs: 300 } });
    const pending = sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    await waitFor(() => sc!.eppA.counters.openStreams === 1, 2000, () => 'EPP stream open');
    sc.pool.retain([]);
    expect(sc.pool.size()).toBe(0);
    const r = await pending;
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    // The next request opens a fresh channel.
    const again = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
    expect(POOL_A_ENDPOINTS).toContain(again.destination);
    expect(sc.pool.size()).toBe(1);
    await sc.settled();
  });
});

describe('load and limits', () => {
  it('many concurrent streams to several EPPs', async () => {
    sc = await startScenario();
    const hosts = ['local.example', 'remote.example', 'nowhere.example'];
    const results = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        sc!.envoy.run({ authority: hosts[i % 3]!, path: '/v1/completions', body: body() }),
      ),
    );
    results.forEach((r, i) => {
      if (i % 3 === 0) expect(POOL_A_ENDPOINTS).toContain(r.destination);
      else if (i % 3 === 1) expect(r.destination).toBe(POOL_B_ENDPOINTS[0]);
      else expect(r.status).toBe(404);
    });
    await sc.settled();
    expect(sc.observer.finished).toHaveLength(150);
    expect(sc.observer.started).toBe(150);
    // One channel per EPP, shared by all streams.
    expect(sc.pool.size()).toBe(2);
  });

  it('concurrent 4 MiB full-duplex streams keep their bytes intact (backpressure both ways)', async () => {
    sc = await startScenario();
    const big = jsonBody(4 * 1024 * 1024);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        sc!.envoy.run({
          authority: i % 2 === 0 ? 'local.example' : 'remote.example',
          path: '/',
          body: frames(big, 16 * 1024),
          response: { status: 200, body: frames(big, 16 * 1024) },
        }),
      ),
    );
    for (const r of results) {
      expect(r.outcome).toBe('forwarded');
      expect(r.forwardedBody!.equals(big)).toBe(true);
      expect(r.response.body.equals(big)).toBe(true);
    }
    await sc.settled();
  });

  it('maxMessageBytes applies: a 4 MiB BUFFERED body over a 1 MiB limit fails (500), not hangs', async () => {
    sc = await startScenario({ maxMessageBytes: 1024 * 1024 });
    const r = await sc.envoy.run(
      { authority: 'local.example', path: '/', body: frames(jsonBody(4 * 1024 * 1024)) },
      { requestBodyMode: 'BUFFERED', responseBodyMode: 'NONE', messageTimeoutMs: 5000 },
    );
    expect(r.status).toBe(500);
    expect(r.reason).toMatch(/gRPC 8/); // RESOURCE_EXHAUSTED
    await sc.settled();
  });
});
