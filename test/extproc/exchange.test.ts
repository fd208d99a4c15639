import { describe, expect, it } from 'vitest';
import { EchoLedger, envoyBody, Exchange, streamedLength } from '../../src/extproc/exchange.js';
import { decodeResponse, encodeResponse, peekResponse, type ProtocolConfiguration } from '../../src/protocol/codec.js';
import { continueBody, destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { bodyMsg, headersMsg, responseHeadersMsg, trailersMsg } from './fakes.js';

const FD: ProtocolConfiguration = { request_body_mode: 4, response_body_mode: 4, send_body_without_waiting_for_header_response: false };
const STREAMED: ProtocolConfiguration = { request_body_mode: 1, response_body_mode: 1, send_body_without_waiting_for_header_response: true };

function fromEpp(x: Exchange, msg: Buffer): void {
  x.fromProcessor(peekResponse(msg), msg);
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

describe('wire helpers', () => {
  it('read body bytes of Envoy body messages and of streamed responses without decoding', () => {
    expect(envoyBody(bodyMsg('request_body', 'hello', false), 4).toString()).toBe('hello');
    expect(envoyBody(bodyMsg('response_body', 'tok', true), 5).toString()).toBe('tok');
    expect(envoyBody(bodyMsg('request_body', '', true), 4)).toHaveLength(0);
    expect(streamedLength(streamedBody('request_body', Buffer.from('abcdef'), false), 3)).toBe(6);
    expect(streamedLength(streamedBody('response_body', Buffer.alloc(0), true), 4)).toBe(0);
    expect(streamedLength(continueBody('request_body'), 3)).toBe(0);
  });
});

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

describe('Exchange', () => {
  it('full duplex: request headers answered by the EPP, the rest of the echo and the trailers by takeOver', () => {
    const x = new Exchange(FD);
    x.fromEnvoy('request_headers', headersMsg(), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', 'abcd', false), false);
    x.fromEnvoy('request_trailers', trailersMsg('request_trailers'), true);
    expect(x.requestComplete).toBe(true);
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    fromEpp(x, streamedBody('request_body', Buffer.from('ab'), false));
    expect(x.awaitingRequestHeaders).toBe(false);
    expect(x.pendingWork).toBe(true);
    expect(describeOut(x.takeOver())).toEqual(['request_body:cd', 'request_trailers']);
    expect(x.pendingWork).toBe(false);
  });

  it('before any answer: takeOver answers the headers with the given response, then echoes everything', () => {
    const x = new Exchange(FD);
    x.fromEnvoy('request_headers', headersMsg(), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', '{"a":', false), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', '1}', true), true);
    const out = x.takeOver(destinationHeadersResponse('request_headers', '10.9.9.9:80'));
    expect(describeOut(out)).toEqual(['request_headers', 'request_body:{"a":', 'request_body:1}:eos']);
  });

  it('non-duplex modes count messages: STREAMED pipelined bodies and the response path get CONTINUE in order', () => {
    const x = new Exchange(STREAMED);
    x.fromEnvoy('request_headers', headersMsg({ protocol: null }), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', 'a', false), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', 'b', true), true);
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    fromEpp(x, encodeResponse({ request_body: {} }));
    x.fromEnvoy('response_headers', responseHeadersMsg(), false);
    x.fromEnvoy('response_body', bodyMsg('response_body', 'r', true), true);
    expect(describeOut(x.takeOver())).toEqual(['request_body', 'response_headers', 'response_body']);
  });

  it('settled: the request complete and answered, the response path not started', () => {
    const x = new Exchange(FD);
    x.fromEnvoy('request_headers', headersMsg(), false);
    x.fromEnvoy('request_body', bodyMsg('request_body', 'ab', true), true);
    fromEpp(x, destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    expect(x.settled).toBe(false);
    fromEpp(x, streamedBody('request_body', Buffer.from('ab'), true));
    expect(x.settled).toBe(true);
    x.fromEnvoy('response_headers', responseHeadersMsg(), false);
    expect(x.settled).toBe(false);
  });

  it('an immediate response is recorded', () => {
    const x = new Exchange(null);
    x.fromEnvoy('request_headers', headersMsg({ protocol: null }), true);
    fromEpp(x, encodeResponse({ immediate_response: { status: { code: 400 } } }));
    expect(x.immediate).toBe(true);
  });
});
