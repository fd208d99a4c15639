// EppRelay before the commit: failover to the next candidate (replay, parent), the final
// answer when every attempt failed, and FailOpen.
import { describe, expect, it, vi } from 'vitest';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import { FailOpenEndpoints } from '../../src/extproc/fail-open.js';
import { fromStruct } from '../../src/protocol/struct.js';
import { encodeResponse } from '../../src/protocol/codec.js';
import { immediateResponse, destinationHeadersResponse } from '../../src/protocol/responses.js';
import type { Candidate } from '../../src/snapshot/types.js';
import { bodyMsg, FakeEppCall, headersMsg } from './fakes.js';
import { envoyMsg } from './fakes.js';
import { candidate, setup, streamedBodies } from './relay-fixtures.js';

describe('EppRelay: failover before anything reached Envoy', () => {
  const b = candidate('pool-b', { cluster: 'cluster-b', port: 9003 });

  it('connect failure -> the next candidate gets every buffered message replayed', async () => {
    const { envoy, pool, relay, observer, outcomes } = setup({ fallbacks: [b] });
    const h = headersMsg();
    const b1 = bodyMsg('request_body', '{"a"', false);
    const b2 = bodyMsg('request_body', ':1}', true);
    relay.message(envoyMsg(h));
    relay.message(envoyMsg(b1));
    await pool.reject(new RouterError(ErrorCode.EppUnavailable, 'no connection'));
    relay.message(envoyMsg(b2));
    const second = new FakeEppCall();
    await pool.complete(second);
    expect(second.written).toEqual([h, b1, b2]);
    expect(envoy.routedTo.map((c) => c.id)).toEqual([b.id]);
    expect(observer.failovers).toEqual([{ from: 'cluster-a', to: 'cluster-b', reason: 'connect' }]);
    expect(observer.reasons).toEqual(['failover']);
    expect(outcomes.log).toEqual(['connect cluster-a/default/pool-a']);
    second.reply(destinationHeadersResponse('request_headers', '10.2.0.1:8000'));
    expect(envoy.kinds()).toEqual(['request_headers']);
    expect(outcomes.log).toContain(`ok ${b.id}`);
  });

  it.each([
    [503, 'status-503'],
    [429, 'status-429'],
  ] as const)('immediate %i -> next candidate; nothing of the first reaches Envoy', async (status, reason) => {
    const { envoy, pool, relay, call, outcomes } = setup({ fallbacks: [b] });
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', '{}', true)));
    await pool.complete(call);
    call.reply(immediateResponse({ status }));
    expect(envoy.sent).toHaveLength(0);
    expect(call.cancelled).toBe(true);
    expect(outcomes.log).toEqual([`${reason} cluster-a/default/pool-a`]);
    const second = new FakeEppCall();
    await pool.complete(second);
    expect(second.written).toHaveLength(2);
  });

  it('an empty ProcessingResponse (or only dynamic_metadata / mode_override / request_drain) is never relayed: a failed attempt', async () => {
    for (const empty of [
      Buffer.alloc(0),
      encodeResponse({ dynamic_metadata: { fields: { 'envoy.lb': { structValue: { fields: {} } } } } }),
      encodeResponse({ mode_override: { request_body_mode: 4 } }),
      encodeResponse({ request_drain: true }),
    ]) {
      const { envoy, pool, relay, call, outcomes } = setup({ fallbacks: [b] });
      relay.message(envoyMsg(headersMsg()));
      relay.message(envoyMsg(bodyMsg('request_body', '{}', true)));
      await pool.complete(call);
      call.reply(empty);
      expect(envoy.sent).toHaveLength(0); // Envoy would take it as spurious: 500
      expect(call.cancelled).toBe(true);
      expect(outcomes.log).toEqual(['refused cluster-a/default/pool-a']); // counted like a refused answer
      expect(pool.readied).toHaveLength(2);
      const second = new FakeEppCall();
      await pool.complete(second);
      second.reply(destinationHeadersResponse('request_headers', '10.2.0.1:8000'));
      expect(envoy.kinds()).toEqual(['request_headers']);
    }
  });

  it('a malformed immediate_response (peeks fine, does not decode) is a failed attempt, never an exception in the EPP call event', async () => {
    const { envoy, pool, relay, call, outcomes } = setup({ fallbacks: [b] });
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    // immediate_response(7) { status(1): length 0xff..., truncated }
    expect(() => call.reply(Buffer.from([0x3a, 0x02, 0x0a, 0xff]))).not.toThrow();
    expect(envoy.sent).toHaveLength(0);
    expect(call.cancelled).toBe(true);
    expect(outcomes.log).toEqual(['stream cluster-a/default/pool-a']);
    expect(pool.readied).toHaveLength(2);
  });

  it('an EPP ending its stream OK without answering is a failed attempt', async () => {
    const { pool, relay, call, outcomes } = setup({ fallbacks: [b] });
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    call.status(GrpcStatus.OK);
    expect(outcomes.log).toEqual(['stream cluster-a/default/pool-a']);
    expect(pool.readied).toHaveLength(2);
  });

  /**
   * With attemptTimeoutMs 30 on fake timers (the fakes' flushes use setImmediate, which stays
   * real): exact times, no race with the fallback attempt's own timer on a loaded machine.
   * Nothing after 29 ms; at 30 ms the primary's timeout, its call cancelled, the fallback readied.
   */
  function expectTimeoutAfter30ms(s: ReturnType<typeof setup>): void {
    vi.advanceTimersByTime(29);
    expect(s.outcomes.log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(s.outcomes.log).toEqual(['timeout cluster-a/default/pool-a']);
    expect(s.call.cancelled).toBe(true);
    expect(s.pool.readied).toHaveLength(2);
  }

  it('per-attempt timeout: in full duplex counted from the end of the request body', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const s = setup({ fallbacks: [b], attemptTimeoutMs: 30 });
      s.relay.message(envoyMsg(headersMsg()));
      await s.pool.complete(s.call);
      vi.advanceTimersByTime(60);
      expect(s.pool.readied).toHaveLength(1); // body not complete: no timer yet
      s.relay.message(envoyMsg(bodyMsg('request_body', '{}', true)));
      expectTimeoutAfter30ms(s);
    } finally {
      vi.useRealTimers();
    }
  });

  it('per-attempt timeout: an EPP that stops reading mid-body (Envoy paused, body never complete) times out too', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const s = setup({ fallbacks: [b], attemptTimeoutMs: 30 });
      s.relay.message(envoyMsg(headersMsg()));
      await s.pool.complete(s.call);
      s.call.writeResult = false; // flow control: the EPP takes nothing more
      s.relay.message(envoyMsg(bodyMsg('request_body', 'x'.repeat(1000), false)));
      expect(s.envoy.paused).toBe(true); // so Envoy's body never completes here
      expectTimeoutAfter30ms(s);
      const second = new FakeEppCall();
      await s.pool.complete(second);
      expect(second.written).toHaveLength(2); // headers + the chunk, replayed
    } finally {
      vi.useRealTimers();
    }
  });

  it('past the replay bound, no failover: the failure mode answers', async () => {
    const { envoy, pool, relay, call } = setup({ fallbacks: [b], replayBufferBytes: 64 });
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'x'.repeat(100), true)));
    await pool.complete(call);
    call.status(GrpcStatus.UNAVAILABLE, 'boom');
    expect(pool.readied).toHaveLength(1);
    expect(envoy.failed?.code).toBe(ErrorCode.EppUnavailable);
  });

  it('maxAttempts bounds the candidates tried; the 503 lists every attempt', async () => {
    const c = candidate('pool-c', { cluster: 'cluster-c', port: 9004 });
    const { envoy, pool, relay } = setup({ fallbacks: [b, c], maxAttempts: 2 });
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.reject(new Error('refused a'));
    await pool.reject(new Error('refused b'));
    expect(pool.readied).toHaveLength(2);
    expect(envoy.failed?.httpStatus).toBe(503);
    expect(envoy.failed?.message).toMatch(/^all 2 attempts failed: .*refused a.*refused b/);
    expect(envoy.failed?.responseBody().error.attempts?.map((a) => a.cluster)).toEqual(['cluster-a', 'cluster-b']);
  });

  it("every attempt answered 429 last: 429 with the EPP's retry-after", async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(immediateResponse({ status: 429, headers: { 'retry-after': '7' } }));
    expect(envoy.failed?.httpStatus).toBe(429);
    expect(envoy.failed?.outcome).toBe('epp_overloaded');
    expect(envoy.failed?.headers).toEqual({ 'retry-after': '7' });
  });

  it('a parent candidate next: the router answers with the parent address, replaying nothing', async () => {
    const parent: Candidate = {
      ...candidate('pool-b', { cluster: 'cluster-b' }),
      via: 'parent',
      parent: { address: '10.2.0.100:80', cluster: 'cluster-b', gateway: { namespace: 'default', name: 'gw' }, source: 'status' },
    };
    const { envoy, pool, relay } = setup({ fallbacks: [parent] });
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'abc', false)));
    await pool.reject(new Error('refused'));
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body']);
    const h = envoy.responses()[0]!.request_headers!.response!.header_mutation!.set_headers.map((o) => [o.header!.key, o.header!.raw_value.toString()]);
    expect(h).toEqual([
      ['x-gateway-destination-endpoint', '10.2.0.100:80'],
      ['x-mcip-destination-kind', 'parent'],
    ]);
    relay.message(envoyMsg(bodyMsg('request_body', 'def', true)));
    expect(streamedBodies(envoy)).toBe('abcdef');
    expect(envoy.decidedOutcome).toBe('parent');
  });
});

describe('EppRelay: FailOpen', () => {
  it('routes to an endpoint the pool EPP returned recently; never the parent kind header', async () => {
    const failOpen = new FailOpenEndpoints();
    failOpen.remember('cluster-a/default/pool-a', '10.1.0.7:8000');
    const { envoy, pool, relay, observer } = setup({ primary: candidate('pool-a', { failureMode: 'FailOpen' }), failOpen });
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', '{}', true)));
    await pool.reject(new Error('refused'));
    const r = envoy.responses();
    expect(r.map((x) => x.response)).toEqual(['request_headers', 'request_body']);
    const set = r[0]!.request_headers!.response!.header_mutation!.set_headers;
    expect(set.map((o) => o.header!.key)).toEqual(['x-gateway-destination-endpoint']);
    expect(set[0]!.header!.raw_value.toString()).toBe('10.1.0.7:8000');
    expect(fromStruct(r[0]!.dynamic_metadata)).toEqual({ 'envoy.lb': { 'x-gateway-destination-endpoint': '10.1.0.7:8000' } });
    expect(r[1]!.request_body!.response!.body_mutation!.streamed_response).toMatchObject({ end_of_stream: true });
    expect(envoy.decidedOutcome).toBe('fail_open');
    expect(observer.reasons).toEqual(['fail-open']);
  });

  it('an EPP headers answer fills the cache of a FailOpen pool', async () => {
    const failOpen = new FailOpenEndpoints();
    const { pool, relay, call } = setup({ primary: candidate('pool-a', { failureMode: 'FailOpen' }), failOpen });
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.1.0.1:8000,10.1.0.2:8000'));
    expect(failOpen.fresh('cluster-a/default/pool-a')).toEqual(['10.1.0.1:8000', '10.1.0.2:8000']);
  });

  it('nothing known: 503 saying so', async () => {
    const { envoy, pool, relay } = setup({ primary: candidate('pool-a', { failureMode: 'FailOpen' }) });
    relay.message(envoyMsg(headersMsg()));
    await pool.reject(new Error('refused'));
    expect(envoy.failed?.httpStatus).toBe(503);
    expect(envoy.failed?.message).toMatch(/FailOpen, but no endpoint of the pool is known/);
  });

  it('an EPP 503 stands even for a FailOpen pool', async () => {
    const failOpen = new FailOpenEndpoints();
    failOpen.remember('cluster-a/default/pool-a', '10.1.0.7:8000');
    const { envoy, pool, relay, call } = setup({ primary: candidate('pool-a', { failureMode: 'FailOpen' }), failOpen });
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(immediateResponse({ status: 503 }));
    expect(envoy.failed?.httpStatus).toBe(503);
  });
});
