// Differential fuzz of readEppAnswer: on generated EPP answers it agrees with a full
// protobufjs decode (member, status, end_of_stream, body length) and with the readers
// it replaces (epp-answer-oracle.ts: what is relayed, dropped, refused); on corrupted
// and pathological input it never throws and returns in bounded time.
import { describe, expect, it } from 'vitest';
import type { AnswerRules } from '../../src/protocol/answer-guard.js';
import { decodeResponse, encodeResponse, type HeaderValueOption, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { readEppAnswer, type EppAnswer } from '../../src/protocol/epp-answer.js';
import { toStruct, type JsonObject } from '../../src/protocol/struct.js';
import { lenField } from '../../src/protocol/wire-walk.js';
import { fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';
import { oldReadEppAnswer } from './epp-answer-oracle.js';

const DEST = 'x-gateway-destination-endpoint';
const rules: AnswerRules = {
  headers: new Set([DEST, 'retry-after', 'x-ok', 'content-length']),
  destinationRefusal: (e) => (/^10\.\d+\.\d+\.\d+:\d+$/.test(e) ? undefined : { reason: 'destination_denied', detail: `${e} denied` }),
};
const KEYS = [DEST, DEST, 'retry-after', 'Retry-After', 'x-ok', 'x-no', 'content-length', 'authorization'];
const ENDPOINTS = ['10.0.0.1:8000', '10.0.0.2:9000', '1.2.3.4:80', '', ' 10.0.0.3:1 ', 'host:80'];

function text(r: Rng): string {
  if (r.chance(0.3)) return r.text(r.int(6), 'abc19 ');
  return Array.from({ length: 1 + r.int(3) }, () => r.pick(ENDPOINTS)).join(r.pick([',', ', ']));
}

function option(r: Rng): Init<HeaderValueOption> {
  const value = text(r);
  const inRaw = r.chance(0.7);
  return { header: { key: r.pick(KEYS), ...(inRaw ? { raw_value: Buffer.from(value) } : { value }) }, ...(r.chance(0.3) ? { append: { value: r.chance(0.5) } } : {}) };
}

const mutation = (r: Rng) => ({
  set_headers: Array.from({ length: r.int(4) }, () => option(r)),
  remove_headers: Array.from({ length: r.int(3) }, () => r.pick(KEYS)),
});

function metadata(r: Rng): JsonObject {
  const out: JsonObject = {};
  if (r.chance(0.7)) out['envoy.lb'] = r.chance(0.6) ? { [DEST]: text(r), k: 'v' } : { k: 'v' };
  if (r.chance(0.4)) out['other.ns'] = { a: 1 };
  return out;
}

function answerOf(r: Rng): Init<ProcessingResponse> {
  const member = r.int(9);
  const common = () => ({
    ...(r.chance(0.6) ? { header_mutation: mutation(r) } : {}),
    ...(r.chance(0.2) ? { trailers: { headers: Array.from({ length: r.int(3) }, () => ({ key: r.pick(KEYS), raw_value: Buffer.from('1') })) } } : {}),
    ...(r.chance(0.3) ? { clear_route_cache: true } : {}),
  });
  const body = () => ({
    response: {
      ...(r.chance(0.3) ? common() : {}),
      body_mutation: r.chance(0.8) ? { streamed_response: { body: r.bytes(r.int(80)), end_of_stream: r.chance(0.5) } } : { body: r.bytes(r.int(8)) },
    },
  });
  const m: Init<ProcessingResponse> = {};
  switch (member) {
    case 0: m.request_headers = { response: common() }; break;
    case 1: m.response_headers = { response: common() }; break;
    case 2: m.request_body = body(); break;
    case 3: m.response_body = body(); break;
    case 4: m.request_trailers = { header_mutation: mutation(r) }; break;
    case 5: m.response_trailers = { header_mutation: mutation(r) }; break;
    case 6:
      m.immediate_response = {
        ...(r.chance(0.8) ? { status: { code: r.pick([0, 200, 429, 503]) } } : {}),
        ...(r.chance(0.7) ? { headers: mutation(r) } : {}),
        body: r.bytes(r.int(10)),
      };
      break;
    default: // no member
  }
  if (r.chance(0.4)) m.dynamic_metadata = toStruct(metadata(r));
  if (r.chance(0.15)) m.override_message_timeout = { seconds: 1 };
  return m;
}

/** An encoded answer, sometimes with unknown fields around it. */
function generate(r: Rng): Buffer {
  const parts = [encodeResponse(answerOf(r))];
  if (r.chance(0.3)) parts.unshift(lenField(100 + r.int(900), r.bytes(r.int(6))));
  if (r.chance(0.3)) parts.push(Buffer.from([0xa8, 0x1f, r.int(128)])); // field 501, varint
  return Buffer.concat(parts);
}

const MEMBERS = ['request_headers', 'response_headers', 'request_body', 'response_body', 'request_trailers', 'response_trailers', 'immediate_response'] as const;

/** The protobufjs oracle: what a full decode says of the fields the reader reads. */
function expectAgreesWithDecode(msg: Buffer, a: EppAnswer): void {
  const d = decodeResponse(msg);
  const member = MEMBERS.find((k) => d[k] != null);
  if (a.t !== 'answer') {
    if (a.t === 'spurious') expect(member).toBeUndefined();
    return;
  }
  expect(a.case).toBe(member ?? 'override_message_timeout');
  const streamed = (a.case === 'request_body' || a.case === 'response_body') && d[a.case]?.response?.body_mutation?.streamed_response;
  expect(a.streamed).toBe(!!streamed);
  expect(a.endOfStream).toBe(streamed ? streamed.end_of_stream : false);
  expect(a.echoedBytes).toBe(streamed ? streamed.body.length : 0);
  if (a.case === 'immediate_response') expect(a.status).toBe(decodeResponse(a.msg).immediate_response!.status?.code);
}

/** Same outcome as the readers it replaces; the relayed bytes equal, or (a destination list added to envoy.lb) decode equal. */
function expectAgreesWithOld(msg: Buffer, mode: 'primary' | 'list', a: EppAnswer): void {
  const old = oldReadEppAnswer(msg, rules, mode);
  if (old.t === 'malformed' || a.t === 'malformed') {
    // Where they differ, the message is malformed as a whole, in a part one of them does not read
    // (the old readers skipped a member a later one replaces, and decoded all of an immediate response).
    if (a.t !== old.t) expect(decodeThrows(msg)).toBe(true);
    return;
  }
  if (old.t !== 'answer' || a.t !== 'answer') {
    expect(a).toEqual(old);
    return;
  }
  const { msg: oldMsg, ...oldRest } = old;
  const { msg: newMsg, ...newRest } = a;
  expect(newRest).toEqual(oldRest);
  if (!newMsg.equals(oldMsg)) expect(decodedJson(newMsg)).toEqual(decodedJson(oldMsg));
}

const decodedJson = (msg: Buffer): unknown => (decodeResponse(msg) as unknown as { toJSON(): unknown }).toJSON();

function decodeThrows(msg: Buffer): boolean {
  try {
    decodeResponse(msg);
    return false;
  } catch {
    return true;
  }
}

function corrupt(r: Rng, msg: Buffer): Buffer {
  let b = Buffer.from(msg);
  for (let n = 1 + r.int(3); n > 0; n--) {
    const at = r.int(b.length + 1);
    const kind = r.int(4);
    if (kind === 0 && b.length > 0) b[Math.min(at, b.length - 1)] = r.int(256);
    else if (kind === 1) b = b.subarray(0, at);
    else if (kind === 2) b = Buffer.concat([b.subarray(0, at), r.bytes(1 + r.int(6)), b.subarray(at)]);
    else b = Buffer.concat([b.subarray(0, at), generate(r), b.subarray(at)]);
  }
  return b;
}

describe('fuzz: readEppAnswer', () => {
  it('generated answers: agrees with a full decode and with the readers it replaces', () => {
    fuzz('epp answer differential', fuzzSeed(13_0001), { iterations: 1500, maxInputMs: 1000 }, (r) => {
      const msg = generate(r);
      const mode = r.chance(0.7) ? 'primary' : 'list';
      const a = readEppAnswer(msg, rules, mode);
      expect(a.t).not.toBe('malformed');
      expectAgreesWithDecode(msg, a);
      expectAgreesWithOld(msg, mode, a);
    });
  });

  it('corrupted answers: never throws, agrees with the readers it replaces, bounded time', () => {
    fuzz('epp answer corrupted', fuzzSeed(13_0002), { iterations: 1500, maxInputMs: 1000 }, (r) => {
      const msg = corrupt(r, generate(r));
      const mode = r.chance(0.5) ? 'primary' : 'list';
      expectAgreesWithOld(msg, mode, readEppAnswer(msg, rules, mode));
    });
  });
});
