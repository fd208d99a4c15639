// Differential fuzz of readEppAnswer on hostile encodings: a generated answer with its
// singular messages split over several occurrences, decoy values and map entries before
// the real ones, and other oneof members interleaved (wire-split.ts). Envoy merges what
// protobufjs replaces, so the oracle is the canonical form (wire-canonical.ts): the
// split answer must be read as its canonical form is, what is relayed must mean the
// same to Envoy, and nothing the rules forbid may be in what Envoy reads of it.
import { describe, expect, it } from 'vitest';
import { decodeResponse, encodeResponse, headerText, messageType, type HeaderMutation, type HeaderValue, type ProcessingResponse } from '../../src/protocol/codec.js';
import { readEppAnswer } from '../../src/protocol/epp-answer.js';
import type { Value } from '../../src/protocol/messages.js';
import { toStruct } from '../../src/protocol/struct.js';
import { fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';
import { DEST, ENDPOINTS, generate, KEYS, rules, summary, text } from './epp-answer-gen.js';
import { canonicalResponse, meaning, responseSchema, type FieldInfo, type Schema } from './wire-canonical.js';
import { splitMessage, type SplitOptions } from './wire-split.js';

const RESPONSE = responseSchema();
const LB = 'envoy.lb';

const encode = (name: string, obj: object): Buffer => {
  const t = messageType(name);
  return Buffer.from(t.encode(t.fromObject(obj)).finish());
};

/** Decoys that matter to the rules: denied destinations, streamed bodies, other values of a Value. */
const decoys: SplitOptions = {
  decoyMessage(r: Rng, schema: Schema): Buffer | undefined {
    const dest = { header: { key: DEST, raw_value: Buffer.from(r.pick(ENDPOINTS)) } };
    switch (schema.name) {
      case 'envoy.service.ext_proc.v3.HeadersResponse':
        return encode(schema.name, { response: { header_mutation: { set_headers: [dest] } } });
      case 'envoy.service.ext_proc.v3.BodyResponse':
      case 'envoy.service.ext_proc.v3.CommonResponse': {
        const common = { body_mutation: { streamed_response: { body: r.bytes(r.int(9)), end_of_stream: r.chance(0.5) } } };
        return encode(schema.name, schema.name.endsWith('BodyResponse') ? { response: common } : common);
      }
      case 'envoy.service.ext_proc.v3.StreamedBodyResponse':
        return encode(schema.name, { body: r.bytes(r.int(9)), end_of_stream: r.chance(0.5) });
      case 'envoy.service.ext_proc.v3.TrailersResponse':
        return encode(schema.name, { header_mutation: { set_headers: [dest] } });
      case 'envoy.service.ext_proc.v3.ImmediateResponse':
        return encode(schema.name, { status: { code: r.pick([200, 503]) }, headers: { set_headers: [{ header: { key: 'retry-after', raw_value: Buffer.from('9') } }] } });
      case 'google.protobuf.Struct':
        return encode(schema.name, toStruct({ [DEST]: text(r), [LB]: { [DEST]: text(r) } }));
      case 'google.protobuf.ListValue':
        return encode(schema.name, { values: [{ stringValue: r.pick(ENDPOINTS) }] });
      case 'google.protobuf.Value':
        return encode(schema.name, r.chance(0.5) ? { stringValue: text(r) } : { structValue: toStruct({ [DEST]: text(r) }) });
      case 'envoy.config.core.v3.HeaderValue':
        return encode(schema.name, dest.header);
      default:
        return undefined;
    }
  },
  decoyText(r: Rng, f: FieldInfo): string {
    if (f.name === 'key') return r.pick(KEYS);
    return text(r);
  },
};

/** Every string a Value holds, at any depth. */
function strings(v: Value | null | undefined): string[] {
  if (!v) return [];
  if (typeof v.stringValue === 'string' && v.stringValue !== '') return [v.stringValue];
  if (v.listValue) return v.listValue.values.flatMap(strings);
  if (v.structValue) return Object.values(v.structValue.fields).flatMap(strings);
  return [];
}

function expectDestinationAllowed(value: string, where: string): void {
  for (const entry of value.split(',')) {
    expect(rules.destinationRefusal(entry.trim()), `${where}: "${value}"`).toBeUndefined();
  }
}

function expectHeadersAllowed(m: HeaderMutation | null | undefined, extra: readonly HeaderValue[] = []): void {
  const set = [...(m?.set_headers ?? []).map((o) => o.header).filter((h): h is HeaderValue => !!h), ...extra];
  for (const h of set) {
    const key = h.key.toLowerCase();
    expect(rules.headers.has(key), `set header ${key}`).toBe(true);
    if (key === DEST) {
      expectDestinationAllowed(headerText(h), 'destination header');
      if (h.value !== '') expectDestinationAllowed(h.value, 'destination header value');
    }
  }
  for (const k of m?.remove_headers ?? []) expect(rules.headers.has(k.toLowerCase()), `remove header ${k}`).toBe(true);
}

/** Nothing the rules forbid is in what Envoy reads of the relayed bytes. */
function expectNothingForbidden(msg: Buffer, input: string): void {
  try {
    expectNothingForbiddenIn(msg);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${input}\nrelayed=${msg.toString('hex')}`);
  }
}

function expectNothingForbiddenIn(msg: Buffer): void {
  const d: ProcessingResponse = decodeResponse(canonicalResponse(msg));
  for (const k of ['request_headers', 'response_headers', 'request_body', 'response_body'] as const) {
    const common = d[k]?.response;
    if (common) expectHeadersAllowed(common.header_mutation, common.trailers?.headers ?? []);
  }
  for (const k of ['request_trailers', 'response_trailers'] as const) expectHeadersAllowed(d[k]?.header_mutation);
  expectHeadersAllowed(d.immediate_response?.headers);
  const ns = d.dynamic_metadata?.fields ?? {};
  expect(Object.keys(ns).filter((n) => n !== LB)).toEqual([]);
  const lb = ns[LB];
  if (lb?.structValue) {
    const dest = lb.structValue.fields[DEST];
    if (dest) {
      expect((dest as Value & { kind?: string }).kind, 'envoy.lb destination is a string').toBe('stringValue');
      for (const s of strings(dest)) expectDestinationAllowed(s, 'envoy.lb destination');
    }
  }
}

const ALLOWED = ENDPOINTS.filter((e) => rules.destinationRefusal(e.trim()) === undefined);

/** A request headers answer setting destinations (lists, mostly allowed), with envoy.lb metadata at times: what the rules judge and rewrite most. */
function destinationAnswer(r: Rng): Buffer {
  const list = (): string => Array.from({ length: 1 + r.int(3) }, () => r.pick(r.chance(0.85) ? ALLOWED : ENDPOINTS)).join(r.pick([',', ', ']));
  const header = () => ({ key: DEST, ...(r.chance(0.8) ? { raw_value: Buffer.from(list()) } : { value: list() }) });
  return encodeResponse({
    request_headers: { response: { header_mutation: { set_headers: Array.from({ length: 1 + r.int(2) }, () => ({ header: header() })) } } },
    ...(r.chance(0.4) ? { dynamic_metadata: toStruct({ 'envoy.lb': r.chance(0.5) ? { [DEST]: list(), k: 'v' } : { k: 'v' } }) } : {}),
  });
}

describe('fuzz: readEppAnswer on split encodings', () => {
  it('reads a split answer as its canonical form; relays what means the same to Envoy and nothing the rules forbid', () => {
    const runs = { answers: 0, refused: 0, changed: 0 };
    fuzz('epp answer split', fuzzSeed(13_0003), { iterations: 5000, maxInputMs: 1000 }, (r) => {
      const original = r.chance(0.4) ? destinationAnswer(r) : generate(r);
      const split = splitMessage(r, original, RESPONSE, decoys, r.chance(0.5) ? 0.3 : 0);
      const canonical = canonicalResponse(split);
      if (!canonical.equals(canonicalResponse(original))) runs.changed++;
      const mode = r.chance(0.7) ? 'primary' : 'list';
      const a = readEppAnswer(split, rules, mode);
      const c = readEppAnswer(canonical, rules, mode);
      // A failure names the input: the split bytes, its canonical form and the mode.
      const input = `${mode} split=${split.toString('hex')} canonical=${canonical.toString('hex')}`;
      expect(a.t, input).not.toBe('malformed');
      expect(JSON.stringify(summary(a)), input).toBe(JSON.stringify(summary(c)));
      if (a.t !== 'answer' || c.t !== 'answer') {
        if (a.t === 'refused') runs.refused++;
        return;
      }
      runs.answers++;
      expect(JSON.stringify(meaning(a.msg)), input).toBe(JSON.stringify(meaning(c.msg)));
      expectNothingForbidden(a.msg, input);
    });
    // The fuzz reaches both outcomes, and interleaving changes what answers mean.
    expect(runs.answers).toBeGreaterThan(500);
    expect(runs.refused).toBeGreaterThan(200);
    expect(runs.changed).toBeGreaterThan(100);
  });
});
