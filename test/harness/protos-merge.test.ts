import { describe, expect, it } from 'vitest';
import { encodeResponse } from '../../src/protocol/codec.js';
import { packageDefinition } from './protos.js';

const set = (key: string, v: string) => ({ header: { key, raw_value: Buffer.from(v) } });

describe('the stand-in reads answers as Envoy does', () => {
  it('merges a second occurrence of a message field into the first (repeated fields concatenate, others kept)', () => {
    const first = encodeResponse({ request_headers: { response: { clear_route_cache: true, header_mutation: { set_headers: [set('a', '1')] } } } });
    const more = encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [set('b', '2')], remove_headers: ['c'] } } } });
    const process = (packageDefinition['envoy.service.ext_proc.v3.ExternalProcessor'] as unknown as Record<string, { responseDeserialize: (b: Buffer) => unknown }>).Process!;
    const m = process.responseDeserialize(Buffer.concat([first, more])) as {
      request_headers: { response: { clear_route_cache: boolean; header_mutation: { set_headers: { header: { key: string } }[]; remove_headers: string[] } } };
    };
    expect(m.request_headers.response.clear_route_cache).toBe(true);
    expect(m.request_headers.response.header_mutation.set_headers.map((h) => h.header.key)).toEqual(['a', 'b']);
    expect(m.request_headers.response.header_mutation.remove_headers).toEqual(['c']);
  });
});
