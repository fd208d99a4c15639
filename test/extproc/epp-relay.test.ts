import { describe, expect, it } from 'vitest';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { EppRelay, type EppCandidate } from '../../src/extproc/epp-relay.js';
import { ErrorCode, RouterError } from '../../src/extproc/errors.js';
import type { Processor } from '../../src/extproc/processor.js';
import { decodeResponse, encodeResponse } from '../../src/protocol/codec.js';
import { fromStruct } from '../../src/protocol/struct.js';
import { immediateResponse, destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, FakeEnvoy, FakeEppCall, FakePool, headersMsg, responseHeadersMsg } from './fakes.js';

const TLS = { enabled: false, insecureSkipVerify: true };

function candidate(failureMode: 'FailClose' | 'FailOpen' = 'FailClose'): EppCandidate {
  return {
    id: 'cluster-a/default/pool-a',
    cluster: 'cluster-a',
    namespace: 'default',
    pool: 'pool-a',
    local: true,
    failureMode,
    targetPorts: [8000],
    via: 'epp',
    epp: {
      address: '127.0.0.1:9002',
      host: '127.0.0.1',
      port: 9002,
      cluster: 'cluster-a',
      service: { namespace: 'default', name: 'pool-a-epp' },
      source: 'override',
      tls: TLS,
    },
  };
}

function setup(opts: { mode?: 'primary' | 'list'; failureMode?: 'FailClose' | 'FailOpen' } = {}) {
  const envoy = new FakeEnvoy();
  envoy.metadata.set('x-route-tag', 'blue');
  envoy.metadata.set('user-agent', 'envoy');
  const pool = new FakePool();
  const relay: Processor = new EppRelay(envoy, candidate(opts.failureMode), { pool: pool.asPool(), destinationHeader: opts.mode ?? 'primary' });
  return { envoy, pool, relay, call: new FakeEppCall() };
}

const LIST = '10.0.0.1:8000,10.0.0.2:8000,10.0.0.3:8000';

describe('EppRelay', () => {
  it('buffers Envoy messages (Envoy paused) until the EPP call opens, then forwards them in order', async () => {
    const { envoy, pool, relay, call } = setup();
    expect(envoy.paused).toBe(true);
    const h = headersMsg();
    const b = bodyMsg('request_body', 'hello', true);
    relay.requestHeaders(h, false);
    relay.requestBody(b, true);
    expect(pool.readied).toHaveLength(1);
    await pool.complete(call);
    expect(pool.opened).toHaveLength(1);
    expect(pool.opened[0]!.metadata.get('x-route-tag')).toEqual(['blue']);
    expect(pool.opened[0]!.metadata.get('user-agent')).toEqual([]);
    expect(call.written).toEqual([h, b]);
    expect(call.written[0]).toBe(h); // same bytes, never re-encoded
    expect(envoy.paused).toBe(false);
  });

  it('relays EPP responses unchanged and ends Envoy OK when the EPP does', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    const hr = destinationHeadersResponse('request_headers', '10.0.0.1:8000');
    const br = streamedBody('request_body', Buffer.from('x'), true);
    call.reply(hr);
    call.reply(br);
    expect(envoy.sent[0]).toBe(hr);
    expect(envoy.sent[1]).toBe(br);
    expect(envoy.decidedOutcome).toBe('relayed');
    relay.responseHeaders(responseHeadersMsg(), false);
    expect(call.written).toHaveLength(2);
    relay.endOfInput();
    expect(call.ended).toBe(true);
    call.status(GrpcStatus.OK);
    expect(envoy.finished).toBe('relayed');
  });

  it('rewrites a destination list to the primary, keeping the full list in envoy.lb metadata', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', LIST));
    const r = decodeResponse(envoy.sent[0]!);
    const h = r.request_headers!.response!.header_mutation!.set_headers[0]!.header!;
    expect(h.raw_value.toString()).toBe('10.0.0.1:8000');
    expect(fromStruct(r.dynamic_metadata)).toEqual({ 'envoy.lb': { 'x-gateway-destination-endpoint': LIST } });
    expect(r.request_headers!.response!.clear_route_cache).toBe(true);
  });

  it("'list' mode relays the list as sent", async () => {
    const { envoy, pool, relay, call } = setup({ mode: 'list' });
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    const hr = destinationHeadersResponse('request_headers', LIST);
    call.reply(hr);
    expect(envoy.sent[0]).toBe(hr);
  });

  it('relays an EPP immediate response and records it', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    const ir = immediateResponse({ status: 429, body: { error: 'saturated' } });
    call.reply(ir);
    expect(envoy.sent).toEqual([ir]);
    expect(envoy.decidedOutcome).toBe('epp_immediate');
  });

  it('connect failure: FailClose 503 naming the pool and the reason', async () => {
    const { envoy, pool, relay } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.reject(new RouterError(ErrorCode.EppUnavailable, 'no connection to EPP 127.0.0.1:9002 within 2000 ms'));
    expect(envoy.failed?.code).toBe(ErrorCode.EppUnavailable);
    expect(envoy.failed?.httpStatus).toBe(503);
    expect(envoy.failed?.message).toContain('cluster-a/default/pool-a');
    expect(envoy.failed?.message).toContain('within 2000 ms');
    expect(envoy.sent).toHaveLength(0);
  });

  it('FailOpen: the same 503, with a note', async () => {
    const { envoy, pool, relay } = setup({ failureMode: 'FailOpen' });
    relay.requestHeaders(headersMsg(), false);
    await pool.reject(new Error('boom'));
    expect(envoy.failed?.httpStatus).toBe(503);
    expect(envoy.failed?.message).toMatch(/FailOpen is not supported yet/);
  });

  it('EPP error before anything was relayed: 503; after: a gRPC error', async () => {
    {
      const { envoy, pool, relay, call } = setup();
      relay.requestHeaders(headersMsg(), false);
      await pool.complete(call);
      call.status(GrpcStatus.UNAVAILABLE, 'connection reset');
      expect(envoy.failed?.userFacing).toBe(true);
      expect(envoy.failed?.message).toContain('UNAVAILABLE');
    }
    {
      const { envoy, pool, relay, call } = setup();
      relay.requestHeaders(headersMsg(), false);
      await pool.complete(call);
      call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
      call.status(GrpcStatus.INTERNAL, 'crashed');
      expect(envoy.failed?.code).toBe(ErrorCode.EppStream);
      expect(envoy.failed?.userFacing).toBe(false);
      expect(envoy.failed?.outcome).toBe('epp_error');
    }
  });

  it('a malformed EPP message is an EPP failure', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    call.reply(Buffer.from([0x0a, 0xff]));
    expect(envoy.failed?.code).toBe(ErrorCode.EppUnavailable);
    expect(call.cancelled).toBe(true);
  });

  it('dispose cancels the EPP call; disposed before the channel is ready, no call starts', async () => {
    {
      const { pool, relay, call } = setup();
      relay.requestHeaders(headersMsg(), false);
      await pool.complete(call);
      relay.dispose();
      expect(call.cancelled).toBe(true);
    }
    {
      const { envoy, pool, relay, call } = setup();
      relay.requestHeaders(headersMsg(), false);
      relay.dispose();
      await pool.complete(call);
      expect(pool.opened).toHaveLength(0);
      expect(envoy.failed).toBeUndefined();
    }
  });

  it('Envoy half-close before the call opens half-closes it once open', async () => {
    const { pool, relay, call } = setup();
    relay.requestHeaders(headersMsg({ eos: true }), true);
    relay.endOfInput();
    await pool.complete(call);
    expect(call.written).toHaveLength(1);
    expect(call.ended).toBe(true);
  });

  it('backpressure: pauses Envoy while the EPP is backed up, and the EPP while Envoy is', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.requestHeaders(headersMsg(), false);
    await pool.complete(call);
    call.writeResult = false;
    relay.requestBody(bodyMsg('request_body', 'a', false), false);
    expect(envoy.paused).toBe(true);
    call.writeResult = true;
    call.emit('drain');
    expect(envoy.paused).toBe(false);

    envoy.sendResult = false;
    call.reply(encodeResponse({ request_body: {} }));
    expect(call.paused).toBe(true);
    envoy.sendResult = true;
    envoy.drain();
    expect(call.paused).toBe(false);
  });
});
