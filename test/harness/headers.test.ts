// Envoy's header-mutation rules and ORIGINAL_DST parsing as the stand-in applies them.
import { describe, expect, it } from 'vitest';
import { applyHeaderMutation, fromPbHeaderMap, parseDestination, toHeaderList, toPbHeaderMap, type HeaderList } from './headers.js';

const REQ = { permissive: false, isResponse: false };
const RESP = { permissive: false, isResponse: true };
const raw = (key: string, v: string, extra: object = {}) => ({ header: { key, raw_value: Buffer.from(v) }, ...extra });

function apply(list: HeaderList, m: Parameters<typeof applyHeaderMutation>[1], rules = REQ): HeaderList {
  const r = applyHeaderMutation(list, m, rules);
  if (!r.ok) throw new Error(r.error);
  return r.headers;
}

describe('applyHeaderMutation', () => {
  it('removes first, then sets', () => {
    expect(apply([['a', '1']], { remove_headers: ['a'], set_headers: [raw('a', '2')] })).toEqual([['a', '2']]);
  });

  it('reads only raw_value; append_action and keep_empty_value are ignored', () => {
    const out = apply([['a', '1']], {
      set_headers: [
        { header: { key: 'v', value: 'ignored' }, keep_empty_value: false },
        raw('a', '2', { append: { value: true }, append_action: 2 }),
      ],
    });
    expect(out).toEqual([['a', '1'], ['v', ''], ['a', '2']]);
  });

  it('overwrite keeps the first position and drops duplicates', () => {
    expect(apply([['a', '1'], ['b', 'x'], ['a', '2']], { set_headers: [raw('A', '3')] })).toEqual([['a', '3'], ['b', 'x']]);
  });

  it('skips routing, x-envoy-* and pseudo-headers; never removes pseudo-headers', () => {
    const list: HeaderList = [[':authority', 'h'], [':path', '/'], ['x-envoy-a', '1']];
    const r = applyHeaderMutation(list, {
      remove_headers: [':authority', ':path', 'x-envoy-a', 'host'],
      set_headers: [raw(':authority', 'x'), raw('host', 'x'), raw(':method', 'x'), raw(':scheme', 'x'), raw('x-envoy-b', 'x'), raw(':path', '/new')],
    }, REQ);
    expect(r).toMatchObject({ ok: true, headers: [[':authority', 'h'], [':path', '/new'], ['x-envoy-a', '1']] });
  });

  it(':status may be set on responses to a valid code only', () => {
    expect(apply([[':status', '200']], { set_headers: [raw(':status', '418')] }, RESP)).toEqual([[':status', '418']]);
    expect(apply([[':status', '200']], { set_headers: [raw(':status', '99')] }, RESP)).toEqual([[':status', '200']]);
    expect(apply([[':status', '200']], { set_headers: [raw(':status', '201')] }, REQ)).toEqual([[':status', '200']]);
  });

  it('the permissive rules of immediate responses allow routing and x-envoy-* headers', () => {
    expect(apply([], { set_headers: [raw('x-envoy-x', '1'), raw('host', 'h')] }, { permissive: true, isResponse: true })).toEqual([
      ['x-envoy-x', '1'],
      ['host', 'h'],
    ]);
  });

  it('an invalid header name or value is an error', () => {
    expect(applyHeaderMutation([], { set_headers: [raw('bad name', 'x')] }, REQ).ok).toBe(false);
    expect(applyHeaderMutation([], { set_headers: [raw('x', 'a\r\nb')] }, REQ).ok).toBe(false);
  });
});

describe('parseDestination (ORIGINAL_DST use_http_header)', () => {
  it.each(['10.0.0.1:80', '255.255.255.255:65535', '[::1]:8000', '[fd00:1:2::3]:9', '[1:2:3:4:5:6:7:8]:1'])('accepts %s', (v) => {
    expect(parseDestination(v)).toEqual({ ok: true, address: v });
  });
  it.each([
    '10.0.0.1:80,10.0.0.2:80', '10.0.0.1', '10.0.0.1:0', '10.0.0.1:65536', '10.0.0.256:80', 'host:80',
    '::1:80', '[::1]', '[1:2:3:4:5:6:7:8:9]:1', '[::g]:1', ' 10.0.0.1:80', '10.0.0.1:80 ', '',
  ])('rejects %j', (v) => {
    expect(parseDestination(v).ok).toBe(false);
  });
});

describe('header maps', () => {
  it('are sent and read as raw_value only (a value-only header reads as empty)', () => {
    const pb = toPbHeaderMap([['a', 'é']]);
    expect(pb.headers![0]).toEqual({ key: 'a', raw_value: Buffer.from('é') });
    expect(fromPbHeaderMap({ headers: [{ key: 'A', value: 'v' }, { key: 'b', value: 'x', raw_value: Buffer.from('y') }] })).toEqual([
      ['a', ''],
      ['b', 'y'],
    ]);
    expect(toHeaderList({ A: ['1', '2'], b: '3' })).toEqual([['a', '1'], ['a', '2'], ['b', '3']]);
  });
});
