// Envoy ends EVERY ext_proc stream with a half-close immediately followed by RST_STREAM
// (ExternalProcessorStreamImpl::close, and AsyncStreamImpl::cleanup even when the server
// ended first). Node's HTTP/2 server (nghttp2's rapid-reset guard, CVE-2023-44487) takes a
// burst of 1,000 incoming RST_STREAM per connection by default, refilled at 33/s; past that it
// sends GOAWAY(INTERNAL_ERROR) and every stream in flight on the connection fails. So:
// - Envoy -> router: the router raises the limit on its server far above its own throughput
//   (Node 22+ has the option; src/extproc/server.ts), and envoy/envoy.yaml still caps the
//   streams per connection (max_requests_per_connection); the stand-in can rotate the same way.
// - router -> EPP: the router does not pass Envoy's reset on to an EPP call that both sides
//   half-closed after a finished exchange: the EPP ends it (EppRelay.dispose, EppAttempt.release).
// Everything over real sockets through the real router (see scenario.ts).
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { routerMaxRequestsPerConnection } from '../envoy/config-fixtures.js';
import { ExternalProcessorClient, type PbProcessingRequest, type PbProcessingResponse } from '../harness/protos.js';
import type { StandinResult } from '../harness/envoy-standin.js';
import { frames, jsonBody, POOL_A_ENDPOINTS, startScenario, waitFor, type Scenario } from './scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const body = (): Buffer[] => frames(jsonBody(512), 256);

/** nghttp2's default rapid-reset burst per connection. */
const RESET_BURST = 1000;

interface Run {
  /** Streams started, in order. */
  started: number;
  /** Failed streams by start index (anything but forwarded with 200). */
  failures: { index: number; result: StandinResult }[];
  ms: number;
}

/** `total` Envoy-like requests, `concurrency` at a time; with `stopOnFailure`, none starts after the first failure. */
async function drive(s: Scenario, total: number, concurrency: number, stopOnFailure = false): Promise<Run> {
  const run: Run = { started: 0, failures: [], ms: 0 };
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (run.started < total && !(stopOnFailure && run.failures.length > 0)) {
      const index = run.started++;
      const result = await s.envoy.run({ authority: 'local.example', path: '/v1/completions', body: body() });
      if (result.outcome !== 'forwarded' || result.status !== 200) run.failures.push({ index, result });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  run.ms = performance.now() - t0;
  return run;
}

/** The first failures, for assertion messages: `[]` when there is none. */
const describeFailures = (r: Run): string[] =>
  r.failures.length === 0
    ? []
    : [`${r.failures.length} of ${r.started} failed`, ...r.failures.slice(0, 3).map((f) => `#${f.index}: ${f.result.status} ${f.result.reason}`)];

describe("Envoy -> router: Envoy's RST_STREAM per stream and Node's rapid-reset limit", () => {
  it(`one connection takes far more than Node's default burst of ${RESET_BURST} resets: no GOAWAY, no failure`, async () => {
    sc = await startScenario();
    const run = await drive(sc, 3 * RESET_BURST, 32, true);
    // If this fails with GOAWAY failures, the router's HTTP/2 server no longer raises the
    // rapid-reset limit (a grpc-js or Node change: see acceptEnvoyResets in src/extproc/server.ts).
    expect(describeFailures(run)).toEqual([]);
    expect(run.started).toBe(3 * RESET_BURST);
    await sc.settled(10_000);
    expect(sc.server.activeStreams()).toBe(0);
  }, 180_000);

  it("rotating connections like envoy.yaml's max_requests_per_connection: no failure over far more than the burst", async () => {
    const every = routerMaxRequestsPerConnection('envoy.yaml');
    expect(every).toBeLessThan(RESET_BURST);
    const total = 3 * every;
    expect(total).toBeGreaterThan(RESET_BURST);
    sc = await startScenario({ standin: { maxRequestsPerConnection: every } });
    const run = await drive(sc, total, 32);
    expect(describeFailures(run)).toEqual([]);
    expect(run.started).toBe(total);
    expect(sc.envoy.connectionsOpened).toBe(3);
    await sc.settled(10_000);
    // Router -> EPP: the EPP ended every stream itself; none was reset by the router.
    const c = sc.eppA.counters;
    await waitFor(() => c.streamsEndedOk + c.streamsCancelled + c.streamsFailed === total, 5000, () => JSON.stringify(c));
    expect({ ok: c.streamsEndedOk, cancelled: c.streamsCancelled, failed: c.streamsFailed }).toEqual({ ok: total, cancelled: 0, failed: 0 });
    expect(new Set(sc.observer.outcomes())).toEqual(new Set(['relayed']));
  }, 60_000);
});

describe("router -> EPP: Envoy's reset is passed on only when the client really went away", () => {
  const ended = (s: Scenario) => {
    const c = s.eppA.counters;
    return { ok: c.streamsEndedOk, cancelled: c.streamsCancelled, failed: c.streamsFailed };
  };

  it("Envoy's close after a finished exchange: the EPP ends its stream itself, not cancelled; nothing stays open", async () => {
    sc = await startScenario();
    for (let i = 0; i < 10; i++) {
      const r = await sc.envoy.run({ authority: 'local.example', path: '/', body: body() });
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
    }
    const rs = await Promise.all(Array.from({ length: 20 }, () => sc!.envoy.run({ authority: 'local.example', path: '/', body: body() })));
    for (const r of rs) expect(r.status).toBe(200);
    // An immediate response (400: body is not JSON) ends processing: its stream is left to the EPP too.
    expect((await sc.envoy.run({ authority: 'local.example', path: '/', body: 'not json' })).status).toBe(400);
    await sc.settled();
    await waitFor(() => ended(sc!).ok + ended(sc!).cancelled === 31, 5000, () => JSON.stringify(ended(sc!)));
    expect(ended(sc)).toEqual({ ok: 31, cancelled: 0, failed: 0 });
    expect(sc.eppA.counters.openStreams).toBe(0);
    expect(sc.server.activeStreams()).toBe(0);
    expect(sc.observer.eppStreams).toHaveLength(31);
  });

  it('Envoy cancels mid-request (its half-close and reset before the EPP answered): the EPP call is cancelled at once', async () => {
    sc = await startScenario({ eppA: { hang: true } });
    const ac = new AbortController();
    const pending = sc.envoy.run({ authority: 'local.example', path: '/', body: body() }, { signal: ac.signal });
    await waitFor(() => sc!.eppA.counters.openStreams === 1, 2000, () => 'EPP stream open');
    await withinProcessMs(1000, 'EPP call cancelled', async () => { // not the 5 s release grace period
      ac.abort();
      expect((await pending).outcome).toBe('reset');
      await waitFor(() => ended(sc!).cancelled === 1, 10_000, () => JSON.stringify(ended(sc!)));
    });
    await sc.settled();
    expect(ended(sc)).toEqual({ ok: 0, cancelled: 1, failed: 0 });
    expect(sc.observer.outcomes()).toEqual(['client_cancelled']);
  });

  /** A raw ext_proc call to the router: request headers (full duplex both ways) and `bodyEos` body. */
  function rawCall(s: Scenario, bodyEos: boolean) {
    const client = new ExternalProcessorClient(s.address, grpc.credentials.createInsecure());
    const call = (client as unknown as { Process(): grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse> }).Process();
    call.on('error', () => undefined);
    const answers: string[] = [];
    call.on('data', (m: PbProcessingResponse) => answers.push(m.response ?? 'none'));
    const headers = [
      { key: ':authority', raw_value: Buffer.from('local.example') },
      { key: ':path', raw_value: Buffer.from('/') },
      { key: ':method', raw_value: Buffer.from('POST') },
    ];
    call.write({ request_headers: { headers: { headers } }, protocol_config: { request_body_mode: 4, response_body_mode: 4 } });
    call.write({ request_body: { body: bodyEos ? jsonBody(256) : Buffer.from('{"model":'), end_of_stream: bodyEos } });
    return { client, call, answers };
  }

  it('a reset without a half-close mid-request (the client went away): the EPP call is cancelled at once', async () => {
    // hang: the EPP does not end the stream on the half-close grpc-js delivers first (see below).
    sc = await startScenario({ eppA: { hang: true } });
    const { client, call } = rawCall(sc, false);
    try {
      await waitFor(() => sc!.eppA.counters.messages.request_body === 1, 2000, () => 'EPP got the body chunk');
      await withinProcessMs(1000, 'EPP call cancelled', async () => {
        call.cancel(); // RST_STREAM without END_STREAM, the EPP still waiting for the rest of the body
        await waitFor(() => ended(sc!).cancelled === 1, 10_000, () => JSON.stringify(ended(sc!)));
      });
      await sc.settled();
      expect(ended(sc)).toEqual({ ok: 0, cancelled: 1, failed: 0 });
      expect(sc.observer.outcomes()).toEqual(['client_cancelled']);
    } finally {
      client.close();
    }
  });

  it('a reset without a half-close once everything was answered reaches the router as a half-close, then the reset: the EPP call is released, not cancelled', async () => {
    // Node's HTTP/2 ends a stream's readable side when the stream closes, so grpc-js reports a
    // bare RST_STREAM as a half-close followed by a cancellation: the router cannot tell it from
    // Envoy's close (and Envoy itself always half-closes first). The half-close is passed on to
    // the EPP at once; with nothing pending the call is left to the EPP to end (GIE EPPs return
    // on EOF), cancelled only after the release grace period (5 s). If this starts failing with
    // cancelled: 1, grpc-js tells the two apart now, and the router cancels at once as it should.
    sc = await startScenario({ eppA: { ignoreHalfClose: true } });
    const { client, call, answers } = rawCall(sc, true);
    try {
      await waitFor(() => answers.length === 2, 2000, () => `answers ${answers.join(',')}`);
      expect(answers).toEqual(['request_headers', 'request_body']); // destination, then the echo
      call.cancel();
      await waitFor(() => sc!.server.activeStreams() === 0, 2000, () => 'router stream closed');
      await new Promise((r) => setTimeout(r, 300));
      expect(sc.eppA.counters.openStreams).toBe(1); // the EPP got the half-close and was not reset
      expect(ended(sc)).toEqual({ ok: 0, cancelled: 0, failed: 0 });
    } finally {
      client.close();
    }
  });
});
