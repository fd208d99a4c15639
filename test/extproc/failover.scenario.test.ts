// Failover on the data path, through real sockets: split.example routes to pool-a (cluster-a)
// and pool-b (cluster-b), so whichever is picked first, the other is the fallback. Faults are
// set on eppA only; requests whose primary is pool-a must still succeed through pool-b.
import { afterEach, describe, expect, it } from 'vitest';
import { getHeader } from '../harness/envoy-standin.js';
import type { StandinResult } from '../harness/envoy-standin.js';
import { frames, jsonBody, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, waitFor, type Scenario, type ScenarioOptions } from './scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const BODY = jsonBody(8 * 1024);
const ALL = [...POOL_A_ENDPOINTS, ...POOL_B_ENDPOINTS];

async function runSplit(n: number, o: { body?: Buffer; frame?: number } = {}): Promise<StandinResult[]> {
  const body = o.body ?? BODY;
  const out: StandinResult[] = [];
  for (let i = 0; i < n; i++) out.push(await sc!.envoy.run({ authority: 'split.example', path: '/v1/completions', body: frames(body, o.frame ?? 1024) }));
  return out;
}

function expectAllServedByB(results: StandinResult[], body = BODY): void {
  for (const r of results) {
    expect(r.reason).toBeUndefined();
    expect(r.outcome).toBe('forwarded');
    expect(POOL_B_ENDPOINTS).toContain(r.destination);
    expect(r.forwardedBody!.equals(body)).toBe(true);
    expect(r.status).toBe(200);
  }
}

async function start(o: ScenarioOptions): Promise<Scenario> {
  sc = await startScenario(o);
  return sc;
}

describe('failover before anything reached Envoy', () => {
  it('EPP unreachable -> the next candidate', async () => {
    await start({});
    await sc!.eppA.kill();
    expectAllServedByB(await runSplit(8));
    expect(sc!.observer.failovers.length).toBeGreaterThan(0);
    expect(sc!.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: 'connect' });
    await sc!.settled();
    expect(new Set(sc!.observer.outcomes())).toEqual(new Set(['relayed']));
    expect(sc!.observer.finished.every((f) => f.pool === 'example/pool-b' && f.cluster === 'cluster-b')).toBe(true);
  });

  it('EPP error mid-body -> the buffered messages are replayed; upstream gets the whole body', async () => {
    await start({ eppA: { crash: 'mid-body' } });
    expectAllServedByB(await runSplit(8));
    expect(sc!.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: 'stream' });
    // The replay carried every message: headers and all 8 body frames.
    const replayed = sc!.eppB.streams.find((s) => s.received.filter((m) => m.request === 'request_body').length === 8);
    expect(replayed).toBeDefined();
    await sc!.settled();
  });

  it('EPP ends its stream OK without answering -> the next candidate', async () => {
    await start({ eppA: { crash: 'close-ok' } });
    expectAllServedByB(await runSplit(6));
    expect(sc!.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: 'stream' });
    await sc!.settled();
  });

  it('EPP answers with an empty ProcessingResponse -> never relayed (Envoy: spurious, 500); the next candidate', async () => {
    await start({ eppA: { crash: 'empty-answer' } });
    expectAllServedByB(await runSplit(6));
    expect(sc!.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: 'refused' });
    expect(sc!.observer.guarded).toContainEqual({ cluster: 'cluster-a', reason: 'spurious_answer' });
    await sc!.settled();
    expect(sc!.eppA.counters.openStreams).toBe(0); // the attempt was cancelled
  });

  it('EPP hangs -> per-attempt timeout (from the end of the body) -> the next candidate', async () => {
    await start({ eppA: { hang: true }, attemptTimeoutMs: 150 });
    const started = Date.now();
    const results = await runSplit(6);
    expectAllServedByB(results);
    const timeouts = sc!.observer.failovers.filter((f) => f.reason === 'timeout');
    expect(timeouts.length).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150 * timeouts.length);
    await sc!.settled();
    expect(sc!.eppA.counters.openStreams).toBe(0); // the hung attempt was cancelled
  });

  it('EPP stops reading mid-body (large full-duplex body never completes) -> per-attempt timeout -> the next candidate', async () => {
    // The timeout also bounds each wait for the healthy EPP to accept more of the 6 MiB body:
    // generous enough for a loaded CI machine, far below what a stalled EPP would take.
    await start({ eppA: { stallReads: true }, attemptTimeoutMs: 1500 });
    const big = jsonBody(6 * 1024 * 1024);
    // Time the OS gave other processes (CI's parallel test files) is left out of the bound.
    const results = await withinProcessMs(10_000, 'four 6 MiB requests, one EPP stalled', () => runSplit(4, { body: big, frame: 64 * 1024 }));
    expectAllServedByB(results, big);
    expect(sc!.observer.failovers.filter((f) => f.reason === 'timeout').length).toBeGreaterThan(0);
    await sc!.settled();
  });

  it.each([503, 429])('EPP answers immediate %i -> the next candidate', async (status) => {
    await start({ eppA: { immediate: { status } } });
    expectAllServedByB(await runSplit(6));
    expect(sc!.observer.failovers).toContainEqual({ from: 'cluster-a', to: 'cluster-b', reason: `status-${status}` });
    await sc!.settled();
  });

  it('every candidate answers 503 -> 503 listing both attempts', async () => {
    await start({ eppA: { immediate: { status: 503 } }, eppB: { immediate: { status: 503 } } });
    const [r] = await runSplit(1);
    expect(r!.status).toBe(503);
    const e = JSON.parse(r!.response.body.toString()).error;
    expect(e.type).toBe('epp_unavailable');
    expect(e.attempts.map((a: { reason: string }) => a.reason)).toEqual(['status-503', 'status-503']);
    expect(new Set(e.attempts.map((a: { cluster: string }) => a.cluster))).toEqual(new Set(['cluster-a', 'cluster-b']));
  });

  it('the last candidate answers 429 -> 429 (clients back off), with its retry-after', async () => {
    const busy = { status: 429, headers: { 'retry-after': '3' } };
    await start({ eppA: { immediate: busy }, eppB: { immediate: busy } });
    const [r] = await runSplit(1);
    expect(r!.status).toBe(429);
    expect(getHeader(r!.response.headers, 'retry-after')).toBe('3');
    expect(JSON.parse(r!.response.body.toString()).error.attempts).toHaveLength(2);
    await sc!.settled();
    expect(sc!.observer.outcomes()).toEqual(['epp_overloaded']);
  });

  it('past the replay bound -> no failover for that request (the failure mode answers)', async () => {
    // The hung EPP fails (attempt timeout) only after the whole 8 KiB body was buffered: over the bound.
    await start({ replayBufferBytes: 4096, eppA: { hang: true }, attemptTimeoutMs: 100 });
    const results = await runSplit(12);
    const failed = results.filter((r) => r.status === 503);
    const served = results.filter((r) => r.outcome === 'forwarded');
    expect(failed.length).toBeGreaterThan(0); // primary pool-a: no failover
    expect(served.length).toBeGreaterThan(0); // primary pool-b
    expect(failed.length + served.length).toBe(12);
    expect(sc!.observer.failovers).toEqual([]);
    for (const r of served) expect(POOL_B_ENDPOINTS).toContain(r.destination);
    for (const r of failed) expect(JSON.parse(r.response.body.toString()).error.message).toContain('no answer within attemptTimeoutMs (100 ms)');
  });
});

describe('the EPP fails after its answer reached Envoy', () => {
  it('crash mid-echo in FULL_DUPLEX_STREAMED: the router finishes the echo, upstream body byte-identical', async () => {
    // 64 KiB frames, echoed in 10 000-byte pieces: M responses for N chunks.
    await start({ eppA: { crash: 'mid-echo', echoChunkBytes: 10_000 } });
    const big = jsonBody(1024 * 1024 + 17);
    const results: StandinResult[] = [];
    for (let i = 0; i < 4; i++) {
      results.push(await sc!.envoy.run({ authority: 'local.example', path: '/', body: frames(big, 64 * 1024), trailers: i % 2 ? { 'x-t': 'v' } : undefined }));
    }
    for (const [i, r] of results.entries()) {
      expect(r.reason).toBeUndefined();
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
      expect(r.forwardedBody!.length).toBe(big.length);
      expect(r.forwardedBody!.equals(big)).toBe(true);
      if (i % 2) expect(getHeader(r.upstreamTrailers, 'x-t')).toBe('v');
      expect(r.status).toBe(200);
    }
    await sc!.settled();
    expect(sc!.observer.outcomes()).toEqual(Array(4).fill('finished_by_router'));
  });

  it.each([
    ['crash on the response path: the rest of the response is answered, the request served cleanly', { eppA: { crash: 'mid-response' } }],
    ['a wedged EPP on the response path is cut after eppStallTimeoutMs; the rest reaches the client intact', { eppA: { crash: 'stall-response' }, eppStallTimeoutMs: 300 }],
  ] as [string, ScenarioOptions][])('%s', async (_name, options) => {
    await start(options);
    const resp = Buffer.from('token '.repeat(2000));
    const r = await sc!.envoy.run({
      authority: 'local.example',
      path: '/',
      body: frames(BODY),
      response: { status: 200, body: frames(resp, 1000), trailers: { 'x-usage': '12' } },
    });
    expect(r.reason).toBeUndefined();
    expect(r.outcome).toBe('forwarded');
    expect(r.response.body.equals(resp)).toBe(true);
    expect(getHeader(r.response.trailers, 'x-usage')).toBe('12');
    await sc!.settled();
    expect(sc!.observer.outcomes()).toEqual(['finished_by_router']);
  });

  it('a wedged EPP (stops echoing, stream open) is cut after eppStallTimeoutMs: the router finishes the echo', async () => {
    await start({ eppA: { crash: 'stall-echo', echoChunkBytes: 10_000 }, eppStallTimeoutMs: 300 });
    const big = jsonBody(200 * 1024 + 3);
    const started = Date.now();
    const r = await sc!.envoy.run({ authority: 'local.example', path: '/', body: frames(big, 64 * 1024), response: { status: 200, body: frames(BODY, 4096) } });
    expect(r.reason).toBeUndefined();
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(r.forwardedBody!.equals(big)).toBe(true);
    expect(r.response.body.equals(BODY)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    await sc!.settled();
    expect(sc!.observer.outcomes()).toEqual(['finished_by_router']);
    expect(sc!.eppA.counters.openStreams).toBe(0); // the wedged call was cancelled
  });

  it('with eppStallTimeoutMs 0 a wedged EPP holds the request (what the watch prevents)', async () => {
    await start({ eppA: { crash: 'stall-echo' }, eppStallTimeoutMs: 0 });
    const run = sc!.envoy.run({ authority: 'local.example', path: '/', body: frames(BODY) });
    const outcome = await Promise.race([run.then(() => 'finished'), new Promise((r) => setTimeout(() => r('still waiting'), 1500))]);
    expect(outcome).toBe('still waiting');
    expect(sc!.eppA.counters.openStreams).toBe(1);
  });

  it.each(['BUFFERED', 'STREAMED'] as const)('%s: pending messages get CONTINUE after a crash (never spurious)', async (mode) => {
    await start({ eppA: { crash: 'mid-response' } });
    const resp = Buffer.from('r'.repeat(5000));
    const r = await sc!.envoy.run(
      { authority: 'local.example', path: '/', body: frames(BODY), trailers: { 'x-t': '1' }, response: { status: 200, body: frames(resp, 1000), trailers: { 'x-u': '2' } } },
      { requestBodyMode: mode, responseBodyMode: mode, messageTimeoutMs: 5000 },
    );
    expect(r.reason).toBeUndefined();
    expect(r.forwardedBody!.equals(BODY)).toBe(true);
    expect(r.response.body.equals(resp)).toBe(true);
    expect(getHeader(r.response.trailers, 'x-u')).toBe('2');
  });
});

describe('an EPP killed mid-traffic', () => {
  it('200 concurrent streams while another healthy pool exists: every request gets a destination and succeeds', async () => {
    await start({ eppA: { delayMs: 40 }, eppB: { delayMs: 40 } });
    const body = jsonBody(16 * 1024);
    const pending: Promise<StandinResult>[] = [];
    for (let i = 0; i < 200; i++) {
      pending.push(sc!.envoy.run({ authority: 'split.example', path: '/v1/completions', body: frames(body, 4096), response: { status: 200, body: frames(body, 4096) } }));
      if (i % 20 === 19) await new Promise((r) => setTimeout(r, 10));
      if (i === 100) await sc!.eppA.kill();
    }
    const results = await Promise.all(pending);
    const bad = results.filter((r) => r.outcome !== 'forwarded' || r.status !== 200);
    expect(bad.map((r) => `${r.status} ${r.reason ?? ''} ${r.response.body.toString().slice(0, 200)}`)).toEqual([]);
    for (const r of results) {
      expect(ALL).toContain(r.destination);
      expect(r.forwardedBody!.equals(body)).toBe(true);
      expect(r.response.body.equals(body)).toBe(true);
    }
    expect(sc!.observer.failovers.length).toBeGreaterThan(0);
    await sc!.settled();
    expect(sc!.observer.finished).toHaveLength(200);
  });
});

describe('the EPP comes back', () => {
  it('after a restart, its pool is used again', async () => {
    await start({});
    await sc!.eppA.kill();
    expectAllServedByB(await runSplit(4));
    await sc!.eppA.restart();
    await waitFor(() => true, 10, () => '');
    let sawA = false;
    for (let i = 0; i < 40 && !sawA; i++) {
      const [r] = await runSplit(1);
      expect(r!.status).toBe(200);
      sawA = POOL_A_ENDPOINTS.includes(r!.destination!);
      if (!sawA) await new Promise((res) => setTimeout(res, 50));
    }
    expect(sawA).toBe(true);
  });
});
