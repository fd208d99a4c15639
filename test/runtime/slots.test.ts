import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/runtime/slots.js';

/** A job that runs until its release() is called. */
function gate(): { job: () => Promise<string>; release: (v: string) => void; started: boolean } {
  let release!: (v: string) => void;
  const g = {
    started: false,
    release: (v: string) => release(v),
    job: () => {
      g.started = true;
      return new Promise<string>((r) => (release = r));
    },
  };
  return g;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Slots', () => {
  it('runs at most `size` jobs at once, the rest in the order they came', async () => {
    const slots = new Slots(2);
    const gates = [gate(), gate(), gate(), gate()];
    const results = gates.map((g) => slots.run(g.job));
    await tick();
    expect(gates.map((g) => g.started)).toEqual([true, true, false, false]);
    expect(slots.queued).toBe(2);
    gates[1]!.release('b');
    await tick();
    expect(gates.map((g) => g.started)).toEqual([true, true, true, false]);
    gates[0]!.release('a');
    gates[2]!.release('c');
    await tick();
    expect(gates[3]!.started).toBe(true);
    gates[3]!.release('d');
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd']);
    expect(slots.queued).toBe(0);
  });

  it('gives the slot back when a job fails', async () => {
    const slots = new Slots(1);
    await expect(slots.run(() => Promise.reject(new Error('no list')))).rejects.toThrow('no list');
    await expect(slots.run(() => Promise.resolve('next'))).resolves.toBe('next');
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new Slots(0)).toThrow(/positive integer, got 0/);
  });
});
