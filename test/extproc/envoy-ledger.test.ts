import { describe, expect, it } from 'vitest';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import { EchoLedger, EnvoyLedger } from '../../src/extproc/envoy-ledger.js';
import { HeldBytes } from '../../src/extproc/held-bytes.js';
import { decodeResponse, encodeResponse, type ProtocolConfiguration } from '../../src/protocol/codec.js';
import { ResponseStatus } from '../../src/protocol/constants.js';
import { readEppAnswer } from '../../src/protocol/epp-answer.js';
import { destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, envoyMsg, headersMsg, responseHeadersMsg, trailersMsg } from './fakes.js';

const FD: ProtocolConfiguration = { request_body_mode: 4, response_body_mode: 4, send_body_without_waiting_for_header_response: false };
const STREAMED: ProtocolConfiguration = { request_body_mode: 1, response_body_mode: 1, send_body_without_waiting_for_header_response: true };

const RULES = new MemberAnswerRules().of('cluster-a');

function fromEpp(x: EnvoyLedger, msg: Buffer): void {
  const a = readEppAnswer(msg, RULES, 'list');
  if (a.t !== 'answer') throw new Error(`not an answer: ${a.t}`);
  x.answeredBy(a);
}

/** Kinds and streamed bodies of what takeOver() answers. */
function describeOut(out: Buffer[]): string[] {
  return out.map((b) => {
    const r = decodeResponse(b);
    const kind = r.response ?? 'none';
    const sr = (r.request_body ?? r.response_body)?.response?.body_mutation?.streamed_response;
    return sr ? `${kind}:${sr.body.toString()}${sr.end_of_stream ? ':eos' : ''}` : kind;
  });
}

describe('EchoLedger', () => {
  it('M echoes for N chunks: keeps exactly the bytes not echoed yet', () => {
    const l = new EchoLedger();
    l.add(Buffer.from('aaaa'), false);
    l.add(Buffer.from('bbbb'), false);
    l.echoed(5, false);
    expect(l.pending).toBe(3);
    l.add(Buffer.from('cc'), true);
    expect(l.complete).toBe(false);
    const out: Buffer[] = [];
    l.finish('request_body', out);
    expect(describeOut(out)).toEqual(['request_body:bbb', 'request_body:cc:eos']);
    expect(l.complete).toBe(true);
  });

  it('an ended body fully echoed but not ended gets an empty end_of_stream', () => {
    const l = new EchoLedger();
    l.add(Buffer.from('xy'), true);
    l.echoed(2, false);
    const out: Buffer[] = [];
    l.finish('request_body', out);
    expect(describeOut(out)).toEqual(['request_body::eos']);
  });

  it('more echoed than received (a rewriting EPP) clamps; an ended echo ignores what follows', () => {
    const l = new EchoLedger();
    l.add(Buffer.from('ab'), false);
    l.echoed(10, false);
    expect(l.pending).toBe(0);
    l.echoed(0, true);
    l.add(Buffer.from('late'), false);
    const out: Buffer[] = [];
    l.finish('request_body', out);
    expect(out).toEqual([]);
  });

  it('a body ended by trailers: the rest of the echo without end_of_stream', () => {
    const l = new EchoLedger();
    l.add(Buffer.from('abc'), false);
    const out: Buffer[] = [];
    l.finish('request_body', out);
    expect(describeOut(out)).toEqual(['request_body:abc']);
    expect(l.complete).toBe(true);
  });
});

describe('EnvoyLedger', () => {
  it('full duplex: request headers answered by the EPP, the rest of the echo and the trailers by takeOver', () => {
    const x = new EnvoyLedger(FD, undefined);
    x.fromEnvoy(envoyMsg(headersMsg()));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'abcd', false)));
    x.fromEnvoy(envoyMsg(trailersMsg('request_trailers')));
    expect(x.requestComplete).toBe(true);
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    fromEpp(x, streamedBody('request_body', Buffer.from('ab'), false));
    expect(x.awaitingRequestHeaders).toBe(false);
    expect(x.pendingWork).toBe(true);
    expect(describeOut(x.takeOver())).toEqual(['request_body:cd', 'request_trailers']);
    expect(x.pendingWork).toBe(false);
  });

  it('before any answer: takeOver answers the headers with the given response, then echoes everything', () => {
    const x = new EnvoyLedger(FD, undefined);
    x.fromEnvoy(envoyMsg(headersMsg()));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', '{"a":', false)));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', '1}', true)));
    const out = x.takeOver(destinationHeadersResponse('request_headers', '10.9.9.9:80'));
    expect(describeOut(out)).toEqual(['request_headers', 'request_body:{"a":', 'request_body:1}:eos']);
  });

  it('non-duplex modes count messages: STREAMED pipelined bodies and the response path get CONTINUE in order', () => {
    const x = new EnvoyLedger(STREAMED, undefined);
    x.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'a', false)));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'b', true)));
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    fromEpp(x, encodeResponse({ request_body: {} }));
    x.fromEnvoy(envoyMsg(responseHeadersMsg()));
    x.fromEnvoy(envoyMsg(bodyMsg('response_body', 'r', true)));
    expect(describeOut(x.takeOver())).toEqual(['request_body', 'response_headers', 'response_body']);
  });

  it('settled: the request complete and answered, the response path not started', () => {
    const x = new EnvoyLedger(FD, undefined);
    x.fromEnvoy(envoyMsg(headersMsg()));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'ab', true)));
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    expect(x.settled).toBe(false);
    fromEpp(x, streamedBody('request_body', Buffer.from('ab'), true));
    expect(x.settled).toBe(true);
    x.fromEnvoy(envoyMsg(responseHeadersMsg()));
    expect(x.settled).toBe(false);
  });

  it('no processing mode announced (a one-shot client): the body message is answered by a plain answer or by a streamed echo ending the body', () => {
    const streamedEcho = new EnvoyLedger(null, undefined);
    streamedEcho.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    streamedEcho.fromEnvoy(envoyMsg(bodyMsg('request_body', 'abcd', true)));
    fromEpp(streamedEcho, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    const piece = readEppAnswer(streamedBody('request_body', Buffer.from('ab'), false), RULES, 'list');
    expect(piece.t === 'answer' && streamedEcho.misfit(piece)).toBeUndefined();
    fromEpp(streamedEcho, streamedBody('request_body', Buffer.from('ab'), false));
    expect(streamedEcho.settled).toBe(false);
    fromEpp(streamedEcho, streamedBody('request_body', Buffer.from('cd'), true));
    expect(streamedEcho.settled).toBe(true);
    const late = readEppAnswer(streamedBody('request_body', Buffer.from('x'), true), RULES, 'list');
    expect(late.t === 'answer' && streamedEcho.misfit(late)).toMatch(/no request_body message unanswered/);

    const plain = new EnvoyLedger(null, undefined);
    plain.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    plain.fromEnvoy(envoyMsg(bodyMsg('request_body', 'abcd', true)));
    fromEpp(plain, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    fromEpp(plain, encodeResponse({ request_body: {} }));
    expect(plain.settled).toBe(true);
  });

  it('an announced mode other than full duplex still refuses a streamed echo', () => {
    const x = new EnvoyLedger({ request_body_mode: 2, response_body_mode: 0, send_body_without_waiting_for_header_response: false }, undefined);
    x.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'ab', true)));
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    const echo = readEppAnswer(streamedBody('request_body', Buffer.from('ab'), true), RULES, 'list');
    expect(echo.t === 'answer' && x.misfit(echo)).toMatch(/streamed_response outside FULL_DUPLEX_STREAMED/);
  });

  it('an immediate response is recorded', () => {
    const x = new EnvoyLedger(null, undefined);
    x.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    fromEpp(x, encodeResponse({ immediate_response: { status: { code: 400 } } }));
    expect(x.immediate).toBe(true);
  });
});

describe('EnvoyLedger: held bytes', () => {
  it('counts unechoed body bytes against the bounds and lets them go as the EPP echoes or the stream ends', () => {
    const held = new HeldBytes(6, 1 << 20);
    const x = new EnvoyLedger(FD, held);
    x.fromEnvoy(envoyMsg(headersMsg()));
    expect(x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'abcd', false)))).toBeUndefined();
    expect(held.total).toBe(4);
    fromEpp(x, streamedBody('request_body', Buffer.from('abc'), false));
    expect(held.total).toBe(1);
    expect(x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'efghij', false)))).toBe('stream');
    x.releaseHeld();
    expect(held.total).toBe(0);
  });
});

describe('EnvoyLedger: whether an EPP answer fits what Envoy waits for', () => {
  const answer = (msg: Buffer) => {
    const a = readEppAnswer(msg, RULES, 'list');
    if (a.t !== 'answer') throw new Error(`not an answer: ${a.t}`);
    return a;
  };
  const headersAnswer = destinationHeadersResponse('request_headers', '10.0.0.1:8000');
  const BUFFERED: ProtocolConfiguration = { request_body_mode: 2, response_body_mode: 2, send_body_without_waiting_for_header_response: false };
  const replacing = encodeResponse({ request_headers: { response: { status: ResponseStatus.CONTINUE_AND_REPLACE, body_mutation: { body: Buffer.from('{}') } } } });
  const REPLACE_MISFIT = "request_headers answer with CONTINUE_AND_REPLACE while Envoy streams its direction's body to the processor (Envoy would await no answer to it)";

  it('a CONTINUE_AND_REPLACE headers answer fits while Envoy sends its direction nothing before the headers answer', () => {
    for (const protocol of [BUFFERED, null, { ...STREAMED, send_body_without_waiting_for_header_response: false }]) {
      const x = new EnvoyLedger(protocol, undefined);
      x.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
      expect(answer(replacing).replaces).toBe(true);
      expect(x.misfit(answer(replacing))).toBeUndefined();
    }
    // Full duplex, a request without a body (headers with end_of_stream): nothing more comes.
    const bodiless = new EnvoyLedger(FD, undefined);
    bodiless.fromEnvoy(envoyMsg(headersMsg({ eos: true })));
    expect(bodiless.misfit(answer(replacing))).toBeUndefined();
  });

  it('fits: each answer to its pending message, in order; immediate_response and override_message_timeout at any time', () => {
    const x = new EnvoyLedger(STREAMED, undefined);
    x.fromEnvoy(envoyMsg(headersMsg({ protocol: null })));
    x.fromEnvoy(envoyMsg(bodyMsg('request_body', 'a', false)));
    expect(x.misfit(answer(encodeResponse({ override_message_timeout: { seconds: 1 } })))).toBeUndefined();
    expect(x.misfit(answer(encodeResponse({ immediate_response: { status: { code: 400 } } })))).toBeUndefined();
    expect(x.misfit(answer(headersAnswer))).toBeUndefined();
    fromEpp(x, headersAnswer);
    expect(x.misfit(answer(encodeResponse({ request_body: {} })))).toBeUndefined();
  });

  it.each<[string, ProtocolConfiguration | null, Buffer[], Buffer[], Buffer, string]>([
    ['a second headers answer', null, [headersMsg({ protocol: null })], [headersAnswer], headersAnswer, 'request_headers answer with no request_headers message unanswered'],
    ['trailers never sent', BUFFERED, [headersMsg({ protocol: null })], [headersAnswer], encodeResponse({ request_trailers: {} }), 'request_trailers answer with no request_trailers message unanswered'],
    ['response headers never sent', BUFFERED, [headersMsg({ protocol: null })], [], encodeResponse({ response_headers: {} }), 'response_headers answer with no response_headers message unanswered'],
    ['STREAMED: a body answer before the headers answer', STREAMED, [headersMsg({ protocol: null }), bodyMsg('request_body', 'a', false)], [], encodeResponse({ request_body: {} }), 'request_body answer before the request_headers answer'],
    ['BUFFERED: a streamed_response', BUFFERED, [headersMsg({ protocol: null }), bodyMsg('request_body', 'a', true)], [headersAnswer], streamedBody('request_body', Buffer.from('a'), true), 'request_body streamed_response outside FULL_DUPLEX_STREAMED'],
    ['trailers answer before the body answers', STREAMED, [headersMsg({ protocol: null }), bodyMsg('request_body', 'a', false), trailersMsg('request_trailers')], [headersAnswer], encodeResponse({ request_trailers: {} }), 'request_trailers answer before the request_body answers'],
    ['full duplex: an echo before the headers answer', FD, [headersMsg(), bodyMsg('request_body', 'a', true)], [], streamedBody('request_body', Buffer.from('a'), true), 'request_body answer before the request_headers answer'],
    ['full duplex: a body answer that is not streamed', FD, [headersMsg(), bodyMsg('request_body', 'a', true)], [headersAnswer], encodeResponse({ request_body: {} }), 'request_body answer that is not a streamed_response in FULL_DUPLEX_STREAMED'],
    ['full duplex: an echo after the echo ended', FD, [headersMsg(), bodyMsg('request_body', 'a', true)], [headersAnswer, streamedBody('request_body', Buffer.from('a'), true)], streamedBody('request_body', Buffer.from('b'), false), 'request_body streamed_response with no request_body to echo (none sent, or its echo ended)'],
    ['full duplex: an echo of a body never sent', FD, [headersMsg({ eos: true })], [headersAnswer], streamedBody('request_body', Buffer.from('b'), true), 'request_body streamed_response with no request_body to echo (none sent, or its echo ended)'],
    ['full duplex: CONTINUE_AND_REPLACE with the body under way', FD, [headersMsg(), bodyMsg('request_body', 'a', true)], [], replacing, REPLACE_MISFIT],
    ['full duplex: CONTINUE_AND_REPLACE before any body chunk', FD, [headersMsg()], [], replacing, REPLACE_MISFIT],
    ['STREAMED without waiting: CONTINUE_AND_REPLACE', STREAMED, [headersMsg({ protocol: null })], [], replacing, REPLACE_MISFIT],
    ['anything after an immediate response', null, [headersMsg({ protocol: null })], [encodeResponse({ immediate_response: { status: { code: 400 } } })], headersAnswer, 'request_headers answer after an immediate_response ended processing'],
  ])('misfit: %s', (_name, protocol, envoy, answered, next, why) => {
    const x = new EnvoyLedger(protocol, undefined);
    for (const m of envoy) x.fromEnvoy(envoyMsg(m));
    for (const a of answered) fromEpp(x, a);
    expect(x.misfit(answer(next))).toBe(why);
  });
});

describe('EchoLedger: views of a larger read', () => {
  it('keeps a small body chunk of a large socket read as a copy: what it holds keeps at most max(4 x its size, 8 KiB) alive', () => {
    const read = Buffer.allocUnsafeSlow(64 * 1024).fill(0x61);
    const l = new EchoLedger();
    l.add(read.subarray(10, 20), true);
    const held = (l as unknown as { chunks: Buffer[] }).chunks[0]!;
    expect(held.toString()).toBe('aaaaaaaaaa');
    expect(held.buffer).not.toBe(read.buffer);
    expect(held.buffer.byteLength).toBeLessThanOrEqual(8 * 1024);
    const out: Buffer[] = [];
    l.finish('request_body', out);
    expect(describeOut(out)).toEqual(['request_body:aaaaaaaaaa:eos']);
  });
});
