// readEnvoyMessage on Envoy's encoded ProcessingRequests: the member, its end_of_stream
// (repeated occurrences merge, another member replaces) and the body as a view; and a
// seeded differential fuzz against a full protobufjs decode.
import { describe, expect, it } from 'vitest';
import { decodeRequest, encodeRequest, type Init, type ProcessingRequest } from '../../src/protocol/codec.js';
import { readEnvoyMessage } from '../../src/protocol/envoy-message.js';
import { lenField } from '../../src/protocol/wire-walk.js';
import { fuzz, fuzzSeed } from '../helpers/fuzz.js';

const fld = (no: number, ...payload: Buffer[]): Buffer => lenField(no, Buffer.concat(payload));
const eos = (no: number, v: number): Buffer => Buffer.from([no << 3, v]);

describe('readEnvoyMessage', () => {
  it('a body message: its case, end_of_stream, and body as a view into the message', () => {
    const raw = encodeRequest({ response_body: { body: Buffer.from('data: {}\n\n'), end_of_stream: true } });
    const m = readEnvoyMessage(raw);
    expect(m).toMatchObject({ case: 'response_body', endOfStream: true, raw });
    expect(m.body.toString()).toBe('data: {}\n\n');
    expect(m.body.buffer).toBe(raw.buffer);
  });

  it.each<[string, Init<ProcessingRequest>, string, boolean]>([
    ['request headers', { request_headers: { headers: { headers: [{ key: ':path', raw_value: Buffer.from('/') }] }, end_of_stream: false } }, 'request_headers', false],
    ['response headers ending the stream', { response_headers: { end_of_stream: true } }, 'response_headers', true],
    ['request trailers', { request_trailers: {} }, 'request_trailers', true],
    ['response trailers', { response_trailers: {} }, 'response_trailers', true],
    ['no member', { observability_mode: true }, 'none', false],
  ])('%s', (_what, msg, c, endOfStream) => {
    const m = readEnvoyMessage(encodeRequest(msg));
    expect(m).toMatchObject({ case: c, endOfStream });
    expect(m.body.length).toBe(0);
  });

  it('repeated occurrences merge (an earlier end_of_stream holds, the last body counts); another member replaces', () => {
    const merged = readEnvoyMessage(Buffer.concat([fld(4, fld(1, Buffer.from('one')), eos(2, 1)), fld(4, fld(1, Buffer.from('two!')))]));
    expect(merged).toMatchObject({ case: 'request_body', endOfStream: true });
    expect(merged.body.toString()).toBe('two!');
    const replaced = readEnvoyMessage(Buffer.concat([fld(4, fld(1, Buffer.from('one')), eos(2, 1)), fld(5)]));
    expect(replaced).toMatchObject({ case: 'response_body', endOfStream: false });
    expect(replaced.body.length).toBe(0);
    expect(readEnvoyMessage(Buffer.concat([fld(2, eos(3, 1)), fld(2, eos(3, 0))])).endOfStream).toBe(false);
  });

  it('skips unknown fields and groups; a member with another wire type is not a member', () => {
    const m = readEnvoyMessage(Buffer.concat([Buffer.from([0x9b, 0x01, 0x08, 0x01, 0x9c, 0x01]), fld(999, Buffer.from('x')), Buffer.from([0x28, 0x01]), fld(4, fld(7), fld(1, Buffer.from('b')))]));
    expect(m).toMatchObject({ case: 'request_body', endOfStream: false });
    expect(m.body.toString()).toBe('b');
  });

  it.each([
    ['a truncated length', Buffer.from([0x22, 0x05, 0x0a])],
    ['a truncated varint', Buffer.from([0x22, 0x80])],
    ['field number 0', Buffer.from([0x00, 0x01])],
    ['field number 0 inside the body', fld(5, Buffer.from([0x02, 0x00]))],
    ['a nested length beyond its member', fld(4, Buffer.from([0x0a, 0x09]))],
    ['a group bomb', Buffer.alloc(20_000, 0x0b)],
    ['an invalid wire type', Buffer.from([0x0e])],
  ])('%s throws a RangeError', (_what, raw) => {
    expect(() => readEnvoyMessage(raw)).toThrow(RangeError);
  });

  it('fuzz: agrees with a full decode on generated messages; corrupted ones read or throw a RangeError, in bounded time', () => {
    const MEMBERS = ['request_headers', 'response_headers', 'request_body', 'response_body', 'request_trailers', 'response_trailers'] as const;
    fuzz('envoy message', fuzzSeed(13_0003), { iterations: 1500, maxInputMs: 1000 }, (r) => {
      const member = r.pick(MEMBERS);
      const body = r.bytes(r.int(100));
      const init: Init<ProcessingRequest> =
        member === 'request_body' || member === 'response_body'
          ? { [member]: { body, end_of_stream: r.chance(0.5) } }
          : member.endsWith('headers')
            ? { [member]: { end_of_stream: r.chance(0.5) } }
            : { [member]: {} };
      const raw = encodeRequest({ ...init, ...(r.chance(0.3) ? { observability_mode: true } : {}) });
      const m = readEnvoyMessage(raw);
      const d = decodeRequest(raw);
      expect(m.case).toBe(member);
      const eosOf = (d[member] as { end_of_stream?: boolean }).end_of_stream;
      expect(m.endOfStream).toBe(member.endsWith('trailers') ? true : !!eosOf);
      expect(m.body.equals(member.endsWith('body') ? body : Buffer.alloc(0))).toBe(true);
      const bad = Buffer.from(raw);
      bad[r.int(bad.length)] = r.int(256);
      const cut = bad.subarray(0, r.int(bad.length + 1));
      try {
        readEnvoyMessage(cut);
      } catch (e) {
        expect(e).toBeInstanceOf(RangeError);
      }
    });
  });
});
