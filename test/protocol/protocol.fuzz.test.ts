/**
 * Seeded fuzzing of the ext_proc wire code that reads or rewrites messages
 * from Envoy and from EPPs before (or instead of) a full decode: the readers
 * (envoy-message.ts, epp-answer.ts with its rules), the response peek (codec.ts)
 * and the wire walks (wire-walk.ts). On valid messages, their corruptions and
 * pathological shapes (group and length bombs, deep nesting) they return or
 * throw an Error the stream code turns into a refusal, never a TypeError or a
 * stack overflow, and never take long.
 */
import { describe, expect, it } from 'vitest';
import { memberRules } from '../../src/config/answer-rules.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../src/protocol/codec.js';
import { readEnvoyMessage } from '../../src/protocol/envoy-message.js';
import { readEppAnswer } from '../../src/protocol/epp-answer.js';
import { continueHeaders, destinationHeadersResponse, immediateResponse, streamedBody } from '../../src/protocol/responses.js';
import { dropField, lenField } from '../../src/protocol/wire-walk.js';
import { expectOnlyTypedErrors, fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';

const raw = (s: string) => Buffer.from(s, 'utf8');

const REQUESTS: Buffer[] = [
  encodeRequest({
    request_headers: { headers: { headers: [{ key: ':path', raw_value: raw('/v1/completions') }, { key: ':authority', raw_value: raw('a.example') }] }, end_of_stream: false },
  }),
  encodeRequest({ request_body: { body: raw('{"model":"llama","prompt":"hi"}'), end_of_stream: true } }),
  encodeRequest({ request_trailers: { trailers: { headers: [{ key: 'x-t', raw_value: raw('1') }] } } }),
  encodeRequest({ response_headers: { headers: { headers: [{ key: ':status', raw_value: raw('200') }] }, end_of_stream: false } }),
  encodeRequest({ response_body: { body: raw('data: {}\n\n'), end_of_stream: false } }),
];

const RESPONSES: Buffer[] = [
  continueHeaders('request_headers'),
  streamedBody('request_body', raw('chunk'), true),
  immediateResponse({ status: 503, body: { error: 'x' }, details: 'd', headers: { 'x-a': 'b' } }),
  destinationHeadersResponse('request_headers', '10.0.0.1:8000'),
  encodeResponse({
    request_headers: {
      response: { header_mutation: { set_headers: [{ header: { key: 'x-gateway-destination-endpoint', raw_value: raw('10.0.0.1:8000, 10.0.0.2:8000') } }] } },
    },
  }),
];

function corrupt(r: Rng, msg: Buffer): Buffer {
  let b = Buffer.from(msg);
  for (let n = 1 + r.int(3); n > 0; n--) {
    const at = r.int(b.length + 1);
    switch (r.int(5)) {
      case 0:
        if (b.length > 0) b[Math.min(at, b.length - 1)] = r.int(256);
        break;
      case 1:
        b = b.subarray(0, at);
        break;
      case 2:
        b = Buffer.concat([b.subarray(0, at), r.bytes(1 + r.int(8)), b.subarray(at)]);
        break;
      case 3: // splice in a valid field from another message
        b = Buffer.concat([b.subarray(0, at), r.pick([...REQUESTS, ...RESPONSES]), b.subarray(at)]);
        break;
      default:
        b = Buffer.concat([b, b.subarray(r.int(b.length + 1))]);
    }
  }
  return b;
}

/** Shapes that break naive readers: nested groups, huge lengths, deep LEN nesting, long varints. */
function pathological(r: Rng): Buffer {
  const n = 1000 + r.int(50_000);
  return r.pick([
    () => Buffer.alloc(n, 0x0b), // field 1, start group, again and again
    () => Buffer.concat([Buffer.alloc(n, 0x0b), Buffer.alloc(n, 0x0c)]),
    () => Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]), // length 4 GiB - 1
    () => Buffer.concat([Buffer.from([0x08]), Buffer.alloc(n, 0xff)]), // endless varint
    () => {
      let m: Buffer = raw('x');
      for (let d = 0; d < Math.min(n, 2000); d++) m = lenField(1 + (d % 3), m); // deep nesting
      return m;
    },
    () => r.bytes(n),
  ])();
}

const PATHS: (readonly number[])[] = [[2], [2, 1], [2, 1, 2], [1, 1, 1, 1], [8], [7, 1]];

/** The default rules every member's EPP answers are held to. */
const GUARD_RULES = memberRules(undefined);

/** Every entry point that reads untrusted ext_proc bytes; only Errors that mean "malformed" may escape. */
function exercise(r: Rng, buf: Buffer): void {
  const typed = [RangeError, Error];
  expectOnlyTypedErrors(() => readEnvoyMessage(buf), typed);
  expectOnlyTypedErrors(() => decodeRequest(buf), typed);
  expectOnlyTypedErrors(() => decodeResponse(buf), typed);
  for (const mode of ['primary', 'list'] as const) {
    const a = readEppAnswer(buf, GUARD_RULES, mode); // never throws
    if (a.t === 'malformed') expectOnlyTypedErrors(() => { throw a.cause; }, typed);
  }
  expectOnlyTypedErrors(() => dropField(buf, 1 + r.int(12)), typed);
}

describe('fuzz: ext_proc wire peeks and rewrites', () => {
  it('a run of start-group tags is a malformed message, not a stack overflow (found by this fuzzing)', () => {
    const bomb = Buffer.alloc(20_000, 0x0b);
    expect(() => readEnvoyMessage(bomb)).toThrow('protobuf: groups nested too deeply');
    const a = readEppAnswer(bomb, GUARD_RULES, 'primary');
    expect(a.t === 'malformed' && (a.cause as Error).message).toBe('protobuf: groups nested too deeply');
  });

  it('valid messages decode, peek and rewrite consistently', () => {
    expect(REQUESTS.map((m) => readEnvoyMessage(m).case)).toEqual(['request_headers', 'request_body', 'request_trailers', 'response_headers', 'response_body']);
    expect(RESPONSES.map((m) => { const a = readEppAnswer(m, GUARD_RULES, 'list'); return a.t === 'answer' ? a.case : a.t; })).toEqual(['request_headers', 'request_body', 'immediate_response', 'request_headers', 'request_headers']);
    const cut = readEppAnswer(RESPONSES[4]!, GUARD_RULES, 'primary');
    expect(cut.t === 'answer' && decodeResponse(cut.msg).request_headers!.response!.header_mutation!.set_headers[0]!.header!.raw_value.toString()).toBe('10.0.0.1:8000');
  });

  it('corrupted messages: only malformed-message errors, bounded time', () => {
    const seed = fuzzSeed(11_7001);
    fuzz('ext_proc corrupted', seed, { iterations: 1200, maxInputMs: 300 }, (r) => exercise(r, corrupt(r, r.pick([...REQUESTS, ...RESPONSES]))));
  });

  it('pathological shapes: only malformed-message errors, no stack overflow, bounded time', () => {
    const seed = fuzzSeed(11_7002);
    // maxInputMs covers all twelve entry points on one input.
    fuzz('ext_proc pathological', seed, { iterations: 120, maxInputMs: 300 }, (r) => exercise(r, pathological(r)));
  });
});
