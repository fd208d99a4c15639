// Differential fuzz of readEppAnswer: on generated EPP answers it agrees with a full
// protobufjs decode (member, status, end_of_stream, body length) and with the readers
// it replaces (epp-answer-oracle.ts: what is relayed, dropped, refused); on corrupted
// and pathological input it never throws and returns in bounded time.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { decodeResponse } from '../../src/protocol/codec.js';
import { readEppAnswer, type EppAnswer } from '../../src/protocol/epp-answer.js';
import { fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';
import { generate, rules, summary } from './epp-answer-gen.js';
import { oldReadEppAnswer } from './epp-answer-oracle.js';
import { canonicalResponse, meaning } from './wire-canonical.js';

const MEMBERS = ['request_headers', 'response_headers', 'request_body', 'response_body', 'request_trailers', 'response_trailers', 'immediate_response'] as const;

/** The protobufjs oracle: what a full decode says of the fields the reader reads. */
function expectAgreesWithDecode(msg: Buffer, a: EppAnswer): void {
  const d = decodeResponse(msg);
  const member = MEMBERS.find((k) => d[k] != null);
  if (a.t !== 'answer') {
    if (a.t === 'spurious') expect(member).toBeUndefined();
    return;
  }
  // Envoy reads a message with override_message_timeout as that only.
  expect(a.case).toBe(d.override_message_timeout != null ? 'override_message_timeout' : member);
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
  if (agrees(a, old)) return;
  // The old readers do not clear a oneof member that another one replaces (the answer's
  // member, a body mutation, a metadata Value's kind); its canonical form has none to clear.
  let canonical: Buffer;
  try {
    canonical = canonicalResponse(msg);
  } catch {
    return; // malformed as a whole, in a part neither reader reads (a replaced member): Envoy's parser rejects it
  }
  expect(canonical.equals(msg), `the readers disagree on an answer without a oneof to clear: ${msg.toString('hex')} (${mode})`).toBe(false);
  const oldOnCanonical = oldReadEppAnswer(canonical, rules, mode);
  expect(summary(a)).toEqual(summary(oldOnCanonical));
  if (a.t === 'answer' && oldOnCanonical.t === 'answer') expect(meaning(a.msg)).toEqual(meaning(oldOnCanonical.msg));
}

/** Same outcome; the relayed bytes equal, or (a destination list added to envoy.lb) decode equal. */
function agrees(a: EppAnswer, old: EppAnswer): boolean {
  // Refused twice over, the old readers report the first refusal on the wire; the reader
  // reports the member's before dynamic_metadata's, whatever their order.
  if (old.t === 'refused' && a.t === 'refused' && old.refusal.detail.startsWith('dynamic_metadata')) return !a.refusal.detail.startsWith('dynamic_metadata') || isDeepStrictEqual(a, old);
  if (old.t !== 'answer' || a.t !== 'answer') return isDeepStrictEqual(a, old);
  const { msg: oldMsg, ...oldRest } = old;
  const { msg: newMsg, ...newRest } = a;
  // Envoy ignores all but the override: the old readers rewrote a destination list in it, the reader only judges it.
  if (a.case === 'override_message_timeout' && isDeepStrictEqual(newRest, oldRest)) return true;
  // Decoded as Envoy merges repeated fields: the destination option the reader appends merges into the answer.
  return isDeepStrictEqual(newRest, oldRest) && (newMsg.equals(oldMsg) || isDeepStrictEqual(meaningOrThrown(newMsg), meaningOrThrown(oldMsg)));
}

function meaningOrThrown(msg: Buffer): unknown {
  try {
    return meaning(msg);
  } catch (err) {
    return String(err);
  }
}

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
