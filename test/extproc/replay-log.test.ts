import { describe, expect, it } from 'vitest';
import { ReplayLog } from '../../src/extproc/replay-log.js';

describe('ReplayLog', () => {
  it('keeps the raw buffers (no copies) up to the bound, then gives up for good', () => {
    const log = new ReplayLog(10);
    const a = Buffer.from('12345');
    const b = Buffer.from('67890');
    expect(log.add(a)).toBe(true);
    expect(log.add(b)).toBe(true);
    expect(log.messages[0]).toBe(a);
    expect(log.messages).toEqual([a, b]);
    expect(log.add(Buffer.from('x'))).toBe(false);
    expect(log.messages).toEqual([]);
    expect(log.size).toBe(11);
  });
});
