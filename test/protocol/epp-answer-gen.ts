// Generated EPP answers for the differential fuzzes of readEppAnswer: every member,
// header mutations with allowed and other keys, destinations in and out of the rules,
// dynamic_metadata in envoy.lb and other namespaces, unknown fields around them; and
// what the relay reads of an answer, to compare two readings.
import type { AnswerRules } from '../../src/protocol/answer-guard.js';
import type { EppAnswer } from '../../src/protocol/epp-answer.js';
import { encodeResponse, type HeaderValueOption, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { toStruct, type JsonObject } from '../../src/protocol/struct.js';
import { lenField } from '../../src/protocol/wire-walk.js';
import type { Rng } from '../helpers/fuzz.js';

export const DEST = 'x-gateway-destination-endpoint';
export const rules: AnswerRules = {
  headers: new Set([DEST, 'retry-after', 'x-ok', 'content-length']),
  destinationRefusal: (e) => (/^10\.\d+\.\d+\.\d+:\d+$/.test(e) ? undefined : { reason: 'destination_denied', detail: `${e} denied` }),
};
export const KEYS = [DEST, DEST, 'retry-after', 'Retry-After', 'x-ok', 'x-no', 'content-length', 'authorization'];
export const ENDPOINTS = ['10.0.0.1:8000', '10.0.0.2:9000', '1.2.3.4:80', '', ' 10.0.0.3:1 ', 'host:80'];

export function text(r: Rng): string {
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

export function answerOf(r: Rng): Init<ProcessingResponse> {
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
export function generate(r: Rng): Buffer {
  const parts = [encodeResponse(answerOf(r))];
  if (r.chance(0.3)) parts.unshift(lenField(100 + r.int(900), r.bytes(r.int(6))));
  if (r.chance(0.3)) parts.push(Buffer.from([0xa8, 0x1f, r.int(128)])); // field 501, varint
  return Buffer.concat(parts);
}

/** What the relay reads of an answer (not its bytes); dropped findings as a multiset, a refusal by its reason. */
export function summary(a: EppAnswer): unknown {
  if (a.t === 'malformed' || a.t === 'spurious') return { t: a.t };
  if (a.t === 'refused') return { t: a.t, reason: a.refusal.reason };
  const { msg: _msg, dropped, ...rest } = a;
  return { ...rest, dropped: dropped.map((f) => `${f.reason}: ${f.detail}`).sort() };
}
