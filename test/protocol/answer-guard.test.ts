// The answer guard on encoded EPP answers: what is refused, what is dropped, and that
// everything else (unknown fields included) reaches Envoy byte for byte.
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import type { AnswerRules } from '../../src/protocol/answer-guard.js';
import { readEppAnswer } from '../../src/protocol/epp-answer.js';
import { decodeResponse, encodeResponse } from '../../src/protocol/codec.js';
import { headerOption } from '../../src/protocol/responses.js';
import { toStruct } from '../../src/protocol/struct.js';
import { DEST, headersAnswer } from './answer-fixtures.js';

const rules: AnswerRules = {
  headers: new Set([DEST, 'content-length', 'retry-after']),
  destinationRefusal: (e) => (e.startsWith('10.') ? undefined : { reason: 'destination_denied', detail: `${e} denied` }),
};

/** The rules as an answer is read (epp-answer.ts), without the destination list cut. */
function guardAnswer(msg: Buffer, r: AnswerRules) {
  const a = readEppAnswer(msg, r, 'list');
  if (a.t === 'malformed') throw a.cause;
  if (a.t === 'refused') return { ok: false as const, refusal: a.refusal };
  if (a.t !== 'answer') throw new Error(`not an answer: ${a.t}`);
  return { ok: true as const, msg: a.msg, destination: a.destination, dropped: a.dropped };
}

describe('the answer rules', () => {
  it('keeps an allowed destination, drops headers outside the allowlist and metadata outside envoy.lb', () => {
    const g = guardAnswer(headersAnswer('10.0.0.1:8000'), rules);
    if (!g.ok) throw new Error('refused');
    expect(g.destination).toBe('10.0.0.1:8000');
    expect(g.dropped.map((d) => d.reason).sort()).toEqual(['header_not_allowed', 'header_not_allowed', 'metadata_namespace']);
    const out = decodeResponse(g.msg);
    const m = out.request_headers!.response!.header_mutation!;
    expect(m.set_headers.map((o) => o.header!.key)).toEqual([DEST]);
    expect(m.remove_headers).toEqual(['content-length']);
    expect(out.request_headers!.response!.clear_route_cache).toBe(true);
    expect(Object.keys(out.dynamic_metadata!.fields)).toEqual(['envoy.lb']);
  });

  it.each([
    ['a denied header destination', headersAnswer('169.254.169.254:80'), 'destination_denied'],
    ['a denied entry of a list', headersAnswer('10.0.0.1:8000,127.0.0.1:80'), 'destination_denied'],
    ['an empty list entry', headersAnswer('10.0.0.1:8000,'), 'destination_invalid'],
    [
      'a denied destination only in envoy.lb metadata',
      encodeResponse({ request_headers: {}, dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '169.254.169.254:80' } }) }),
      'destination_denied',
    ],
    [
      'a denied destination in a body answer (BUFFERED header mutation)',
      encodeResponse({ request_body: { response: { header_mutation: { set_headers: [headerOption(DEST, '127.0.0.1:1')] } } } }),
      'destination_denied',
    ],
    ['streamed_immediate_response', Buffer.from(protobuf.Writer.create().uint32((11 << 3) | 2).bytes(Buffer.alloc(0)).finish()), 'unsupported_answer'],
  ])('refuses %s', (_what, msg, reason) => {
    const g = guardAnswer(msg, rules);
    expect(g.ok).toBe(false);
    if (!g.ok) expect(g.refusal.reason).toBe(reason);
  });

  it('an immediate response keeps its status and body, loses headers outside the allowlist', () => {
    const msg = encodeResponse({
      immediate_response: {
        status: { code: 302 },
        headers: { set_headers: [headerOption('location', 'https://evil.example/'), headerOption('set-cookie', 's=1'), headerOption('retry-after', '3')] },
        body: Buffer.from('moved'),
      },
    });
    const g = guardAnswer(msg, rules);
    if (!g.ok) throw new Error('refused');
    const ir = decodeResponse(g.msg).immediate_response!;
    expect(ir.status!.code).toBe(302);
    expect(ir.body.toString()).toBe('moved');
    expect(ir.headers!.set_headers.map((o) => o.header!.key)).toEqual(['retry-after']);
  });

  it('trailers answers and added trailers are filtered too', () => {
    const msg = encodeResponse({ response_trailers: { header_mutation: { set_headers: [headerOption('grpc-status', '0'), headerOption('content-length', '1')] } } });
    const g = guardAnswer(msg, rules);
    if (!g.ok) throw new Error('refused');
    expect(decodeResponse(g.msg).response_trailers!.header_mutation!.set_headers.map((o) => o.header!.key)).toEqual(['content-length']);
    const added = encodeResponse({ response_body: { response: { trailers: { headers: [{ key: 'set-cookie', raw_value: Buffer.from('x') }] } } } });
    const h = guardAnswer(added, rules);
    if (!h.ok) throw new Error('refused');
    expect(decodeResponse(h.msg).response_body!.response!.trailers!.headers).toEqual([]);
  });

  it('an answer with nothing to drop is returned as the same Buffer, unknown fields included', () => {
    const known = encodeResponse({
      request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '10.0.0.1:8000')] } } },
      dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.0.0.1:8000' } }),
    });
    const unknown = Buffer.from(protobuf.Writer.create().uint32((99 << 3) | 2).bytes(Buffer.from('future')).finish());
    const msg = Buffer.concat([known, unknown]);
    const g = guardAnswer(msg, rules);
    expect(g.ok && g.msg).toBe(msg);
  });

  it('a dropped header keeps the unknown fields of the answer', () => {
    const unknown = Buffer.from(protobuf.Writer.create().uint32((99 << 3) | 2).bytes(Buffer.from('future')).finish());
    const msg = Buffer.concat([headersAnswer('10.0.0.1:8000'), unknown]);
    const g = guardAnswer(msg, rules);
    if (!g.ok) throw new Error('refused');
    expect(g.msg.subarray(g.msg.length - unknown.length).equals(unknown)).toBe(true);
  });

  // Envoy parses with C++ protobuf: a singular message field that occurs twice is MERGED
  // (not replaced, as protobufjs does), so the guard must judge the merged value.
  const w = () => protobuf.Writer.create();
  const headerValue = (fields: Array<[number, string]>): Uint8Array => {
    const hv = w();
    for (const [no, v] of fields) hv.uint32((no << 3) | 2).string(v);
    return hv.finish();
  };
  it('a destination split over two occurrences of HeaderValueOption.header is judged merged', () => {
    // header {key: DEST, raw_value: denied} + header {key: DEST, value: allowed}: Envoy sees both values.
    const opt = w().uint32((1 << 3) | 2).bytes(headerValue([[1, DEST], [3, '169.254.169.254:80']]))
      .uint32((1 << 3) | 2).bytes(headerValue([[1, DEST], [2, '10.0.0.1:8000']])).finish();
    const mutation = w().uint32((1 << 3) | 2).bytes(opt).finish();
    const common = w().uint32((2 << 3) | 2).bytes(mutation).finish();
    const headers = w().uint32((1 << 3) | 2).bytes(common).finish();
    const msg = Buffer.from(w().uint32((1 << 3) | 2).bytes(headers).finish());
    const g = guardAnswer(msg, rules);
    expect(g.ok).toBe(false);
    if (!g.ok) expect(g.refusal.reason).toBe('destination_denied');
  });

  it('a denied envoy.lb destination followed by a second Value occurrence is judged merged', () => {
    // fields {key: envoy.lb, value: {struct {DEST: denied}}, value: {struct {other: x}}}
    const lb = (k: string, v: string): Uint8Array => {
      const strVal = w().uint32((3 << 3) | 2).string(v).finish();
      const entry = w().uint32((1 << 3) | 2).string(k).uint32((2 << 3) | 2).bytes(strVal).finish();
      const struct = w().uint32((1 << 3) | 2).bytes(entry).finish();
      return w().uint32((5 << 3) | 2).bytes(struct).finish();
    };
    const entry = w().uint32((1 << 3) | 2).string('envoy.lb')
      .uint32((2 << 3) | 2).bytes(lb(DEST, '169.254.169.254:80'))
      .uint32((2 << 3) | 2).bytes(lb('other', 'x')).finish();
    const md = w().uint32((1 << 3) | 2).bytes(entry).finish();
    const msg = Buffer.from(w().uint32((1 << 3) | 2).bytes(new Uint8Array(0)).uint32((8 << 3) | 2).bytes(md).finish());
    const g = guardAnswer(msg, rules);
    expect(g.ok).toBe(false);
    if (!g.ok) expect(g.refusal.reason).toBe('destination_denied');
  });

  it('malformed input throws (the relay counts it as a stream failure)', () => {
    expect(() => guardAnswer(Buffer.from([0x0a, 0x05, 0x01]), rules)).toThrow();
  });
});
