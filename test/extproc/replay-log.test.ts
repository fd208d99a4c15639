import { describe, expect, it } from 'vitest';
import { ReplayLog } from '../../src/extproc/replay-log.js';

describe('ReplayLog', () => {
  it('keeps the raw buffers (no copies) up to the bound, then gives up for good', () => {
    const log = new ReplayLog(10);
    const own = (text: string): Buffer => {
      const b = Buffer.allocUnsafeSlow(text.length); // a message with a store of its own, as the transports hand on
      b.write(text);
      return b;
    };
    const a = own('12345');
    const b = own('67890');
    expect(log.add(a)).toBe(true);
    expect(log.add(b)).toBe(true);
    expect(log.messages[0]).toBe(a);
    expect(log.messages).toEqual([a, b]);
    expect(log.add(Buffer.from('x'))).toBe(false);
    expect(log.messages).toEqual([]);
    expect(log.size).toBe(11);
  });
});

describe('ReplayLog: views of a larger read', () => {
  it('a small view of a large socket read is copied (it would keep the read alive); a view that is most of its read is not', () => {
    const read = Buffer.allocUnsafeSlow(64 * 1024).fill(7);
    const small = read.subarray(100, 140);
    const most = read.subarray(0, 60 * 1024);
    const log = new ReplayLog(1 << 20);
    log.add(small);
    log.add(most);
    expect(log.messages[0]!.equals(small)).toBe(true);
    expect(log.messages[0]!.buffer).not.toBe(read.buffer);
    expect(log.messages[0]!.buffer.byteLength).toBeLessThanOrEqual(8 * 1024);
    expect(log.messages[1]).toBe(most);
  });
});
