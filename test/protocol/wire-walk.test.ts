// The offset walk primitives against a protobufjs Reader scan (the old readers' wire
// code, epp-answer-oracle-wire.ts): same fields, same last occurrences, same merges,
// throwing where the Reader throws.
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { dropField, findLast, found, lenField, mergedLen, rewriteFields, type FieldRewriter } from '../../src/protocol/wire-walk.js';
import { seededRandom } from '../helpers/random.js';
import { scanFields, visitPath } from './epp-answer-oracle-wire.js';

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

/** Doubles every LEN field 1 payload, drops field 3. */
const doubler: FieldRewriter = {
  field: (_level, buf, no, start, end) => (no === 3 ? null : no === 1 ? Buffer.concat([buf.subarray(start, end), buf.subarray(start, end)]) : undefined),
  scalar: () => {},
};
const keeper: FieldRewriter = { field: () => undefined, scalar: () => {} };

describe('wire-walk', () => {
  it('lenField encodes as protobufjs does', () => {
    const big = Buffer.alloc(300, 1);
    expect(lenField(1000, big).equals(Buffer.from(protobuf.Writer.create().uint32((1000 << 3) | 2).bytes(big).finish()))).toBe(true);
  });

  it('findLast and mergedLen find the last occurrence and the merged payloads', () => {
    expect(findLast(msg, 0, msg.length, 1) && msg.toString('utf8', found.start, found.end)).toBe('b');
    expect(findLast(msg, 0, msg.length, 5)).toBe(false);
    expect(mergedLen(msg, 0, msg.length, 1)!.toString()).toBe('ab');
    expect(mergedLen(msg, 0, msg.length, 3)!.byteOffset).toBe(msg.byteOffset + 8); // one occurrence: a view
  });

  it('rewriteFields copies unchanged fields byte for byte, and returns undefined when nothing changed', () => {
    expect(rewriteFields(msg, 0, msg.length, keeper, 0)).toBeUndefined();
    const out = rewriteFields(msg, 0, msg.length, doubler, 0)!;
    expect(scanFields(out).map((f) => f.no)).toEqual([1, 2, 1, 4]);
    const ones: string[] = [];
    visitPath(out, [1], (p) => ones.push(p.toString()));
    expect(ones).toEqual(['aa', 'bb']);
    expect(out.subarray(out.length - 5).equals(msg.subarray(msg.length - 5))).toBe(true);
    expect(scanFields(dropField(msg, 1)).map((f) => f.no)).toEqual([2, 3, 4]);
    expect(dropField(msg, 9)).toBe(msg);
  });

  it('reads as the Reader reads on 3,000 random messages and their corruptions', () => {
    const next = seededRandom(20261125);
    let threw = 0;
    for (let i = 0; i < 3000; i++) {
      let buf = randomMessage(next, 3);
      if (i % 3 === 1 && buf.length > 0) buf = buf.subarray(0, Math.floor(next() * buf.length));
      if (i % 3 === 2 && buf.length > 0) {
        buf = Buffer.from(buf);
        buf[Math.floor(next() * buf.length)] = Math.floor(next() * 256);
      }
      let fields: number[];
      try {
        fields = scanFields(buf).map((f) => f.no);
      } catch {
        threw++;
        expect(() => dropField(buf, 2), `message ${i}`).toThrow(RangeError);
        continue;
      }
      expect(scanFields(dropField(buf, 2)).map((f) => f.no), `message ${i}`).toEqual(fields.filter((n) => n !== 2));
      const merged = mergedLen(buf, 0, buf.length, 1);
      const want = scanFields(buf).filter((f) => f.no === 1 && f.wireType === 2).map((f) => buf.subarray(f.valueStart, f.end));
      expect(merged?.toString('hex'), `message ${i}`).toBe(want.length === 0 ? undefined : Buffer.concat(want).toString('hex'));
    }
    expect(threw).toBeGreaterThan(300);
  });
});

/** A random encoded message: LEN fields (nested up to `depth`), varints, fixed32/64 and groups. */
function randomMessage(next: () => number, depth: number): Buffer {
  const w = protobuf.Writer.create();
  const fields = Math.floor(next() * 6);
  for (let i = 0; i < fields; i++) {
    const no = 1 + Math.floor(next() * 3);
    const kind = next();
    if (kind < 0.6) {
      const payload = depth > 0 && next() < 0.7 ? randomMessage(next, depth - 1) : Buffer.from(Array.from({ length: Math.floor(next() * 8) }, () => Math.floor(next() * 256)));
      w.uint32(((no << 3) | 2) >>> 0).bytes(payload);
    } else if (kind < 0.7) w.uint32(no << 3).uint64(Math.floor(next() * 2 ** 53));
    else if (kind < 0.8) w.uint32((no << 3) | 5).fixed32(Math.floor(next() * 2 ** 32));
    else if (kind < 0.9) w.uint32((no << 3) | 1).fixed64(Math.floor(next() * 2 ** 32));
    else w.uint32((no << 3) | 3).uint32((9 << 3) | 0).uint32(300).uint32((no << 3) | 4);
  }
  return Buffer.from(w.finish());
}
