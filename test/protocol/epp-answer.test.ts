// readEppAnswer on encoded EPP answers: what each answer answers, what is relayed
// (the rules applied, a destination list cut), what the relay's bookkeeping reads,
// on messages from encodeResponse and on hand-made wire bytes.
import { describe, expect, it } from 'vitest';
import type { AnswerRules } from '../../src/protocol/answer-guard.js';
import { decodeResponse, encodeResponse, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { readEppAnswer, type EppAnswer, type RelayableAnswer } from '../../src/protocol/epp-answer.js';
import { headerOption, immediateResponse, streamedBody } from '../../src/protocol/responses.js';
import { fromStruct, toStruct } from '../../src/protocol/struct.js';
import { lenField } from '../../src/protocol/wire-walk.js';
import { DEST, headersAnswer } from './answer-fixtures.js';
import { canonicalResponse } from './wire-canonical.js';

const rules: AnswerRules = {
  headers: new Set([DEST, 'content-length', 'retry-after', 'x-ok']),
  destinationRefusal: (e) => (/^10\.\d+\.\d+\.\d+:\d+$/.test(e) ? undefined : { reason: 'destination_denied', detail: `${e} denied` }),
};

const read = (msg: Buffer, mode: 'primary' | 'list' = 'primary'): EppAnswer => readEppAnswer(msg, rules, mode);
function answer(msg: Buffer, mode: 'primary' | 'list' = 'primary'): RelayableAnswer {
  const a = read(msg, mode);
  if (a.t !== 'answer') throw new Error(`expected an answer, got ${JSON.stringify(a)}`);
  return a;
}
const fld = (no: number, ...payload: Buffer[]): Buffer => lenField(no, Buffer.concat(payload));
const varint = (no: number, v: number): Buffer => Buffer.from([no << 3, v]);
const concat = (...b: Buffer[]): Buffer => Buffer.concat(b);
/** An unknown field (number 1000, LEN): must survive any rewrite byte for byte. */
const UNKNOWN = lenField(1000, Buffer.from('future field'));

describe('readEppAnswer: body answers', () => {
  it('a streamed body echo is read, not copied: the EPP bytes themselves, its end_of_stream and body length', () => {
    const msg = streamedBody('response_body', Buffer.from('data: {"token":"hi"}\n\n'), true);
    const a = answer(msg);
    expect(a).toMatchObject({ case: 'response_body', streamed: true, endOfStream: true, echoedBytes: 22, dropped: [] });
    expect(a.msg).toBe(msg);
    expect(answer(streamedBody('request_body', Buffer.alloc(0), false))).toMatchObject({ case: 'request_body', streamed: true, endOfStream: false, echoedBytes: 0 });
  });

  it('repeated occurrences merge: an end_of_stream of an earlier occurrence holds, the last body counts', () => {
    const streamed = (...f: Buffer[]): Buffer => fld(4, fld(1, fld(3, fld(3, ...f))));
    const msg = concat(streamed(fld(1, Buffer.from('first')), varint(2, 1)), streamed(fld(1, Buffer.from('second!'))));
    expect(answer(msg)).toMatchObject({ case: 'response_body', streamed: true, endOfStream: true, echoedBytes: 7 });
  });

  it('another member replaces the earlier one: its streamed flags and its rules no longer count', () => {
    const denied = encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '1.2.3.4:80')] } } } });
    const msg = concat(streamedBody('request_body', Buffer.from('x'), true), denied);
    expect(read(msg)).toMatchObject({ t: 'refused', refusal: { reason: 'destination_denied' } });
    const echo = concat(denied, streamedBody('response_body', Buffer.from('abc'), false));
    expect(answer(echo)).toMatchObject({ case: 'response_body', streamed: true, echoedBytes: 3, dropped: [] });
    expect(answer(echo).msg).toBe(echo);
  });

  it('a body answer with a header mutation is held to the rules', () => {
    const msg = encodeResponse({
      response_body: {
        response: {
          header_mutation: { set_headers: [headerOption('set-cookie', 'a=1'), headerOption('x-ok', '1')] },
          body_mutation: { streamed_response: { body: Buffer.from('abcd'), end_of_stream: true } },
        },
      },
    });
    const a = answer(msg);
    expect(a).toMatchObject({ streamed: true, endOfStream: true, echoedBytes: 4, dropped: [{ reason: 'header_not_allowed', detail: 'set header "set-cookie"' }] });
    const out = decodeResponse(a.msg).response_body!.response!;
    expect(out.header_mutation!.set_headers.map((o) => o.header!.key)).toEqual(['x-ok']);
    expect(out.body_mutation!.streamed_response!.body.toString()).toBe('abcd');
    expect(read(encodeResponse({ request_body: { response: { header_mutation: { set_headers: [headerOption(DEST, '127.0.0.1:1')] } } } }))).toMatchObject({
      t: 'refused',
      refusal: { reason: 'destination_denied' },
    });
  });
});

describe('readEppAnswer: headers answers', () => {
  it('keeps an allowed destination, drops headers outside the allowlist and metadata outside envoy.lb, keeps unknown fields', () => {
    const a = answer(concat(headersAnswer('10.0.0.1:8000'), UNKNOWN));
    expect(a.case).toBe('request_headers');
    expect(a.destination).toBe('10.0.0.1:8000');
    expect(a.dropped.map((d) => d.reason).sort()).toEqual(['header_not_allowed', 'header_not_allowed', 'metadata_namespace']);
    const out = decodeResponse(a.msg);
    expect(out.request_headers!.response!.header_mutation!.set_headers.map((o) => o.header!.key)).toEqual([DEST]);
    expect(out.request_headers!.response!.header_mutation!.remove_headers).toEqual(['content-length']);
    expect(out.request_headers!.response!.clear_route_cache).toBe(true);
    expect(Object.keys(out.dynamic_metadata!.fields)).toEqual(['envoy.lb']);
    expect(a.msg.includes(UNKNOWN)).toBe(true);
  });

  it.each([
    ['a denied header destination', headersAnswer('169.254.169.254:80'), 'destination_denied'],
    ['a denied entry of a list', headersAnswer('10.0.0.1:8000,127.0.0.1:80'), 'destination_denied'],
    ['an empty list entry', headersAnswer('10.0.0.1:8000,'), 'destination_invalid'],
    ['a denied destination only in envoy.lb', encodeResponse({ response_headers: {}, dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '1.1.1.1:80' } }) }), 'destination_denied'],
    ['streamed_immediate_response', fld(11), 'unsupported_answer'],
  ])('refuses %s', (_what, msg, reason) => {
    expect(read(msg)).toMatchObject({ t: 'refused', refusal: { reason } });
  });

  it('override_message_timeout beside a member: read as the override only, as Envoy does (the member answers nothing)', () => {
    const both = encodeResponse({ ...{ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '10.0.0.1:8000')] } } } }, override_message_timeout: { seconds: 1 } });
    expect(answer(both)).toMatchObject({ case: 'override_message_timeout', streamed: false, replaces: false });
    const echo = Buffer.concat([streamedBody('request_body', Buffer.from('ab'), true), encodeResponse({ override_message_timeout: { seconds: 1 } })]);
    expect(answer(echo)).toMatchObject({ case: 'override_message_timeout', streamed: false, endOfStream: false, echoedBytes: 0 });
    // Still judged: a denied destination in it is refused.
    const denied = encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '127.0.0.1:80')] } } }, override_message_timeout: { seconds: 1 } });
    expect(read(denied)).toMatchObject({ t: 'refused', refusal: { reason: 'destination_denied' } });
  });

  it('CONTINUE_AND_REPLACE: read from a headers answer (the last status of merged occurrences), never from a body answer', () => {
    const status = (v: number) => fld(1, varint(1, v));
    expect(answer(fld(1, status(1))).replaces).toBe(true);
    expect(answer(fld(2, status(1))).replaces).toBe(true);
    expect(answer(fld(1, status(1), status(0))).replaces).toBe(false);
    expect(answer(concat(fld(1, status(0)), fld(1, status(1)))).replaces).toBe(true);
    expect(answer(fld(1, status(0))).replaces).toBe(false);
    expect(answer(fld(3, status(1))).replaces).toBe(false);
    // Another member replaces the headers answer, and what was read of it.
    expect(answer(concat(fld(1, status(1)), fld(5))).replaces).toBe(false);
  });

  it('a destination hidden in an earlier occurrence of the option header is judged (occurrences merge)', () => {
    const hv = (...f: Buffer[]): Buffer => fld(1, ...f);
    const option = fld(1, hv(fld(1, Buffer.from(DEST)), fld(3, Buffer.from('1.2.3.4:80'))), hv(fld(2, Buffer.from('10.0.0.1:80'))));
    const msg = fld(1, fld(1, fld(2, option)));
    expect(read(msg)).toMatchObject({ t: 'refused', refusal: { reason: 'destination_denied' } });
  });

  it('primary: the header keeps the first ip:port, envoy.lb gets the list the EPP sent', () => {
    const msg = concat(encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '10.0.0.1:8000, 10.0.0.2:8000')] } } } }), UNKNOWN);
    const a = answer(msg);
    expect(a.destination).toBe('10.0.0.1:8000, 10.0.0.2:8000');
    const out = decodeResponse(a.msg);
    expect(out.request_headers!.response!.header_mutation!.set_headers[0]!.header!.raw_value.toString()).toBe('10.0.0.1:8000');
    expect(fromStruct(out.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000, 10.0.0.2:8000' } });
    expect(a.msg.includes(UNKNOWN)).toBe(true);
    const listed = answer(msg, 'list');
    expect(listed.msg.subarray(0, msg.length).equals(msg)).toBe(true); // relayed as sent, envoy.lb added after it
    expect(fromStruct(decodeResponse(listed.msg).dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000, 10.0.0.2:8000' } });
  });

  it('primary: a list in an earlier occurrence of the option header that a later one overwrites never reaches envoy.lb', () => {
    // header {key: DEST, raw_value: <denied list>} + header {key: DEST, raw_value: <allowed>}: Envoy merges the two
    // into the allowed value, which is what the rules check; the overwritten list must not be cut into the metadata.
    const hv = (...f: Buffer[]): Buffer => fld(1, ...f);
    const key = fld(1, Buffer.from(DEST));
    const option = fld(1, hv(key, fld(3, Buffer.from('1.2.3.4:80,5.6.7.8:80'))), hv(key, fld(3, Buffer.from('10.0.0.1:8000'))));
    const a = answer(fld(1, fld(1, fld(2, option))));
    expect(a.destination).toBe('10.0.0.1:8000');
    const out = decodeResponse(a.msg);
    expect(fromStruct(out.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000' } });
    expect(a.msg.includes(Buffer.from('1.2.3.4:80,5.6.7.8:80'))).toBe(true); // kept, and overwritten by Envoy's merge
  });

  it('primary: a list that only the merge of the option header occurrences makes is cut in every occurrence', () => {
    // header {key: DEST, raw_value: 10.0.0.1:8000} + header {raw_value: <allowed list>}: Envoy merges to the list.
    const hv = (...f: Buffer[]): Buffer => fld(1, ...f);
    const option = fld(1, hv(fld(1, Buffer.from(DEST)), fld(3, Buffer.from('10.0.0.1:8000'))), hv(fld(3, Buffer.from('10.0.0.2:8000,10.0.0.3:8000'))));
    const a = answer(fld(1, fld(1, fld(2, option))));
    const out = decodeResponse(a.msg);
    expect(out.request_headers!.response!.header_mutation!.set_headers[0]!.header!.raw_value.toString()).toBe('10.0.0.2:8000');
    expect(fromStruct(out.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.2:8000,10.0.0.3:8000' } });
    expect(a.msg.includes(Buffer.from('10.0.0.1:8000'))).toBe(false);
  });

  it("envoy.lb naming another destination than the header gets the header's, reported; the rest of its Struct stays", () => {
    const msg = headersAnswer('10.0.0.1:8000,10.0.0.2:8000', { dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.0.0.2:8000', other: 'x' } }) });
    const a = answer(msg);
    expect(fromStruct(decodeResponse(a.msg).dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000,10.0.0.2:8000', other: 'x' } });
    expect(a.dropped.filter((d) => d.reason === 'destination_mismatch')).toHaveLength(1);
    const same = headersAnswer('10.0.0.1:8000, 10.0.0.2:8000', { dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } }) });
    expect(answer(same).dropped.map((d) => d.reason)).not.toContain('destination_mismatch'); // the same entries, spaced differently
    // The header's one endpoint first in a metadata list (override_host's failovers): consistent, kept as sent.
    const failovers = headersAnswer('10.0.0.1:8000', { dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } }) });
    const kept = answer(failovers);
    expect(kept.dropped.map((d) => d.reason)).not.toContain('destination_mismatch');
    const longer = headersAnswer('10.0.0.1:800', { dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '10.0.0.1:8000' } }) });
    expect(answer(longer).dropped.map((d) => d.reason)).toContain('destination_mismatch'); // not a prefix of its text: another endpoint
    expect(fromStruct(decodeResponse(kept.msg).dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } });
    const added = headersAnswer('10.0.0.1:8000,10.0.0.2:8000', { dynamic_metadata: toStruct({ 'envoy.lb': { other: 'x' } }) });
    expect(fromStruct(decodeResponse(answer(added).msg).dynamic_metadata)).toEqual({ 'envoy.lb': { other: 'x', [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } });
  });

  it('a response_headers answer keeps its list (only the request is routed)', () => {
    const msg = encodeResponse({ response_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '10.0.0.1:1,10.0.0.2:2')] } } } });
    expect(answer(msg).msg).toBe(msg);
  });

  it('trailers answers and added trailers are held to the allowlist', () => {
    const t = answer(encodeResponse({ response_trailers: { header_mutation: { set_headers: [headerOption('grpc-status', '0'), headerOption('content-length', '1')] } } }));
    expect(decodeResponse(t.msg).response_trailers!.header_mutation!.set_headers.map((o) => o.header!.key)).toEqual(['content-length']);
    const added = answer(encodeResponse({ response_headers: { response: { trailers: { headers: [{ key: 'x-ok', raw_value: Buffer.from('1') }, { key: 'x-no', raw_value: Buffer.from('1') }] } } } }));
    expect(decodeResponse(added.msg).response_headers!.response!.trailers!.headers.map((h) => h.key)).toEqual(['x-ok']);
    expect(added.dropped).toEqual([{ reason: 'header_not_allowed', detail: 'add trailer "x-no"' }]);
  });
});

describe('readEppAnswer: immediate responses', () => {
  it('reads the status and an allowed retry-after; drops headers outside the allowlist', () => {
    const a = answer(immediateResponse({ status: 429, headers: { 'Retry-After': '7', location: 'https://evil.example/' } }));
    expect(a).toMatchObject({ case: 'immediate_response', status: 429, retryAfter: '7' });
    expect(decodeResponse(a.msg).immediate_response!.headers!.set_headers.map((o) => o.header!.key)).toEqual(['Retry-After']);
    const strict = readEppAnswer(immediateResponse({ status: 503, headers: { 'retry-after': '1' } }), { ...rules, headers: new Set() }, 'primary');
    expect(strict).toMatchObject({ t: 'answer', status: 503, retryAfter: undefined });
  });

  it('retry-after in value when raw_value is empty; an HttpStatus without a code reads 0; none reads undefined', () => {
    const msg = encodeResponse({ immediate_response: { status: {}, headers: { set_headers: [{ header: { key: 'retry-after', value: '9' } }] } } });
    expect(answer(msg)).toMatchObject({ status: 0, retryAfter: '9' });
    expect(answer(encodeResponse({ immediate_response: { body: Buffer.from('x') } }))).toMatchObject({ status: undefined, retryAfter: undefined });
  });
});

describe('readEppAnswer: answers that answer nothing, and malformed ones', () => {
  it('override_message_timeout alone answers nothing but is relayed; empty, metadata-only, mode_override-only are spurious', () => {
    const override = encodeResponse({ override_message_timeout: { seconds: 5 } });
    expect(answer(override)).toMatchObject({ case: 'override_message_timeout', msg: override });
    expect(read(Buffer.alloc(0))).toEqual({ t: 'spurious' });
    expect(read(encodeResponse({ dynamic_metadata: toStruct({ 'envoy.lb': { k: 'v' } }) }))).toEqual({ t: 'spurious' });
    expect(read(encodeResponse({ mode_override: { request_body_mode: 1 } }))).toEqual({ t: 'spurious' });
  });

  it('precedence: malformed over spurious over refused', () => {
    const deniedMetadata = encodeResponse({ dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '1.1.1.1:80' } }) });
    expect(read(deniedMetadata)).toEqual({ t: 'spurious' });
    expect(read(concat(fld(11), Buffer.from([0x0a, 0x05])))).toMatchObject({ t: 'malformed' });
  });

  it.each([
    ['a truncated length', concat(streamedBody('response_body', Buffer.from('abc'), true), Buffer.from([0x22, 0x09, 0x0a]))],
    ['a truncated varint', Buffer.from([0x22, 0x80])],
    ['field number 0', Buffer.from([0x02, 0x00])],
    ['field number 0 inside the body answer', fld(4, fld(1, Buffer.from([0x00, 0x01])))],
    ['an unterminated group', Buffer.from([0x0b, 0x10, 0x01])],
    ['a group bomb', Buffer.alloc(20_000, 0x0b)],
    ['an invalid wire type', Buffer.from([0x0f])],
    ['a nested length beyond its parent', fld(4, Buffer.from([0x0a, 0x10, 0x00]))],
  ])('%s is malformed (and does not throw)', (_what, msg) => {
    expect(read(msg).t).toBe('malformed');
  });

  it('groups and deep nesting where they are allowed are skipped', () => {
    const group = Buffer.from([0x9b, 0x01, 0x08, 0x01, 0x9c, 0x01]); // field 19 group holding a varint
    let deep: Buffer = Buffer.from('x');
    for (let i = 0; i < 200; i++) deep = fld(1, deep);
    const msg = concat(group, fld(999, deep), streamedBody('response_body', Buffer.from('ab'), false));
    expect(answer(msg)).toMatchObject({ case: 'response_body', streamed: true, echoedBytes: 2 });
  });
});

describe('readEppAnswer: oneofs as Envoy parses them (another member clears the one before)', () => {
  const str = (no: number, s: string): Buffer => lenField(no, Buffer.from(s));
  // Struct entry: key (1), value (2); Value: string_value (3), struct_value (5), list_value (6).
  const entry = (key: string, ...value: Buffer[]): Buffer => fld(1, str(1, key), ...value.map((v) => fld(2, v)));
  const lbMetadata = (...e: Buffer[]): Buffer => fld(8, entry('envoy.lb', fld(5, ...e)));
  const setDest = (dest: string): Buffer => encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, dest)] } } } });

  it('an envoy.lb destination Value whose string is cleared by a later list or struct holds no allowed string: refused', () => {
    const list = fld(6, fld(1, str(3, '1.2.3.4:80')));
    const listAfter = concat(fld(1), lbMetadata(entry(DEST, str(3, '10.0.0.1:8000'), list)));
    expect(read(listAfter)).toMatchObject({ t: 'refused', refusal: { reason: 'destination_invalid' } });
    const structAfter = concat(fld(1), lbMetadata(entry(DEST, str(3, '10.0.0.1:8000'), fld(5, entry('x', str(3, '1.2.3.4:80'))))));
    expect(read(structAfter)).toMatchObject({ t: 'refused', refusal: { reason: 'destination_invalid' } });
    // The other way round, the string is what Envoy holds.
    expect(answer(concat(fld(1), lbMetadata(entry(DEST, list, str(3, '10.0.0.1:8000')))))).toMatchObject({ case: 'request_headers', dropped: [] });
  });

  it('primary: an envoy.lb Struct cleared by another kind and set again is the later Struct only (the list is added to it)', () => {
    const metadata = fld(8, entry('envoy.lb', fld(5, entry(DEST, str(3, '10.0.0.9:1'))), str(3, 'not a struct'), fld(5, entry('k', str(3, 'v')))));
    const a = answer(concat(setDest('10.0.0.1:8000,10.0.0.2:8000'), metadata));
    expect(fromStruct(decodeResponse(canonicalResponse(a.msg)).dynamic_metadata)).toEqual({ 'envoy.lb': { k: 'v', [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } });
  });

  it('a body mutation cleared by body or clear_body is not a streamed echo; a streamed_response after it starts afresh', () => {
    const bodyMutation = (...f: Buffer[]): Buffer => fld(4, fld(1, fld(3, ...f)));
    const streamed = fld(3, str(1, 'abcdef'), varint(2, 1));
    expect(answer(concat(bodyMutation(streamed), bodyMutation(varint(2, 1))))).toMatchObject({ case: 'response_body', streamed: false, endOfStream: false, echoedBytes: 0 });
    expect(answer(bodyMutation(streamed, str(1, 'x'), fld(3, str(1, 'ab'))))).toMatchObject({ streamed: true, endOfStream: false, echoedBytes: 2 });
  });

  it('a member another one replaces is not judged: its refusal, drops and destination no longer count; metadata still does', () => {
    const echo = streamedBody('request_body', Buffer.from('x'), false);
    const a = answer(concat(setDest('1.2.3.4:80'), echo, setDest('10.0.0.1:8000')));
    expect(a).toMatchObject({ case: 'request_headers', destination: '10.0.0.1:8000', dropped: [] });
    const dropped = encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, '10.0.0.2:8000'), headerOption('authorization', 'x')] } } } });
    expect(answer(concat(dropped, echo, fld(1)))).toMatchObject({ case: 'request_headers', destination: undefined, dropped: [] });
    const deniedInMetadata = encodeResponse({ dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '1.2.3.4:80' }, 'evil.ns': {} }) });
    expect(read(concat(setDest('10.0.0.1:8000'), deniedInMetadata, echo, fld(1)))).toMatchObject({ t: 'refused', refusal: { reason: 'destination_denied' } });
    expect(answer(concat(encodeResponse({ dynamic_metadata: toStruct({ 'evil.ns': {} }) }), dropped, echo, fld(1))).dropped).toEqual([
      { reason: 'metadata_namespace', detail: 'dynamic_metadata namespace "evil.ns"' },
    ]);
  });

  it('refused twice over, the refusal reported does not depend on the wire order: header mutation, then added trailers, then metadata', () => {
    const metadata = encodeResponse({ dynamic_metadata: toStruct({ 'envoy.lb': { [DEST]: '' } }) });
    // request_headers.response (CommonResponse): trailers (4) with a denied destination, then header_mutation (2) with an empty one.
    const trailers = fld(1, fld(1, fld(4, fld(1, str(1, DEST), str(3, '1.2.3.4:80')))));
    const mutation = fld(1, fld(1, fld(2, fld(1, fld(1, str(1, DEST), str(3, ' '))))));
    const expected = { t: 'refused', refusal: { reason: 'destination_invalid', detail: expect.stringContaining('header') } };
    expect(read(concat(metadata, trailers, mutation))).toMatchObject(expected);
    expect(read(concat(mutation, trailers, metadata))).toMatchObject(expected);
    expect(read(concat(metadata, trailers))).toMatchObject({ t: 'refused', refusal: { reason: 'destination_denied' } });
  });
});

describe('readEppAnswer: mode_override', () => {
  it('an override to FULL_DUPLEX_STREAMED or GRPC bodies is dropped (counted), the rest of the answer relayed', () => {
    const modes: Init<ProcessingResponse>['mode_override'][] = [{ request_body_mode: 4 }, { response_body_mode: 4 }, { response_body_mode: 5 }, { request_header_mode: 2, request_body_mode: 4 }];
    for (const mode of modes) {
      const msg = encodeResponse({ request_headers: { response: { clear_route_cache: true } }, mode_override: mode });
      const a = answer(msg);
      expect(a.case).toBe('request_headers');
      expect(decodeResponse(a.msg).mode_override).toBeFalsy();
      expect(decodeResponse(a.msg).request_headers?.response?.clear_route_cache).toBe(true);
      expect(a.dropped.map((d) => d.reason)).toEqual(['mode_override']);
    }
  });

  it('in any answer, a body echo included (no other rule would judge it)', () => {
    const msg = concat(streamedBody('request_body', Buffer.from('ab'), true), fld(9, varint(4, 4)));
    const a = answer(msg);
    expect(a.streamed).toBe(true);
    expect(a.msg.equals(streamedBody('request_body', Buffer.from('ab'), true))).toBe(true);
    expect(a.dropped.map((d) => d.reason)).toEqual(['mode_override']);
  });

  it('only the occurrence that names full duplex is dropped; overrides to other modes are relayed byte for byte', () => {
    const kept = encodeResponse({ request_headers: {}, mode_override: { request_body_mode: 2, response_header_mode: 2, response_trailer_mode: 1 } });
    expect(answer(kept)).toMatchObject({ msg: kept, dropped: [] });
    const split = concat(encodeResponse({ response_headers: {} }), fld(9, varint(3, 4)), fld(9, varint(2, 2)));
    const a = answer(split);
    expect(a.msg.equals(concat(encodeResponse({ response_headers: {} }), fld(9, varint(2, 2))))).toBe(true);
    expect(decodeResponse(a.msg).mode_override).toEqual(expect.objectContaining({ response_header_mode: 2 }));
  });
});
