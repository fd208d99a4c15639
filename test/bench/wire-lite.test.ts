import { describe, expect, it } from 'vitest';
import { peekAnswer, streamedResponse } from '../../bench/lib/wire-lite.js';
import { decodeResponse, encodeResponse, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';

const MEMBERS = ['request_headers', 'response_headers', 'request_body', 'response_body', 'request_trailers', 'response_trailers', 'immediate_response'] as const;

/** What protobufjs reads of the same bytes, in peekAnswer's shape. */
function reference(buf: Buffer): ReturnType<typeof peekAnswer> {
  const r = decodeResponse(buf);
  const member = r.response === undefined ? 0 : MEMBERS.indexOf(r.response as (typeof MEMBERS)[number]) + 1;
  const body = r.response === 'request_body' ? r.request_body : r.response === 'response_body' ? r.response_body : undefined;
  const streamed = body?.response?.body_mutation?.streamed_response ?? undefined;
  return {
    member,
    streamed: streamed !== undefined && streamed !== null,
    endOfStream: streamed?.end_of_stream ?? false,
    bodyBytes: streamed?.body?.length ?? 0,
  };
}

describe('peekAnswer (the bench Envoy stand-in reads each answer once)', () => {
  const answers: Init<ProcessingResponse>[] = [
    { request_headers: { response: { clear_route_cache: true } } },
    { response_headers: {} },
    { immediate_response: { status: { code: 503 } } },
    { dynamic_metadata: { fields: {} } },
    { request_body: { response: { body_mutation: { body: Buffer.from('x') } } } },
    { response_body: { response: { body_mutation: { streamed_response: { body: Buffer.alloc(300, 7), end_of_stream: true } } } } },
    { request_body: { response: { header_mutation: { remove_headers: ['x'] }, body_mutation: { streamed_response: { body: Buffer.alloc(5) } } } } },
  ];

  it.each(answers.map((a, i) => [i, a] as const))('answer %i reads as protobufjs reads it', (_i, a) => {
    const buf = encodeResponse(a);
    expect(peekAnswer(buf)).toEqual(reference(buf));
  });

  it('reads what streamedResponse() writes, and merges repeated occurrences of a member', () => {
    for (const eos of [false, true]) {
      expect(peekAnswer(streamedResponse('response', Buffer.alloc(220, 1), eos))).toEqual({ member: 4, streamed: true, endOfStream: eos, bodyBytes: 220 });
    }
    // The body member twice merges as the protobuf spec (and Envoy's parser) has it: the later body
    // replaces the earlier, an end_of_stream set only in the first stays set. (protobufjs replaces
    // the whole message instead, so it is no reference here.)
    const twice = Buffer.concat([streamedResponse('request', Buffer.alloc(10), true), streamedResponse('request', Buffer.alloc(3), false)]);
    expect(peekAnswer(twice)).toEqual({ member: 3, streamed: true, bodyBytes: 3, endOfStream: true });
    // Another member after it replaces it.
    const replaced = Buffer.concat([twice, encodeResponse({ request_headers: {} })]);
    expect(peekAnswer(replaced)).toEqual(reference(replaced));
  });

  it('a body or clear_body after a streamed_response replaces it (BodyMutation is a oneof)', () => {
    const streamedThen = (later: Init<ProcessingResponse>): Buffer => Buffer.concat([streamedResponse('response', Buffer.alloc(9), true), encodeResponse(later)]);
    for (const later of [
      { response_body: { response: { body_mutation: { body: Buffer.from('x') } } } },
      { response_body: { response: { body_mutation: { clear_body: true } } } },
    ]) {
      expect(peekAnswer(streamedThen(later))).toEqual({ member: 4, streamed: false, endOfStream: false, bodyBytes: 0 });
    }
  });

  it('refuses a length that runs past its message', () => {
    const buf = streamedResponse('response', Buffer.alloc(50), false);
    expect(() => peekAnswer(buf.subarray(0, buf.length - 10))).toThrow(RangeError);
  });
});
