// EPP answers Envoy is not waiting for, over real sockets: Envoy stand-in -> router -> a scripted EPP
// (pool-a) beside a simulated GIE EPP (pool-b), in every processing mode. The stand-in fails a
// request on any spurious message, as Envoy does; the router never relays one. Before the commit
// the answer fails the attempt over (replay), after it the router finishes the stream; either
// way it is counted as a refused answer and an EPP failure.
import { describe, expect, it } from 'vitest';
import type { StandinOptions } from '../harness/envoy-standin.js';
import type { EppReply } from '../harness/hostile-epp.js';
import { hostileFixture, routeTo } from './hostile-scenario.js';
import { ResponseStatus } from '../../src/protocol/constants.js';
import type { PhaseName } from '../../src/protocol/phases.js';
import { jsonBody, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS } from './scenario.js';

const f = hostileFixture();
const start = f.start;

const streamed = (phase: 'request_body' | 'response_body'): EppReply => ({
  [phase]: { response: { body_mutation: { streamed_response: { body: Buffer.from('x'), end_of_stream: false } } } },
});

type ModeName = 'headers-only' | 'BUFFERED' | 'STREAMED' | 'FULL_DUPLEX_STREAMED';
const MODES: ModeName[] = ['FULL_DUPLEX_STREAMED', 'BUFFERED', 'STREAMED', 'headers-only'];

function options(mode: ModeName): StandinOptions {
  if (mode === 'headers-only') {
    return { requestBodyMode: 'NONE', responseBodyMode: 'NONE', requestTrailerMode: 'SKIP', responseTrailerMode: 'SKIP', messageTimeoutMs: 5000 };
  }
  return { requestBodyMode: mode, responseBodyMode: mode, requestTrailerMode: 'SEND', responseTrailerMode: 'SEND', messageTimeoutMs: 5000 };
}

const request = (authority: string) => ({ authority, path: '/v1/completions', body: jsonBody(512), response: { status: 200, body: Buffer.alloc(300, 'r') } });

interface Spurious {
  name: string;
  /** The phase of Envoy's message the EPP sends it before it reacts to. */
  on: PhaseName;
  send: (mode: ModeName) => EppReply[];
  modes?: ModeName[];
}

/** Sent before the EPP's real answer: the attempt fails over. */
const BEFORE_COMMIT: Spurious[] = [
  { name: 'an answer to nothing pending (request trailers never sent)', on: 'request_headers', send: () => [{ request_trailers: {} }] },
  { name: 'an answer of the wrong kind (response headers while request headers wait)', on: 'request_headers', send: () => [{ response_headers: {} }] },
  {
    name: 'a body answer before the headers answer',
    on: 'request_headers',
    send: (mode) => [mode === 'FULL_DUPLEX_STREAMED' ? streamed('request_body') : { request_body: {} }],
  },
  { name: 'an empty ProcessingResponse', on: 'request_headers', send: () => [Buffer.alloc(0)] },
];

/** Sent after the EPP's answer reached Envoy: the router finishes the stream. */
const AFTER_COMMIT: Spurious[] = [
  { name: 'a second answer to the request headers', on: 'response_headers', send: () => [routeTo(POOL_A_ENDPOINTS[1]!)] },
  { name: 'an answer to nothing pending (response trailers never sent)', on: 'response_headers', send: () => [{ response_trailers: {} }] },
  { name: 'an answer of the wrong kind (a response body answer before the response headers answer)', on: 'response_headers', send: () => [{ response_body: {} }] },
  { name: 'an empty ProcessingResponse', on: 'response_headers', send: () => [Buffer.alloc(0)] },
  { name: 'a body answer that is not a streamed_response', on: 'response_body', send: () => [{ response_body: {} }], modes: ['FULL_DUPLEX_STREAMED'] },
  { name: 'a streamed_response outside full duplex', on: 'response_body', send: () => [streamed('response_body')], modes: ['BUFFERED', 'STREAMED'] },
];

/** `n` split requests all served by pool-b: each of pool-a's answers refused (spurious_answer) and failed over. */
async function expectEveryRequestFailedOver(n: number, opts: StandinOptions): Promise<void> {
  const results = [];
  for (let i = 0; i < n; i++) results.push(await f.sc!.envoy.run(request('split.example'), opts));
  for (const r of results) {
    expect(r.reason).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.destination).toBe(POOL_B_ENDPOINTS[0]);
  }
  expect(f.hostile!.streams).toBeGreaterThan(0);
  expect(f.sc!.observer.failovers.filter((x) => x.reason === 'refused')).toHaveLength(f.hostile!.streams);
  expect(f.sc!.observer.guarded.filter((g) => g.reason === 'spurious_answer')).toHaveLength(f.hostile!.streams);
}

const cases = (list: Spurious[]) => list.flatMap((s) => MODES.filter((m) => s.modes?.includes(m) ?? true).map((mode) => ({ ...s, mode })));

describe('an EPP answer Envoy is not waiting for', () => {
  it.each(cases(BEFORE_COMMIT))('before the commit, $mode: $name -> refused, counted, failed over', async (s) => {
    await start({ answer: () => routeTo(POOL_A_ENDPOINTS[0]!), inject: { [s.on]: () => s.send(s.mode) } });
    await expectEveryRequestFailedOver(4, options(s.mode));
  });

  it.each(cases(AFTER_COMMIT))('after the commit, $mode: $name -> refused, counted, the router finishes', async (s) => {
    await start({ answer: () => routeTo(POOL_A_ENDPOINTS[0]!), inject: { [s.on]: () => s.send(s.mode) } });
    const r = await f.sc!.envoy.run(request('local.example'), options(s.mode));
    expect(r.reason).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.destination).toBe(POOL_A_ENDPOINTS[0]);
    if (s.mode !== 'headers-only') expect(r.response.body.equals(Buffer.alloc(300, 'r'))).toBe(true);
    await f.sc!.settled();
    expect(f.sc!.observer.outcomes()).toEqual(['finished_by_router']);
    expect(f.sc!.observer.guarded).toEqual([{ cluster: 'cluster-a', reason: 'spurious_answer' }]);
  });
});

describe('a headers answer with status CONTINUE_AND_REPLACE', () => {
  // Envoy then drops the body it already streamed to the processor and awaits no answer to it:
  // the EPP's echo, or the router's own answers for it, would be spurious. Where Envoy streams
  // a body before the headers answer, the relay refuses such an answer; elsewhere it is relayed.
  const replacing = () => {
    const a = routeTo(POOL_A_ENDPOINTS[0]!);
    return { ...a, request_headers: { response: { ...a.request_headers.response, status: ResponseStatus.CONTINUE_AND_REPLACE, body_mutation: { body: Buffer.from('{}') } } } };
  };
  const pipelined: StandinOptions = { ...options('STREAMED'), sendBodyWithoutWaitingForHeaderResponse: true };

  it.each([
    ['FULL_DUPLEX_STREAMED', options('FULL_DUPLEX_STREAMED')],
    ['STREAMED, body sent without waiting for the headers answer', pipelined],
  ])('%s: refused, counted, failed over; Envoy never sees it', async (_mode, opts) => {
    await start({ answer: replacing });
    await expectEveryRequestFailedOver(3, opts);
  });

  it.each(['BUFFERED', 'STREAMED', 'headers-only'] as const)('%s (no body sent before the headers answer): relayed', async (mode) => {
    await start({ answer: replacing });
    const r = await f.sc!.envoy.run(request('local.example'), options(mode));
    expect(r.reason).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.destination).toBe(POOL_A_ENDPOINTS[0]);
    await f.sc!.settled();
    expect(f.sc!.observer.guarded).toEqual([]);
  });
});

describe('a headers answer sent together with override_message_timeout', () => {
  // Envoy reads such a message as the override only: the request headers still wait for their
  // answer. The relay reads it the same way, so the EPP's real answer after it is relayed.
  it.each(MODES)('%s: Envoy gets the later real answer; nothing refused', async (mode) => {
    const withOverride = { ...routeTo(POOL_A_ENDPOINTS[1]!), override_message_timeout: { seconds: 2 } };
    await start({ answer: () => routeTo(POOL_A_ENDPOINTS[0]!), inject: { request_headers: () => [withOverride] } });
    const r = await f.sc!.envoy.run(request('local.example'), { ...options(mode), messageTimeoutMs: 1000 });
    expect(r.reason).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.destination).toBe(POOL_A_ENDPOINTS[0]);
    await f.sc!.settled();
    expect(f.sc!.observer.guarded).toEqual([]);
  });
});

describe('an EPP that sends override_message_timeout and nothing more', () => {
  // It answers nothing: the attempt's deadline keeps running (Envoy may wait far longer on the
  // override, or, in full duplex, on nothing), and the request fails over when it passes.
  it.each(['headers-only', 'FULL_DUPLEX_STREAMED'] as const)('%s: failed over after attemptTimeoutMs', async (mode) => {
    await start({ answer: () => ({ override_message_timeout: { seconds: 60 } }) }, { attemptTimeoutMs: 300 });
    const r = await f.sc!.envoy.run({ ...request('split.example'), body: undefined }, options(mode));
    expect(r.reason).toBeUndefined();
    expect(r.status).toBe(200);
    expect(r.destination).toBe(POOL_B_ENDPOINTS[0]);
    expect(f.hostile!.streams).toBe(1);
    expect(f.sc!.observer.failovers.map((x) => x.reason)).toEqual(['timeout']);
  });
});

describe('a 50/50 split with one EPP that answers request trailers Envoy never sent', () => {
  it('no request fails, and the pool is ejected', async () => {
    const health = { intervalMs: 60_000, timeoutMs: 100, healthyThreshold: 1, unhealthyThreshold: 2 };
    const noMetrics = { epp: { health, metrics: { enabled: false } } };
    await start(
      { answer: () => routeTo(POOL_A_ENDPOINTS[0]!), inject: { request_headers: () => [{ request_trailers: {} }] } },
      { signals: true, clusterA: noMetrics, clusterB: noMetrics },
    );
    const results = [];
    for (let i = 0; i < 60; i++) results.push(await f.sc!.envoy.run(request('split.example')));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.every((r) => r.destination === POOL_B_ENDPOINTS[0])).toBe(true);
    expect(f.sc!.signals!.view().get('cluster-a/example/pool-a').ejected).toBe(true);
    // Ejected after the default 5 consecutive failures: later picks skip the pool.
    expect(f.hostile!.streams).toBeGreaterThanOrEqual(5);
    expect(f.hostile!.streams).toBeLessThan(30);
  });
});
