// The canonicalizer the split fuzz takes as its oracle, on hand-written wire bytes:
// singular messages merged at any depth, oneof members clearing each other, repeated
// fields and map entries kept apart, scalars last-wins, and the splitter's output
// canonicalizing back to the message it split.
import { describe, expect, it } from 'vitest';
import { decodeResponse, encodeResponse, type ProcessingResponse } from '../../src/protocol/codec.js';
import { fromStruct, toStruct } from '../../src/protocol/struct.js';
import { lenField } from '../../src/protocol/wire-walk.js';
import { fuzz, fuzzSeed } from '../helpers/fuzz.js';
import { generate } from './epp-answer-gen.js';
import { canonicalResponse, responseSchema } from './wire-canonical.js';
import { splitMessage } from './wire-split.js';

const fld = (no: number, ...payload: Buffer[]): Buffer => lenField(no, Buffer.concat(payload));
const str = (no: number, s: string): Buffer => lenField(no, Buffer.from(s));
const varint = (no: number, v: number): Buffer => Buffer.from([no << 3, v]);
const cat = (...b: Buffer[]): Buffer => Buffer.concat(b);
const json = (m: ProcessingResponse): unknown => (m as unknown as { toJSON(): unknown }).toJSON();
const decoded = (msg: Buffer): unknown => json(decodeResponse(canonicalResponse(msg)));

// ProcessingResponse.request_headers(1).response(1).header_mutation(2).set_headers(1).header(1): HeaderValue key(1) raw_value(3)
const setHeaders = (...option: Buffer[]): Buffer => fld(1, fld(1, fld(2, ...option.map((o) => fld(1, o)))));

describe('canonicalResponse', () => {
  it('merges a split HeaderValue: key in one occurrence, raw_value in another (protobufjs alone keeps only the last)', () => {
    const msg = setHeaders(cat(fld(1, str(1, 'x-a')), fld(1, str(3, 'v'))));
    expect(decodeResponse(msg).request_headers!.response!.header_mutation!.set_headers[0]!.header!.key).toBe('');
    const h = decodeResponse(canonicalResponse(msg)).request_headers!.response!.header_mutation!.set_headers[0]!.header!;
    expect(h.key).toBe('x-a');
    expect(Buffer.from(h.raw_value).toString()).toBe('v');
  });

  it('merges the top-level member and CommonResponse split apart, with other fields between', () => {
    const part1 = fld(1, fld(1, fld(2, fld(1, fld(1, str(1, 'a'))))));
    const part2 = fld(1, fld(1, varint(5, 1), fld(2, fld(1, fld(1, str(1, 'b'))), str(2, 'c'))));
    const msg = cat(part1, fld(8), part2);
    expect(decoded(msg)).toEqual(decoded(encodeResponse({ request_headers: { response: { clear_route_cache: true, header_mutation: { set_headers: [{ header: { key: 'a' } }, { header: { key: 'b' } }], remove_headers: ['c'] } } }, dynamic_metadata: toStruct({}) })));
  });

  it('another oneof member clears the earlier one; the same member again starts afresh', () => {
    const headers = (key: string): Buffer => setHeaders(fld(1, str(1, key)));
    const body = fld(3, fld(1, fld(3, fld(3, str(1, 'xyz')))));
    const msg = cat(headers('a'), body, headers('b'));
    expect(decoded(msg)).toEqual(decoded(headers('b')));
    expect(decoded(cat(headers('a'), headers('b')))).toEqual(decoded(encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [{ header: { key: 'a' } }, { header: { key: 'b' } }] } } } })));
    // streamed_immediate_response (11, not in our protos) is a member too.
    expect(decoded(cat(headers('a'), fld(11)))).toEqual({});
    expect(canonicalResponse(cat(headers('a'), fld(11, str(1, 'q')), fld(11)))).toEqual(fld(11, str(1, 'q')));
  });

  it('BodyMutation: body after streamed_response clears it; a streamed_response split merges', () => {
    const bm = (...f: Buffer[]): Buffer => fld(4, fld(1, fld(3, ...f)));
    const streamed = (...f: Buffer[]): Buffer => fld(3, ...f);
    const merged = decodeResponse(canonicalResponse(cat(bm(streamed(str(1, 'ab'))), bm(streamed(varint(2, 1))))));
    expect(merged.response_body!.response!.body_mutation!.streamed_response).toMatchObject({ end_of_stream: true });
    expect(Buffer.from(merged.response_body!.response!.body_mutation!.streamed_response!.body).toString()).toBe('ab');
    const cleared = decodeResponse(canonicalResponse(cat(bm(streamed(varint(2, 1))), bm(varint(2, 1)), bm(streamed(str(1, 'z'))))));
    expect(cleared.response_body!.response!.body_mutation!.streamed_response).toMatchObject({ end_of_stream: false });
    expect(cleared.response_body!.response!.body_mutation!.clear_body).toBe(false);
    const body = decodeResponse(canonicalResponse(bm(streamed(varint(2, 1)), str(1, 'b'))));
    expect(body.response_body!.response!.body_mutation!.streamed_response).toBeNull();
  });

  it('Struct: map entries stay apart (the last for a key wins); a Value split merges, its kind is the last seen', () => {
    const entry = (key: string, ...value: Buffer[]): Buffer => fld(1, str(1, key), ...value.map((v) => fld(2, v)));
    const lb = (...e: Buffer[]): Buffer => fld(8, entry('envoy.lb', fld(5, ...e)));
    // envoy.lb struct split over two Value occurrences of one entry: merged.
    const split = fld(8, entry('envoy.lb', fld(5, entry('a', str(3, '1'))), fld(5, entry('b', str(3, '2')))));
    expect(fromStruct(decodeResponse(canonicalResponse(split)).dynamic_metadata)).toEqual({ 'envoy.lb': { a: '1', b: '2' } });
    // Two entries for envoy.lb: the last one wins whole.
    expect(fromStruct(decodeResponse(canonicalResponse(cat(lb(entry('a', str(3, '1'))), lb(entry('b', str(3, '2')))))).dynamic_metadata)).toEqual({ 'envoy.lb': { b: '2' } });
    // string_value then list_value: a list; list_value then string_value: the string.
    const list = fld(6, fld(1, str(3, 'x')));
    expect(fromStruct(decodeResponse(canonicalResponse(lb(entry('d', str(3, 's'), list)))).dynamic_metadata)).toEqual({ 'envoy.lb': { d: ['x'] } });
    expect(fromStruct(decodeResponse(canonicalResponse(lb(entry('d', list, str(3, 's'))))).dynamic_metadata)).toEqual({ 'envoy.lb': { d: 's' } });
  });

  it('scalars and unknown fields are kept as sent; the last string wins', () => {
    const msg = cat(str(900, 'unknown'), setHeaders(fld(1, str(1, 'first'), str(1, 'last'))), Buffer.from([0xa8, 0x1f, 5]));
    const unknown = str(900, 'unknown');
    expect(canonicalResponse(msg).subarray(0, unknown.length)).toEqual(unknown);
    expect(decodeResponse(canonicalResponse(msg)).request_headers!.response!.header_mutation!.set_headers[0]!.header!.key).toBe('last');
  });

  it('the splitter without interleaving: every split canonicalizes to what the message means', () => {
    const schema = responseSchema();
    const decoys = { decoyMessage: () => undefined, decoyText: () => 'decoy' };
    let differs = 0;
    fuzz('split round trip', fuzzSeed(13_0004), { iterations: 300, maxInputMs: 1000 }, (r) => {
      const msg = generate(r);
      const split = splitMessage(r, msg, schema, decoys, 0);
      if (!split.equals(msg)) differs++;
      expect(decoded(split)).toEqual(decoded(msg));
    });
    expect(differs).toBeGreaterThan(200);
  });
});
