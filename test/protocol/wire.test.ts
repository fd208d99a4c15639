import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { dropField, lenField, payloadOf, rewriteLenField, rewritePath, scanFields, visitPath } from '../../src/protocol/wire.js';

const raw = (s: string) => Buffer.from(s, 'utf8');

// { 1: "a", 2: varint 150, 3: { 1: "x", 2: "y" }, 1: "b", 4: fixed32 7 }
const inner = Buffer.concat([lenField(1, raw('x')), lenField(2, raw('y'))]);
const msg = Buffer.concat([
  lenField(1, raw('a')),
  Buffer.from([0x10, 0x96, 0x01]),
  lenField(3, inner),
  lenField(1, raw('b')),
  Buffer.from(protobuf.Writer.create().uint32((4 << 3) | 5).fixed32(7).finish()),
]);

describe('wire', () => {
  it('scanFields lists every top-level field with its bounds', () => {
    const fields = scanFields(msg);
    expect(fields.map((f) => [f.no, f.wireType])).toEqual([[1, 2], [2, 0], [3, 2], [1, 2], [4, 5]]);
    expect(payloadOf(msg, fields[0]!).toString()).toBe('a');
    expect(payloadOf(msg, fields[2]!).equals(inner)).toBe(true);
    expect(fields.at(-1)!.end).toBe(msg.length);
  });

  it('scanFields rejects truncated input and field number 0', () => {
    expect(() => scanFields(msg.subarray(0, msg.length - 1))).toThrow();
    expect(() => scanFields(Buffer.from([0x0a, 0x05, 0x61]))).toThrow(RangeError);
    expect(() => scanFields(Buffer.from([0x00, 0x01]))).toThrow(/field number 0/);
  });

  it('rewriteLenField replaces every occurrence and copies the rest byte for byte', () => {
    const out = rewriteLenField(msg, 1, (p) => raw(p.toString().toUpperCase() + '!'));
    const fields = scanFields(out);
    expect(fields.filter((f) => f.no === 1).map((f) => payloadOf(out, f).toString())).toEqual(['A!', 'B!']);
    expect(out.subarray(fields[1]!.start).equals(
      Buffer.concat([Buffer.from([0x10, 0x96, 0x01]), lenField(3, inner), lenField(1, raw('B!')), msg.subarray(msg.length - 5)]),
    )).toBe(true);
  });

  it('returns the same Buffer when nothing changes', () => {
    expect(rewriteLenField(msg, 1, () => undefined)).toBe(msg);
    expect(rewriteLenField(msg, 9, () => raw('never'))).toBe(msg);
    expect(rewritePath(msg, [3, 5], () => raw('never'))).toBe(msg);
    expect(dropField(msg, 9)).toBe(msg);
  });

  it('rewritePath re-encodes the enclosing lengths', () => {
    const out = rewritePath(msg, [3, 2], () => raw('a much longer value than before'));
    const f3 = scanFields(out).find((f) => f.no === 3)!;
    const nested = scanFields(payloadOf(out, f3));
    expect(payloadOf(payloadOf(out, f3), nested[1]!).toString()).toBe('a much longer value than before');
    expect(payloadOf(payloadOf(out, f3), nested[0]!).toString()).toBe('x');
  });

  it('visitPath visits nested payloads in order; dropField removes all occurrences', () => {
    const seen: string[] = [];
    visitPath(msg, [3, 1], (p) => seen.push(p.toString()));
    visitPath(msg, [1], (p) => seen.push(p.toString()));
    expect(seen).toEqual(['x', 'a', 'b']);
    expect(scanFields(dropField(msg, 1)).map((f) => f.no)).toEqual([2, 3, 4]);
  });
});
