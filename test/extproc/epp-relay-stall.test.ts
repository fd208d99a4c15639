// The stall watch after the commit (extProc.eppStallTimeoutMs): an EPP that owes Envoy
// something (an answer, or body bytes to echo) and sends nothing for that long is failed as a
// 'timeout' and the router finishes the stream; progress, idle waits for Envoy and time the
// router spends not reading the EPP (Envoy backed up) never count. Fake timers (setTimeout and
// performance.now); the fakes' own flushes use setImmediate, which stays real.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeResponse } from '../../src/protocol/codec.js';
import { destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, headersMsg, responseHeadersMsg } from './fakes.js';
import { envoyMsg } from './fakes.js';
import { setup, streamedBodies } from './relay-fixtures.js';

const STALL_MS = 300;
const POOL_A = 'cluster-a/default/pool-a';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Request headers and a two-chunk body ('aaaa' + 'bb'), committed by the EPP's headers answer. */
async function committed(eppStallTimeoutMs = STALL_MS) {
  const s = setup({ eppStallTimeoutMs });
  s.relay.message(envoyMsg(headersMsg()));
  s.relay.message(envoyMsg(bodyMsg('request_body', 'aaaa', false)));
  await s.pool.complete(s.call);
  s.relay.message(envoyMsg(bodyMsg('request_body', 'bb', true)));
  s.call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
  return s;
}

const echo = (text: string, eos = false) => streamedBody('request_body', Buffer.from(text), eos);

describe('EppRelay: an EPP that stalls after its answer', () => {
  it('sends nothing for eppStallTimeoutMs with echo bytes owed: failed as a timeout, the router finishes the echo', async () => {
    const { envoy, call, outcomes } = await committed();
    call.reply(echo('aa'));
    vi.advanceTimersByTime(STALL_MS - 1);
    expect(call.cancelled).toBe(false);
    vi.advanceTimersByTime(2);
    expect(call.cancelled).toBe(true);
    expect(streamedBodies(envoy)).toBe('aaaabb');
    expect(envoy.responses().at(-1)!.request_body!.response!.body_mutation!.streamed_response!.end_of_stream).toBe(true);
    expect(envoy.decidedOutcome).toBe('finished_by_router');
    expect(envoy.failed).toBeUndefined();
    expect(outcomes.log).toEqual([`ok ${POOL_A}`, `timeout ${POOL_A}`]);
  });

  it('counts from the last thing the EPP sent: an EPP echoing a piece every 200 ms is never cut', async () => {
    const { envoy, call, outcomes } = await committed();
    for (const piece of ['a', 'a', 'a', 'a', 'b']) {
      vi.advanceTimersByTime(200);
      call.reply(echo(piece));
    }
    vi.advanceTimersByTime(200);
    call.reply(echo('b', true));
    vi.advanceTimersByTime(10 * STALL_MS); // nothing owed any more
    expect(call.cancelled).toBe(false);
    expect(streamedBodies(envoy)).toBe('aaaabb');
    expect(outcomes.log).toEqual([`ok ${POOL_A}`]);
  });

  it('nothing owed is no stall; a message Envoy then sends starts the clock', async () => {
    const { relay, call, outcomes } = await committed();
    call.reply(echo('aaaabb', true));
    vi.advanceTimersByTime(60_000); // the model is thinking: Envoy sends nothing, the EPP owes nothing
    expect(call.cancelled).toBe(false);
    relay.message(envoyMsg(responseHeadersMsg()));
    vi.advanceTimersByTime(STALL_MS - 1);
    expect(call.cancelled).toBe(false);
    vi.advanceTimersByTime(2);
    expect(call.cancelled).toBe(true);
    expect(outcomes.log).toEqual([`ok ${POOL_A}`, `timeout ${POOL_A}`]);
  });

  it('an answer in time stops the clock for that message', async () => {
    const { relay, call } = await committed();
    call.reply(echo('aaaabb', true));
    relay.message(envoyMsg(responseHeadersMsg()));
    vi.advanceTimersByTime(STALL_MS - 50);
    call.reply(encodeResponse({ response_headers: {} }));
    vi.advanceTimersByTime(10 * STALL_MS);
    expect(call.cancelled).toBe(false);
  });

  it('time the router does not read the EPP because Envoy is backed up is not the EPP\'s', async () => {
    const { envoy, call } = await committed();
    envoy.sendResult = false;
    call.reply(echo('aa')); // Envoy does not take it: the router stops reading the EPP
    expect(call.paused).toBe(true);
    vi.advanceTimersByTime(10 * STALL_MS + STALL_MS / 2); // resumed between two checks of the watch
    expect(call.cancelled).toBe(false);
    envoy.sendResult = true;
    envoy.drain();
    expect(call.paused).toBe(false);
    vi.advanceTimersByTime(STALL_MS - 1);
    expect(call.cancelled).toBe(false);
    vi.advanceTimersByTime(2);
    expect(call.cancelled).toBe(true);
  });

  it('eppStallTimeoutMs 0 disables the watch', async () => {
    const { call, envoy } = await committed(0);
    call.reply(echo('aa'));
    vi.advanceTimersByTime(600_000);
    expect(call.cancelled).toBe(false);
    expect(envoy.decidedOutcome).not.toBe('finished_by_router');
  });

  it('an echo before the headers answer is refused, never relayed, and leaves no timer behind (the client gets a 503)', async () => {
    const s = setup({ eppStallTimeoutMs: STALL_MS });
    s.relay.message(envoyMsg(headersMsg()));
    s.relay.message(envoyMsg(bodyMsg('request_body', 'aaaa', true)));
    await s.pool.complete(s.call);
    s.call.reply(echo('aa')); // Envoy takes a body answer before the headers answer as spurious
    expect(s.envoy.sent).toHaveLength(0);
    expect(s.envoy.failed?.message).toContain('request_body answer before the request_headers answer');
    s.relay.dispose(); // as the stream's close does
    expect(vi.getTimerCount()).toBe(0);
  });

  it('no timer is left behind once the stream is done', async () => {
    const { relay, call } = await committed();
    call.reply(echo('aa'));
    relay.dispose();
    expect(vi.getTimerCount()).toBe(0);
  });
});
