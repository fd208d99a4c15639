import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  headerText,
  headerValue,
  loadExtProcRoot,
  type HeaderMap,
  type Init,
  type ProcessingRequest,
  type ProcessingResponse,
  type RequestCase,
  type ResponseCase,
} from '../../src/protocol/codec.js';

import { readEnvoyMessage } from '../../src/protocol/envoy-message.js';

const raw = (s: string) => Buffer.from(s, 'utf8');
const MIB = 1024 * 1024;

describe('encode/decode', () => {
  it('decodes request_headers with raw_value headers, protocol_config and metadata_context', () => {
    const buf = encodeRequest({
      request_headers: {
        headers: { headers: [{ key: ':path', raw_value: raw('/v1/chat') }, { key: 'x-a', value: 'legacy' }] },
        end_of_stream: false,
      },
      metadata_context: { filter_metadata: { 'envoy.lb': { fields: { k: { stringValue: 'v' } } } } },
      protocol_config: { request_body_mode: 4, response_body_mode: 4 },
    });
    const msg = decodeRequest(buf);
    expect(msg.request).toBe('request_headers');
    expect(msg.request_headers?.headers?.headers.map(headerText)).toEqual(['/v1/chat', 'legacy']);
    expect(msg.protocol_config).toMatchObject({ request_body_mode: 4, response_body_mode: 4 });
    expect(msg.metadata_context?.filter_metadata['envoy.lb']?.fields['k']?.stringValue).toBe('v');
    expect(msg.request_body).toBeNull();
  });

  it('encodes to the hand-computed bytes', () => {
    // field 4 (request_body), LEN 2 { field 2 (end_of_stream) = true }
    expect(encodeRequest({ request_body: { end_of_stream: true } }).toString('hex')).toBe('22021001');
    // field 7 (immediate_response) { field 1 (status) { field 1 (code) = 503 } }
    expect(encodeResponse({ immediate_response: { status: { code: 503 } } }).toString('hex')).toBe('3a050a0308f703');
  });

  it('returns Buffers for bytes fields, present or absent', () => {
    const present = decodeRequest(encodeRequest({ request_body: { body: raw('abc') } }));
    expect(Buffer.isBuffer(present.request_body?.body)).toBe(true);
    expect(present.request_body?.body.toString()).toBe('abc');
    const absent = decodeRequest(encodeRequest({ request_body: { end_of_stream: true } }));
    expect(Buffer.isBuffer(absent.request_body?.body)).toBe(true);
    expect(absent.request_body?.body.length).toBe(0);
    const hv = decodeRequest(encodeRequest({ request_headers: { headers: { headers: [{ key: 'k' }] } } }));
    expect(Buffer.isBuffer(hv.request_headers?.headers?.headers[0]?.raw_value)).toBe(true);
    // Prototype defaults are never encoded.
    expect(encodeRequest(decodeRequest(encodeRequest({ request_body: {} }))).toString('hex')).toBe('2200');
  });

  it('round-trips a response the router inspects', () => {
    const msg: Init<ProcessingResponse> = {
      request_headers: {
        response: {
          header_mutation: { set_headers: [{ header: { key: 'x', raw_value: raw('1') }, append: { value: false } }] },
          clear_route_cache: true,
        },
      },
      dynamic_metadata: { fields: { 'envoy.lb': { structValue: { fields: { a: { stringValue: 'b' } } } } } },
    };
    const out = decodeResponse(encodeResponse(msg));
    expect(out.response).toBe('request_headers');
    expect(out.request_headers?.response?.clear_route_cache).toBe(true);
    expect(out.request_headers?.response?.header_mutation?.set_headers[0]?.append?.value).toBe(false);
    expect(out.dynamic_metadata?.fields['envoy.lb']?.structValue?.fields['a']?.stringValue).toBe('b');
  });

  it('throws on malformed input', () => {
    expect(() => decodeRequest(Buffer.from([0x12, 0x05, 0x00]))).toThrow();
  });

  it('loadExtProcRoot fails on a directory without our protos', () => {
    expect(() => loadExtProcRoot('/nonexistent-protos-dir')).toThrow();
  });
});

const requestCases = [
  ['request_headers', { headers: { headers: [] } }, 'end_of_stream'],
  ['response_headers', { headers: { headers: [] } }, 'end_of_stream'],
  ['request_body', { body: raw('x') }, 'end_of_stream'],
  ['response_body', { body: raw('x') }, 'end_of_stream'],
] as const;

describe('an Envoy message read once (readEnvoyMessage): case and end_of_stream', () => {
  const peekRequest = (buf: Buffer) => {
    const m = readEnvoyMessage(buf);
    return { case: m.case, endOfStream: m.endOfStream };
  };

  it.each(requestCases)('%s: case and end_of_stream', (c, base, eosField) => {
    for (const eos of [true, false]) {
      const buf = encodeRequest({ [c]: { ...base, [eosField]: eos } } as Init<ProcessingRequest>);
      expect(peekRequest(buf)).toEqual({ case: c, endOfStream: eos });
      expect(peekRequest(buf).case).toBe(c);
    }
  });

  it.each(['request_trailers', 'response_trailers'] as const)('%s: trailers end their direction', (c) => {
    const buf = encodeRequest({ [c]: { trailers: { headers: [{ key: 'grpc-status', raw_value: raw('0') }] } } });
    expect(peekRequest(buf)).toEqual({ case: c, endOfStream: true });
  });

  it('reports none for an empty message or one without a request member', () => {
    expect(peekRequest(Buffer.alloc(0))).toEqual({ case: 'none', endOfStream: false });
    const onlyMeta = encodeRequest({ observability_mode: true, metadata_context: { filter_metadata: {} } });
    expect(peekRequest(onlyMeta).case).toBe<RequestCase>('none');
  });

  it('finds end_of_stream after a 4 MiB body and behind other fields', () => {
    const body = Buffer.alloc(4 * MIB, 0x61);
    const buf = encodeRequest({
      protocol_config: { request_body_mode: 4 },
      metadata_context: { filter_metadata: { ns: { fields: {} } } },
      request_body: { body, end_of_stream: true },
      attributes: { a: { fields: {} } },
    });
    expect(peekRequest(buf)).toEqual({ case: 'request_body', endOfStream: true });
    // end_of_stream encoded before the body (field order is free on the wire).
    const eosFirst = Buffer.concat([Buffer.from([0x22]), varint(2 + 1 + lenOf(body.length) + body.length), Buffer.from([0x10, 0x01, 0x0a]), varint(body.length), body]);
    expect(peekRequest(eosFirst)).toEqual({ case: 'request_body', endOfStream: true });
  });

  it('applies protobuf merge rules: the last member wins, repeats of one member merge', () => {
    const headersEos = encodeRequest({ request_headers: { end_of_stream: true } });
    const bodyNoEos = encodeRequest({ request_body: { body: raw('x') } });
    expect(peekRequest(Buffer.concat([headersEos, bodyNoEos]))).toEqual({ case: 'request_body', endOfStream: false });
    const bodyEos = encodeRequest({ request_body: { end_of_stream: true } });
    expect(peekRequest(Buffer.concat([bodyEos, bodyNoEos]))).toEqual({ case: 'request_body', endOfStream: true });
    // (protobufjs's decoder does not merge here: it keeps only the last occurrence.
    // Envoy's and Go's decoders merge, as the protobuf spec says.)
  });

  it('skips unknown fields of every wire type', () => {
    const w = protobuf.Writer.create();
    w.uint32((50 << 3) | 0).uint64(123456789);
    w.uint32((51 << 3) | 1).fixed64(7);
    w.uint32((52 << 3) | 5).fixed32(9);
    w.uint32((53 << 3) | 2).bytes(raw('unknown'));
    const unknown = Buffer.from(w.finish());
    const buf = Buffer.concat([unknown, encodeRequest({ response_body: { end_of_stream: true } }), unknown]);
    expect(peekRequest(buf)).toEqual({ case: 'response_body', endOfStream: true });
  });

  it('throws on a truncated message or a nested field overrunning its parent', () => {
    const buf = encodeRequest({ request_body: { body: raw('abcdef'), end_of_stream: true } });
    expect(() => peekRequest(buf.subarray(0, buf.length - 3))).toThrow(RangeError);
    // request_body claims 2 bytes but its body field claims 6.
    expect(() => peekRequest(Buffer.from('22020a06616263646566', 'hex'))).toThrow(RangeError);
  });
});

describe('headers', () => {
  const map: HeaderMap = decodeRequest(
    encodeRequest({
      request_headers: {
        headers: {
          headers: [
            { key: ':authority', raw_value: raw('api.example.com') },
            { key: 'X-Model', raw_value: raw('llama') },
            { key: 'x-legacy', value: 'only-value' },
            { key: 'accept', raw_value: raw('a/b') },
            { key: 'accept', raw_value: raw('c/d') },
            { key: 'x-empty', raw_value: raw('') },
            { key: 'x-utf8', raw_value: raw('caf\u00e9') },
            { key: 'x-both', value: 'stale', raw_value: raw('fresh') },
          ],
        },
      },
    }),
  ).request_headers!.headers!;

  it('headerValue reads raw_value, falls back to value, ignores case, returns the first', () => {
    expect(headerValue(map, ':authority')).toBe('api.example.com');
    expect(headerValue(map, 'x-model')).toBe('llama');
    expect(headerValue(map, 'X-LEGACY')).toBe('only-value');
    expect(headerValue(map, 'accept')).toBe('a/b');
    expect(headerValue(map, 'x-empty')).toBe('');
    expect(headerValue(map, 'x-utf8')).toBe('caf\u00e9');
    expect(headerValue(map, 'x-both')).toBe('fresh');
    expect(headerValue(map, 'missing')).toBeUndefined();
    expect(headerValue(map.headers, 'x-model')).toBe('llama');
    expect(headerValue(null, 'x-model')).toBeUndefined();
  });
});

function varint(n: number): Buffer {
  return Buffer.from(protobuf.Writer.create().uint32(n).finish());
}
function lenOf(n: number): number {
  return varint(n).length;
}
