/**
 * Seeded fuzzing of the ext_proc wire code that reads or rewrites messages
 * from Envoy and from EPPs before (or instead of) a full decode: the peeks
 * (codec.ts), the wire walks and rewrites (wire.ts) and the destination
 * rewrite (responses.ts), and the EPP answer guard (answer-guard.ts). On valid messages, their corruptions and
 * pathological shapes (group and length bombs, deep nesting) they return or
 * throw an Error the stream code turns into a refusal, never a TypeError or a
 * stack overflow, and never take long.
 */
import { describe, expect, it } from 'vitest';
import { memberRules } from '../../src/extproc/answer-rules.js';
import { guardAnswer } from '../../src/protocol/answer-guard.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, peekRequest, peekResponse } from '../../src/protocol/codec.js';
import { continueHeaders, destinationHeadersResponse, destinationOf, immediateResponse, rewriteDestination, streamedBody } from '../../src/protocol/responses.js';
import { dropField, lastPathLength, lenField, rewritePath, scanFields, visitPath } from '../../src/protocol/wire.js';
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
  expectOnlyTypedErrors(() => peekRequest(buf), typed);
  expectOnlyTypedErrors(() => peekResponse(buf), typed);
  expectOnlyTypedErrors(() => decodeRequest(buf), typed);
  expectOnlyTypedErrors(() => decodeResponse(buf), typed);
  expectOnlyTypedErrors(() => destinationOf(buf), typed);
  expectOnlyTypedErrors(() => rewriteDestination(buf, 'primary'), typed);
  expectOnlyTypedErrors(() => guardAnswer(buf, GUARD_RULES), typed);
  expectOnlyTypedErrors(() => scanFields(buf), typed);
  expectOnlyTypedErrors(() => dropField(buf, 1 + r.int(12)), typed);
  const path = r.pick(PATHS);
  expectOnlyTypedErrors(() => lastPathLength(buf, path), typed);
  expectOnlyTypedErrors(() => visitPath(buf, path, () => {}), typed);
  expectOnlyTypedErrors(() => rewritePath(buf, path, (p) => (r.chance(0.5) ? Buffer.concat([p, raw('!')]) : undefined)), typed);
}

describe('fuzz: ext_proc wire peeks and rewrites', () => {
  it('a run of start-group tags is a malformed message, not a stack overflow (found by this fuzzing)', () => {
    const bomb = Buffer.alloc(20_000, 0x0b);
    expect(() => lastPathLength(bomb, [2, 1])).toThrow('protobuf: groups nested too deeply');
  });

  it('valid messages decode, peek and rewrite consistently', () => {
    expect(REQUESTS.map((m) => peekRequest(m).case)).toEqual(['request_headers', 'request_body', 'request_trailers', 'response_headers', 'response_body']);
    expect(RESPONSES.map((m) => peekResponse(m).case)).toEqual(['request_headers', 'request_body', 'immediate_response', 'request_headers', 'request_headers']);
    expect(destinationOf(rewriteDestination(RESPONSES[4]!, 'primary'))).toBe('10.0.0.1:8000');
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
