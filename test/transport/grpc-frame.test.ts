import { status as Status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { encodeMessage, FrameError, MessageReader } from '../../src/transport/grpc-frame.js';

function framed(...msgs: Buffer[]): Buffer {
  return Buffer.concat(msgs.flatMap((m) => encodeMessage(m)));
}

function readAll(chunks: Buffer[], max = 1 << 20): Buffer[] {
  const out: Buffer[] = [];
  const reader = new MessageReader(max, (m) => out.push(Buffer.from(m)));
  for (const c of chunks) reader.push(c);
  expect(reader.idle).toBe(true);
  return out;
}

const messages = [Buffer.from('first message'), Buffer.alloc(0), Buffer.from([1, 2, 3, 4, 5, 6, 7]), Buffer.alloc(300, 7)];
const hex = (bufs: Buffer[]): string[] => bufs.map((b) => b.toString('hex'));

describe('MessageReader', () => {
  it('reads messages split at every byte boundary across two chunks', () => {
    const wire = framed(...messages);
    for (let cut = 0; cut <= wire.length; cut++) {
      const got = readAll([wire.subarray(0, cut), wire.subarray(cut)]);
      expect(hex(got), `cut at ${cut}`).toEqual(hex(messages));
    }
  });

  it('reads messages split at every pair of boundaries across three chunks', () => {
    const small = [Buffer.from('ab'), Buffer.alloc(0), Buffer.from('cdefghij')];
    const wire = framed(...small);
    for (let a = 0; a <= wire.length; a++) {
      for (let b = a; b <= wire.length; b++) {
        expect(hex(readAll([wire.subarray(0, a), wire.subarray(a, b), wire.subarray(b)])), `cuts ${a} ${b}`).toEqual(hex(small));
      }
    }
  });

  it('reads messages delivered one byte per chunk', () => {
    const wire = framed(Buffer.from('abc'), Buffer.alloc(0), Buffer.from('defgh'));
    const chunks = [...wire].map((b) => Buffer.from([b]));
    expect(readAll(chunks)).toEqual([Buffer.from('abc'), Buffer.alloc(0), Buffer.from('defgh')]);
  });

  it('reads several messages in one chunk as views of it (no copy)', () => {
    const wire = framed(Buffer.from('one'), Buffer.from('two'), Buffer.from('three'));
    const views: Buffer[] = [];
    new MessageReader(1024, (m) => views.push(m)).push(wire);
    expect(views.map(String)).toEqual(['one', 'two', 'three']);
    for (const v of views) expect(v.buffer).toBe(wire.buffer);
  });

  it('is not idle inside a message', () => {
    const wire = framed(Buffer.from('abcdef'));
    const reader = new MessageReader(1024, () => {});
    reader.push(wire.subarray(0, 3));
    expect(reader.idle).toBe(false);
    reader.push(wire.subarray(3, 8));
    expect(reader.idle).toBe(false);
    reader.push(wire.subarray(8));
    expect(reader.idle).toBe(true);
  });

  it('refuses a message over the maximum size with RESOURCE_EXHAUSTED, before buffering it', () => {
    const reader = new MessageReader(100, () => {});
    const head = framed(Buffer.alloc(101)).subarray(0, 5);
    expect(() => reader.push(head)).toThrow(FrameError);
    try {
      new MessageReader(100, () => {}).push(head);
    } catch (err) {
      expect((err as FrameError).code).toBe(Status.RESOURCE_EXHAUSTED);
      expect((err as FrameError).message).toMatch(/101 vs\. 100/);
    }
    expect(readAll([framed(Buffer.alloc(100))], 100)).toHaveLength(1);
  });

  it('refuses the compressed flag', () => {
    const wire = framed(Buffer.from('zipped'));
    wire[0] = 1;
    let err: unknown;
    try {
      new MessageReader(1024, () => {}).push(wire);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FrameError);
    expect((err as FrameError).code).toBe(Status.UNIMPLEMENTED);
    expect((err as FrameError).message).toBe('compressed messages are not supported');
    // A flag byte that is neither 0 nor 1 is a malformed frame.
    wire[0] = 7;
    expect(() => new MessageReader(1024, () => {}).push(wire)).toThrow(/compressed messages are not supported/);
  });
});

describe('encodeMessage', () => {
  it('prefixes a small message in one buffer and a large one as prefix + the message itself', () => {
    const small = encodeMessage(Buffer.from('hi'));
    expect(small).toHaveLength(1);
    expect([...small[0]!]).toEqual([0, 0, 0, 0, 2, 0x68, 0x69]);
    const bigMsg = Buffer.alloc(64 * 1024, 1);
    const big = encodeMessage(bigMsg);
    expect(big).toHaveLength(2);
    expect([...big[0]!]).toEqual([0, 0, 1, 0, 0]);
    expect(big[1]).toBe(bigMsg);
  });
});

describe('MessageReader: pause', () => {
  const msgs = [Buffer.from('one'), Buffer.from('two'), Buffer.from('three'), Buffer.from('four')];

  it('a pause from a message handler stops the rest of that chunk; resume delivers it, in order, with later chunks', () => {
    const out: string[] = [];
    const reader = new MessageReader(1 << 20, (m) => {
      out.push(m.toString());
      if (m.toString() === 'one') reader.pause();
    });
    const wire = framed(...msgs);
    const cut = framed(msgs[0]!, msgs[1]!).length + 4; // 'one' and 'two' whole, 'three' split
    reader.push(wire.subarray(0, cut));
    expect(out).toEqual(['one']);
    expect(reader.holding).toBe(true);
    reader.push(wire.subarray(cut)); // a chunk that arrives while paused waits behind the held one
    expect(out).toEqual(['one']);
    reader.resume();
    expect(out).toEqual(['one', 'two', 'three', 'four']);
    expect(reader.holding).toBe(false);
    expect(reader.idle).toBe(true);
  });

  it('paused again while delivering held messages: stops there; a pause and resume inside one handler changes nothing', () => {
    const out: string[] = [];
    const reader = new MessageReader(1 << 20, (m) => {
      out.push(m.toString());
      if (m.toString() === 'two' || m.toString() === 'one') reader.pause();
      if (m.toString() === 'one') reader.resume();
    });
    reader.push(framed(...msgs));
    expect(out).toEqual(['one', 'two']);
    reader.resume();
    expect(out).toEqual(['one', 'two', 'three', 'four']);
  });

  it('a refused message among the held ones throws from resume()', () => {
    const reader = new MessageReader(4, (m) => {
      if (m.toString() === 'one') reader.pause();
    });
    reader.push(framed(Buffer.from('one'), Buffer.from('toolong')));
    expect(() => reader.resume()).toThrow(FrameError);
  });
});
