import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { decodeResponse, encodeResponse, headerText, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { peekResponse } from './epp-answer-oracle-peek.js';
import {
  continueBody,
  continueHeaders,
  continueResponse,
  continueTrailers,
  destinationHeadersResponse,
  headerOption,
  immediateResponse,
  primaryEndpoint,
  streamedBody,
} from '../../src/protocol/responses.js';
import { fromStruct } from '../../src/protocol/struct.js';
import { readEppAnswer } from '../../src/protocol/epp-answer.js';
import { canonicalResponse } from './wire-canonical.js';
import { dropField } from '../../src/protocol/wire-walk.js';

const DEST = 'x-gateway-destination-endpoint';
const raw = (s: string) => Buffer.from(s, 'utf8');

describe('immediateResponse', () => {
  it('carries status, JSON body with a raw_value content-type, and details', () => {
    const buf = immediateResponse({ status: 503, body: { error: 'no ready endpoints', pool: 'p1' }, details: 'epp_unavailable' });
    expect(peekResponse(buf).case).toBe('immediate_response');
    const ir = decodeResponse(buf).immediate_response!;
    expect(ir.status?.code).toBe(503);
    expect(JSON.parse(ir.body.toString('utf8'))).toEqual({ error: 'no ready endpoints', pool: 'p1' });
    expect(ir.details).toBe('epp_unavailable');
    const [ct] = ir.headers!.set_headers;
    expect(ct?.header?.key).toBe('content-type');
    expect(ct?.header?.raw_value.toString()).toBe('application/json');
    expect(ct?.header?.value).toBe('');
    expect(ct?.append?.value).toBe(false);
  });

  it('has no body and no headers when none are given; extra headers are raw_value', () => {
    const bare = decodeResponse(immediateResponse({ status: 404 })).immediate_response!;
    expect(bare.body.length).toBe(0);
    expect(bare.headers).toBeNull();
    expect(bare.details).toBe('');
    const withHeader = decodeResponse(immediateResponse({ status: 429, headers: { 'retry-after': '1' } })).immediate_response!;
    expect(withHeader.headers?.set_headers.map((o) => [o.header?.key, o.header?.raw_value.toString(), o.header?.value])).toEqual([
      ['retry-after', '1', ''],
    ]);
  });
});

describe('destinationHeadersResponse', () => {
  it('sets the header only in raw_value with append=false, clears the route cache, adds envoy.lb metadata', () => {
    const buf = destinationHeadersResponse('request_headers', '10.1.2.3:8000');
    expect(peekResponse(buf).case).toBe('request_headers');
    const msg = decodeResponse(buf);
    const common = msg.request_headers!.response!;
    expect(common.clear_route_cache).toBe(true);
    expect(common.status).toBe(0);
    expect(common.header_mutation!.set_headers).toHaveLength(1);
    const opt = common.header_mutation!.set_headers[0]!;
    expect(opt.header).toMatchObject({ key: DEST, value: '' });
    expect(opt.header!.raw_value.toString()).toBe('10.1.2.3:8000');
    expect(opt.append).not.toBeNull();
    expect(opt.append!.value).toBe(false);
    expect(fromStruct(msg.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.1.2.3:8000' } });
    expect(destinationOf(buf)).toBe('10.1.2.3:8000');
  });

  it('honours clearRouteCache and dynamicMetadata options', () => {
    const noClear = decodeResponse(destinationHeadersResponse('request_headers', '[fd00::1]:80', { clearRouteCache: false, dynamicMetadata: null }));
    expect(noClear.request_headers!.response!.clear_route_cache).toBe(false);
    expect(noClear.dynamic_metadata).toBeNull();
    const custom = decodeResponse(destinationHeadersResponse('request_headers', '10.0.0.1:80', { dynamicMetadata: { 'envoy.lb': { [DEST]: '10.0.0.1:80,10.0.0.2:80' } } }));
    expect(fromStruct(custom.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:80,10.0.0.2:80' } });
  });
});

describe('continue and streamed builders', () => {
  it.each([
    ['request_headers', () => continueHeaders('request_headers'), '0a00'],
    ['response_headers', () => continueHeaders('response_headers'), '1200'],
    ['request_body', () => continueBody('request_body'), '1a00'],
    ['response_body', () => continueBody('response_body'), '2200'],
    ['request_trailers', () => continueTrailers('request_trailers'), '2a00'],
    ['response_trailers', () => continueTrailers('response_trailers'), '3200'],
  ] as const)('%s: an empty response of the matching type', (phase, build, hex) => {
    const buf = build();
    expect(buf.toString('hex')).toBe(hex);
    expect(peekResponse(buf)).toEqual({ case: phase, streamed: false, endOfStream: false, guard: !phase.endsWith('_body') });
    expect(continueResponse(phase).equals(buf)).toBe(true);
  });

  it('streamedBody echoes the chunk as body_mutation.streamed_response', () => {
    const chunk = Buffer.alloc(4 * 1024 * 1024, 0x7a);
    for (const eos of [false, true]) {
      const buf = streamedBody('request_body', chunk, eos);
      expect(peekResponse(buf)).toEqual({ case: 'request_body', streamed: true, endOfStream: eos, guard: false });
      const sr = decodeResponse(buf).request_body!.response!.body_mutation!.streamed_response!;
      expect(sr.body.equals(chunk)).toBe(true);
      expect(sr.end_of_stream).toBe(eos);
    }
    const empty = decodeResponse(streamedBody('response_body', Buffer.alloc(0), true));
    expect(empty.response_body!.response!.body_mutation!.mutation).toBe('streamed_response');
  });
});

describe('primaryEndpoint', () => {
  it('takes the first non-empty entry of a list and leaves single values alone', () => {
    expect(primaryEndpoint('10.0.0.1:80,10.0.0.2:80')).toBe('10.0.0.1:80');
    expect(primaryEndpoint(' 10.0.0.1:80 , 10.0.0.2:80')).toBe('10.0.0.1:80');
    expect(primaryEndpoint(',[fd00::1]:80')).toBe('[fd00::1]:80');
    expect(primaryEndpoint('10.0.0.1:80,')).toBe('10.0.0.1:80');
    expect(primaryEndpoint('10.0.0.1:80')).toBeUndefined();
  });
});

/** An EPP-style request_headers response. */
function eppResponse(dest: Init<ProcessingResponse>['dynamic_metadata'] | null, header = { key: DEST, raw_value: raw('10.0.0.1:8000,10.0.0.2:8000') }) {
  return encodeResponse({
    request_headers: {
      response: {
        status: 1,
        header_mutation: {
          set_headers: [headerOption('x-other', 'keep'), { header: header, append: { value: false }, append_action: 2 }],
          remove_headers: ['x-drop'],
        },
        clear_route_cache: true,
      },
    },
    dynamic_metadata: dest,
  });
}

/** The destination list as an EPP answer is read (epp-answer.ts), under rules that allow every header and destination here. */
function rewriteDestination(msg: Buffer, mode: 'primary' | 'list'): Buffer {
  const rules = { headers: new Set([DEST, 'x-other', 'x-drop', 'x-list']), destinationRefusal: () => undefined };
  const a = readEppAnswer(msg, rules, mode);
  if (a.t !== 'answer') throw new Error(`not an answer: ${a.t}`);
  return a.msg;
}

/** The x-gateway-destination-endpoint a request_headers answer sets (last one wins). */
function destinationOf(msg: Buffer): string | undefined {
  const set = decodeResponse(msg).request_headers?.response?.header_mutation?.set_headers ?? [];
  return set.filter((o) => o.header?.key.toLowerCase() === DEST).map((o) => headerText(o.header!)).pop();
}

describe('a destination list in an EPP answer (readEppAnswer)', () => {
  it('keeps only the primary in the header and adds the full list to envoy.lb metadata', () => {
    const before = eppResponse(null);
    const after = rewriteDestination(before, 'primary');
    const a = decodeResponse(after);
    const b = decodeResponse(before);
    const header = a.request_headers!.response!.header_mutation!.set_headers[1]!;
    expect(headerText(header.header!)).toBe('10.0.0.1:8000');
    expect(header.header!.value).toBe('');
    expect(fromStruct(a.dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: '10.0.0.1:8000,10.0.0.2:8000' } });
    expect(destinationOf(after)).toBe('10.0.0.1:8000');
    // Everything else is unchanged.
    const strip = (m: ProcessingResponse) => {
      const o = (m as unknown as protobuf.Message).toJSON();
      delete o.dynamic_metadata;
      o.request_headers.response.header_mutation.set_headers[1].header.raw_value = null;
      return o;
    };
    expect(strip(a)).toEqual(strip(b));
    expect(header.append_action).toBe(2);
    expect(a.request_headers!.response!.status).toBe(1);
  });

  it('keeps the EPP metadata byte for byte when it already carries the list', () => {
    // Split over two dynamic_metadata occurrences (they merge): a re-encoding would join them.
    const other = { fields: { 'envoy.lb': { structValue: { fields: { k: { stringValue: 'x' } } } } } };
    const lb = { fields: { 'envoy.lb': { structValue: { fields: { [DEST]: { stringValue: '10.0.0.1:8000,10.0.0.2:8000' } } } } } };
    const before = Buffer.concat([eppResponse(other), encodeResponse({ dynamic_metadata: lb })]);
    const after = rewriteDestination(before, 'primary');
    const withoutHeaders = (buf: Buffer) => dropField(buf, 1);
    expect(withoutHeaders(after).equals(withoutHeaders(before))).toBe(true);
    expect(destinationOf(after)).toBe('10.0.0.1:8000');
  });

  it('merges into existing metadata: other envoy.lb keys stay (other namespaces are the rules\' to drop)', () => {
    const before = eppResponse({
      fields: {
        'envoy.lb': { structValue: { fields: { other: { stringValue: 'x' } } } },
        'com.example': { structValue: { fields: { n: { numberValue: 1 } } } },
      },
    });
    expect(fromStruct(decodeResponse(rewriteDestination(before, 'primary')).dynamic_metadata)).toEqual({
      'envoy.lb': { other: 'x', [DEST]: '10.0.0.1:8000,10.0.0.2:8000' },
    });
  });

  it('a value-only header, or another key case, is written again as the lower-case key in raw_value (the first entry in primary mode)', () => {
    const before = eppResponse(null, { key: 'X-Gateway-Destination-Endpoint', value: '10.0.0.3:80, 10.0.0.4:80' } as never);
    // Envoy merges the appended option into the answer's header mutation (as canonicalResponse does).
    const set = decodeResponse(canonicalResponse(rewriteDestination(before, 'primary'))).request_headers!.response!.header_mutation!.set_headers;
    expect(set.map((o) => o.header!.key)).toEqual(['x-other', DEST]);
    expect(set[1]!.header!.raw_value.toString()).toBe('10.0.0.3:80');
    expect(set[1]!.header!.value).toBe('');
    expect(set[1]!.append?.value).toBe(false);
    const listed = decodeResponse(canonicalResponse(rewriteDestination(before, 'list'))).request_headers!.response!.header_mutation!.set_headers;
    expect(listed[1]!.header!.raw_value.toString()).toBe('10.0.0.3:80, 10.0.0.4:80');
  });

  it('returns the input itself when there is nothing to rewrite', () => {
    const lb = (v: string) => ({ fields: { 'envoy.lb': { structValue: { fields: { [DEST]: { stringValue: v } } } } } });
    const single = eppResponse(lb('10.0.0.1:8000'), { key: DEST, raw_value: raw('10.0.0.1:8000') });
    expect(rewriteDestination(single, 'primary')).toBe(single);
    const list = eppResponse(lb('10.0.0.1:8000,10.0.0.2:8000'));
    expect(rewriteDestination(list, 'list')).toBe(list);
    const immediate = immediateResponse({ status: 503 });
    expect(rewriteDestination(immediate, 'primary')).toBe(immediate);
    const responsePath = encodeResponse({
      response_headers: { response: { header_mutation: { set_headers: [headerOption(DEST, 'a:1,b:2')] } } },
    });
    expect(rewriteDestination(responsePath, 'primary')).toBe(responsePath);
    const otherHeader = eppResponse(null, { key: 'x-list', raw_value: raw('a:1,b:2') });
    expect(rewriteDestination(otherHeader, 'primary')).toBe(otherHeader);
  });

  it('keeps fields our protos do not declare, at every level it rewrites', () => {
    const unknown = (no: number, text: string) =>
      Buffer.from(protobuf.Writer.create().uint32((no << 3) | 2).bytes(raw(text)).finish());
    const len = (no: number, ...parts: Buffer[]) =>
      Buffer.from(protobuf.Writer.create().uint32((no << 3) | 2).bytes(Buffer.concat(parts)).finish());
    const headerValue = Buffer.concat([unknown(1, DEST), unknown(3, 'a:1,b:2'), unknown(9, 'hv-extra')]);
    const option = Buffer.concat([len(1, headerValue), unknown(8, 'opt-extra')]);
    const mutation = Buffer.concat([len(1, option), unknown(7, 'mut-extra')]);
    const common = Buffer.concat([len(2, mutation), unknown(6, 'common-extra')]);
    const msg = Buffer.concat([len(1, len(1, common), unknown(5, 'headers-extra')), unknown(13, 'top-extra')]);
    const after = rewriteDestination(msg, 'primary');
    for (const extra of ['hv-extra', 'opt-extra', 'mut-extra', 'common-extra', 'headers-extra', 'top-extra']) {
      expect(after.includes(raw(extra)), extra).toBe(true);
    }
    expect(destinationOf(after)).toBe('a:1');
    expect(after.includes(raw('a:1,b:2'))).toBe(true); // now in the metadata only
    expect(fromStruct(decodeResponse(after).dynamic_metadata)).toEqual({ 'envoy.lb': { [DEST]: 'a:1,b:2' } });
    // A protobufjs decode + encode would have dropped them all.
    const reencoded = encodeResponse(decodeResponse(msg));
    expect(['hv-extra', 'top-extra'].some((e) => reencoded.includes(raw(e)))).toBe(false);
  });
});
