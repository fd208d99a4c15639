import { describe, expect, it } from 'vitest';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { decodeResponse, encodeResponse } from '../../src/protocol/codec.js';
import { fromStruct } from '../../src/protocol/struct.js';
import { immediateResponse, destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, flush, headersMsg, responseHeadersMsg, trailersMsg } from './fakes.js';
import { envoyMsg } from './fakes.js';
import { BUFFERED, candidate, LIST, setup, streamedBodies } from './relay-fixtures.js';

describe('EppRelay: relaying', () => {
  it('buffers Envoy messages (Envoy paused) until the EPP call opens, then forwards them in order', async () => {
    const { envoy, pool, relay, call } = setup();
    expect(envoy.paused).toBe(true);
    const h = headersMsg();
    const b = bodyMsg('request_body', 'hello', true);
    relay.message(envoyMsg(h));
    relay.message(envoyMsg(b));
    expect(pool.readied).toHaveLength(1);
    await pool.complete(call);
    expect(pool.opened).toHaveLength(1);
    expect(pool.opened[0]!.headers['x-route-tag']).toEqual('blue');
    expect(pool.opened[0]!.headers).not.toHaveProperty('user-agent');
    expect(call.written).toEqual([h, b]);
    expect(call.written[0]).toBe(h); // same bytes, never re-encoded
    expect(envoy.paused).toBe(false);
  });

  it('relays EPP responses unchanged, reports success, and ends Envoy OK when the EPP does', async () => {
    const { envoy, pool, relay, call, outcomes } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'x', true)));
    await pool.complete(call);
    const hr = destinationHeadersResponse('request_headers', '10.0.0.1:8000');
    const br = streamedBody('request_body', Buffer.from('x'), true);
    call.reply(hr);
    call.reply(br);
    expect(envoy.sent[0]).toBe(hr);
    expect(envoy.sent[1]).toBe(br);
    expect(envoy.decidedOutcome).toBe('relayed');
    expect(outcomes.log).toEqual(['ok cluster-a/default/pool-a']);
    relay.message(envoyMsg(responseHeadersMsg()));
    expect(call.written).toHaveLength(3);
    call.reply(encodeResponse({ response_headers: {} }));
    relay.endOfInput();
    expect(call.ended).toBe(true);
    call.status(GrpcStatus.OK);
    expect(envoy.finished).toBe('relayed');
    expect(outcomes.log).toEqual(['ok cluster-a/default/pool-a']);
  });

  it('an EPP that ends OK leaving Envoy waiting (response headers unanswered): the router answers', async () => {
    const { envoy, pool, relay, call, outcomes } = setup();
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    relay.message(envoyMsg(responseHeadersMsg()));
    call.status(GrpcStatus.OK);
    expect(envoy.kinds()).toEqual(['request_headers', 'response_headers']);
    expect(outcomes.log.at(-1)).toBe('stream cluster-a/default/pool-a');
    relay.endOfInput();
    expect(envoy.finished).toBe('finished_by_router');
  });

  it('rewrites a destination list to the primary, keeping the full list in envoy.lb metadata', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
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
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    const hr = destinationHeadersResponse('request_headers', LIST);
    call.reply(hr);
    expect(envoy.sent[0]).toBe(hr);
  });

  it('relays an EPP immediate response other than 503/429 (the EPP decided)', async () => {
    const { envoy, pool, relay, call } = setup({ fallbacks: [candidate('pool-b', { cluster: 'cluster-b' })] });
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    const ir = immediateResponse({ status: 400, body: { error: 'model missing' } });
    call.reply(ir);
    expect(envoy.sent).toEqual([ir]);
    expect(envoy.decidedOutcome).toBe('epp_immediate');
    expect(pool.readied).toHaveLength(1);
    call.status(GrpcStatus.OK);
    expect(envoy.finished).toBe('epp_immediate');
  });

  it('a message that answers nothing (override_message_timeout) is relayed without committing', async () => {
    const b = candidate('pool-b', { cluster: 'cluster-b' });
    const { envoy, pool, relay, call } = setup({ fallbacks: [b] });
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    const m = encodeResponse({ override_message_timeout: { seconds: 30 } });
    call.reply(m);
    expect(envoy.sent).toEqual([m]);
    call.status(GrpcStatus.UNAVAILABLE, 'reset');
    expect(pool.readied.map((t) => t.address)).toEqual(['127.0.0.1:9002', b.epp!.address]);
  });

  it('dispose cancels the EPP call; disposed before the channel is ready, no call starts', async () => {
    {
      const { pool, relay, call } = setup();
      relay.message(envoyMsg(headersMsg()));
      await pool.complete(call);
      relay.dispose();
      expect(call.cancelled).toBe(true);
    }
    {
      const { envoy, pool, relay, call } = setup();
      relay.message(envoyMsg(headersMsg()));
      relay.dispose();
      await pool.complete(call);
      expect(pool.opened).toHaveLength(0);
      expect(envoy.failed).toBeUndefined();
    }
  });

  describe("Envoy's close (half-close, then reset) and the EPP call", () => {
    /** A full-duplex exchange the EPP answered completely: headers, echo, response headers. */
    async function answered() {
      const fx = setup();
      const { pool, relay, call } = fx;
      relay.message(envoyMsg(headersMsg()));
      relay.message(envoyMsg(bodyMsg('request_body', 'x', true)));
      await pool.complete(call);
      call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
      call.reply(streamedBody('request_body', Buffer.from('x'), true));
      relay.message(envoyMsg(responseHeadersMsg(true)));
      call.reply(encodeResponse({ response_headers: {} }));
      return fx;
    }

    it("half-close of a finished exchange: Envoy's stream ends OK at once, the call is left to the EPP to end, not cancelled", async () => {
      const { envoy, relay, call } = await answered();
      relay.endOfInput();
      expect(call.ended).toBe(true);
      expect(envoy.finished).toBe('relayed'); // nothing is left to answer: a client reading to the end is not kept waiting
      relay.dispose();
      expect(call.cancelled).toBe(false);
      call.status(GrpcStatus.OK); // the EPP ends it: nothing more reaches Envoy
      expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'response_headers']);
    });

    it('after an immediate response, the reset after the half-close leaves the call to the EPP too', async () => {
      const { pool, relay, call } = setup();
      relay.message(envoyMsg(headersMsg()));
      relay.message(envoyMsg(bodyMsg('request_body', 'x', true)));
      await pool.complete(call);
      call.reply(immediateResponse({ status: 400, body: 'bad' }));
      relay.endOfInput();
      relay.dispose();
      expect(call.cancelled).toBe(false);
    });

    it('reset before any half-close (the client went away): the call is cancelled at once', async () => {
      const { relay, call } = await answered();
      relay.dispose();
      expect(call.cancelled).toBe(true);
    });

    it('half-close and reset with work pending (the EPP had not answered): the call is cancelled at once', async () => {
      const { pool, relay, call } = setup();
      relay.message(envoyMsg(headersMsg()));
      relay.message(envoyMsg(bodyMsg('request_body', 'x', false)));
      await pool.complete(call);
      relay.endOfInput();
      expect(call.ended).toBe(true);
      relay.dispose();
      expect(call.cancelled).toBe(true);
    });
  });

  it('Envoy half-close before the call opens half-closes it once open', async () => {
    const { pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg({ eos: true })));
    relay.endOfInput();
    await pool.complete(call);
    expect(call.written).toHaveLength(1);
    expect(call.ended).toBe(true);
  });

  it('backpressure: pauses Envoy while the EPP is backed up, and the EPP while Envoy is', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
    await pool.complete(call);
    call.writeResult = false;
    relay.message(envoyMsg(bodyMsg('request_body', 'a', false)));
    expect(envoy.paused).toBe(true);
    call.writeResult = true;
    call.emit('drain');
    expect(envoy.paused).toBe(false);

    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    envoy.sendResult = false;
    call.reply(streamedBody('request_body', Buffer.from('a'), false));
    expect(call.paused).toBe(true);
    envoy.sendResult = true;
    envoy.drain();
    expect(call.paused).toBe(false);
  });

  it('takeover while both sides are backed up: Envoy stays held until Envoy drains, then flows (holds balanced)', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'aaaa', true)));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.writeResult = false;
    relay.message(envoyMsg(responseHeadersMsg())); // the EPP's call backs up: the attempt holds Envoy
    envoy.sendResult = false;
    call.reply(streamedBody('request_body', Buffer.from('aa'), false)); // Envoy backs up: the writer holds the EPP
    expect(envoy.paused).toBe(true);
    expect(call.paused).toBe(true);
    call.status(GrpcStatus.UNAVAILABLE, 'crashed'); // the attempt lets go; the router now produces from Envoy's input
    expect(envoy.decidedOutcome).toBe('finished_by_router');
    expect(envoy.paused).toBe(true); // Envoy's side is still backed up
    envoy.sendResult = true;
    envoy.drain();
    expect(envoy.paused).toBe(false);
    envoy.sendResult = false;
    relay.message(envoyMsg(bodyMsg('response_body', 'tok', false)));
    expect(envoy.paused).toBe(true);
    envoy.sendResult = true;
    envoy.drain();
    expect(envoy.paused).toBe(false);
  });
});

describe('EppRelay: the EPP fails after its answer reached Envoy', () => {
  it('full duplex: the router finishes the echo from its own copy, then passes everything through', async () => {
    const { envoy, pool, relay, call, outcomes } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'aaaa', false)));
    relay.message(envoyMsg(bodyMsg('request_body', 'bbbb', false)));
    await pool.complete(call);
    relay.message(envoyMsg(bodyMsg('request_body', 'cc', true)));
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.reply(streamedBody('request_body', Buffer.from('aaaab'), false)); // 1 response for 1.25 chunks
    call.status(GrpcStatus.UNAVAILABLE, 'crashed');
    expect(streamedBodies(envoy)).toBe('aaaabbbbcc');
    const last = envoy.responses().at(-1)!;
    expect(last.request_body!.response!.body_mutation!.streamed_response!.end_of_stream).toBe(true);
    expect(envoy.failed).toBeUndefined();
    expect(envoy.decidedOutcome).toBe('finished_by_router');
    expect(outcomes.log).toEqual(['ok cluster-a/default/pool-a', 'stream cluster-a/default/pool-a']);
    relay.message(envoyMsg(responseHeadersMsg()));
    relay.message(envoyMsg(bodyMsg('response_body', 'tok', true)));
    expect(envoy.kinds().slice(-2)).toEqual(['response_headers', 'response_body']);
    relay.endOfInput();
    expect(envoy.finished).toBeDefined();
  });

  it('full duplex with trailers pending: echo the rest (not ended) and answer the trailers', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'abc', false)));
    relay.message(envoyMsg(trailersMsg('request_trailers')));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.status(GrpcStatus.INTERNAL, 'crashed');
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_trailers']);
    expect(envoy.responses()[1]!.request_body!.response!.body_mutation!.streamed_response!.end_of_stream).toBe(false);
  });

  it('response path, full duplex: the unechoed response bytes are echoed, then pass-through', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    relay.message(envoyMsg(responseHeadersMsg()));
    call.reply(encodeResponse({ response_headers: {} }));
    relay.message(envoyMsg(bodyMsg('response_body', 'tok1', false)));
    call.status(GrpcStatus.UNAVAILABLE, 'gone');
    relay.message(envoyMsg(bodyMsg('response_body', 'tok2', true)));
    const bodies = envoy
      .responses()
      .filter((r) => r.response === 'response_body')
      .map((r) => r.response_body!.response!.body_mutation!.streamed_response!);
    expect(bodies.map((x) => x.body.toString())).toEqual(['tok1', 'tok2']);
    expect(bodies.map((x) => x.end_of_stream)).toEqual([false, true]);
  });

  it('BUFFERED: pending body and trailers get CONTINUE', async () => {
    const { envoy, pool, relay, call } = setup({ protocol: BUFFERED });
    relay.message(envoyMsg(headersMsg({ protocol: BUFFERED })));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    relay.message(envoyMsg(bodyMsg('request_body', '{}', false)));
    relay.message(envoyMsg(trailersMsg('request_trailers')));
    call.status(GrpcStatus.UNAVAILABLE, 'gone');
    await flush();
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body', 'request_trailers']);
    expect(envoy.responses()[1]!.request_body!.response).toBeNull();
  });

  it('ended OK with nothing pending: ends Envoy OK (Envoy continues without a processor)', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'x', true)));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.reply(streamedBody('request_body', Buffer.from('x'), true));
    call.status(GrpcStatus.OK);
    expect(envoy.finished).toBe('relayed');
  });

  it('an empty ProcessingResponse after the commit is never relayed: an EPP failure, finished by the router', async () => {
    const { envoy, pool, relay, call, outcomes } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'abc', true)));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.reply(Buffer.alloc(0)); // instead of the echo
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body']);
    expect(streamedBodies(envoy)).toBe('abc');
    expect(call.cancelled).toBe(true);
    expect(envoy.decidedOutcome).toBe('finished_by_router');
    expect(outcomes.log.at(-1)).toBe('refused cluster-a/default/pool-a');
  });

  it('a streamed body response carrying a field number 0 (invalid protobuf) is an EPP failure, not an exception', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg()));
    relay.message(envoyMsg(bodyMsg('request_body', 'abc', true)));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    const bad = Buffer.concat([streamedBody('request_body', Buffer.from('abc'), true), Buffer.from([0x00, 0x00])]);
    expect(() => call.reply(bad)).not.toThrow();
    expect(call.cancelled).toBe(true);
    expect(envoy.kinds()).toEqual(['request_headers', 'request_body']);
    expect(streamedBodies(envoy)).toBe('abc');
    expect(envoy.decidedOutcome).toBe('finished_by_router');
  });

  it('a malformed EPP message after the commit is an EPP failure, finished by the router', async () => {
    const { envoy, pool, relay, call } = setup();
    relay.message(envoyMsg(headersMsg({ eos: true })));
    await pool.complete(call);
    call.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.reply(Buffer.from([0x0a, 0xff]));
    expect(call.cancelled).toBe(true);
    expect(envoy.failed).toBeUndefined();
    expect(envoy.decidedOutcome).toBe('finished_by_router');
  });
});
