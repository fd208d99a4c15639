import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { dropField, lastPathLength, lastPathPayload, lenField, payloadOf, rewriteLenField, rewritePath, scanFields, visitPath } from '../../src/protocol/wire.js';
import { seededRandom } from '../helpers/random.js';

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

/** A random encoded message: LEN fields (nested up to `depth`), varints (up to 10 bytes), fixed32/64 and groups. */
function randomMessage(next: () => number, depth: number): Buffer {
  const w = protobuf.Writer.create();
  const fields = Math.floor(next() * 6);
  for (let i = 0; i < fields; i++) {
    const no = 1 + Math.floor(next() * 3);
    const kind = next();
    if (kind < 0.6) {
      const payload = depth > 0 && next() < 0.7 ? randomMessage(next, depth - 1) : Buffer.from(Array.from({ length: Math.floor(next() * 8) }, () => Math.floor(next() * 256)));
      w.uint32(((no << 3) | 2) >>> 0).bytes(payload);
    } else if (kind < 0.7) {
      w.uint32(no << 3).uint64(Math.floor(next() * 2 ** 53));
    } else if (kind < 0.8) {
      w.uint32((no << 3) | 5).fixed32(Math.floor(next() * 2 ** 32));
    } else if (kind < 0.9) {
      w.uint32((no << 3) | 1).fixed64(Math.floor(next() * 2 ** 32));
    } else {
      w.uint32((no << 3) | 3).uint32((9 << 3) | 0).uint32(300).uint32((no << 3) | 4);
    }
  }
  return Buffer.from(w.finish());
}

/** What visitPath (the reference) says: the last payload, undefined, or 'throws'. */
function reference(buf: Buffer, path: readonly number[]): Buffer | undefined | 'throws' {
  let last: Buffer | undefined;
  try {
    visitPath(buf, path, (p) => {
      last = p;
    });
  } catch {
    return 'throws';
  }
  return last;
}

describe('lastPathLength / lastPathPayload', () => {
  it('find the last occurrence of a nested field, as visitPath visits them', () => {
    expect(lastPathPayload(msg, [1])!.toString()).toBe('b');
    expect(lastPathPayload(msg, [3, 2])!.toString()).toBe('y');
    expect(lastPathLength(msg, [3, 1])).toBe(1);
    expect(lastPathLength(msg, [3, 3])).toBe(-1);
    expect(lastPathPayload(msg, [5])).toBeUndefined();
    expect(lastPathLength(msg, [])).toBe(-1);
    // Fields of a repeated parent are found in whichever occurrence holds them last.
    const twice = Buffer.concat([lenField(3, lenField(1, raw('first'))), lenField(3, lenField(2, raw('other')))]);
    expect(lastPathPayload(twice, [3, 1])!.toString()).toBe('first');
  });

  it('agree with visitPath on 3,000 random messages and their corruptions, throwing where it throws', () => {
    const next = seededRandom(20261121);
    let found = 0;
    let threw = 0;
    for (let i = 0; i < 3000; i++) {
      let buf = randomMessage(next, 3);
      if (i % 3 === 1 && buf.length > 0) buf = buf.subarray(0, Math.floor(next() * buf.length)); // truncated
      if (i % 3 === 2 && buf.length > 0) {
        buf = Buffer.from(buf);
        buf[Math.floor(next() * buf.length)] = Math.floor(next() * 256); // one byte flipped
      }
      const path = Array.from({ length: 1 + Math.floor(next() * 3) }, () => 1 + Math.floor(next() * 3));
      const want = reference(buf, path);
      if (want === 'throws') {
        threw++;
        expect(() => lastPathLength(buf, path), `message ${i}`).toThrow(RangeError);
        expect(() => lastPathPayload(buf, path), `message ${i}`).toThrow(RangeError);
        continue;
      }
      if (want) found++;
      expect(lastPathLength(buf, path), `message ${i}`).toBe(want ? want.length : -1);
      const got = lastPathPayload(buf, path);
      expect(got === undefined ? undefined : got.toString('hex'), `message ${i}`).toBe(want?.toString('hex'));
      if (got && want) expect(got.byteOffset, `message ${i}: a view into the message`).toBe(want.byteOffset);
    }
    // The corpus exercises all three outcomes.
    expect(found).toBeGreaterThan(250);
    expect(threw).toBeGreaterThan(300);
  });
});
