import { afterEach, describe, expect, it } from 'vitest';
import { ProbeLoop } from '../../src/signals/probe-loop.js';
import type { ProbeOutcome, ProbeState } from '../../src/signals/probe-types.js';
import { eventually } from '../helpers/eventually.js';

/** A prober whose probes answer from a script, counting releases. */
class Scripted extends ProbeLoop {
  released = 0;
  probes = 0;

  constructor(
    private readonly script: readonly boolean[],
    onResult: (o: ProbeOutcome, s: ProbeState) => void,
  ) {
    super({ intervalMs: 5, healthyThreshold: 2, unhealthyThreshold: 2 }, onResult);
  }

  probeOnce(): Promise<ProbeOutcome> {
    const ok = this.script[this.probes++ % this.script.length]!;
    return Promise.resolve(ok ? { ok, reached: true, at: this.probes } : { ok, reached: false, reason: 'timeout', at: this.probes });
  }

  protected release(): void {
    this.released++;
  }
}

const loops: Scripted[] = [];
afterEach(() => {
  for (const l of loops.splice(0)) l.stop();
});

describe('ProbeLoop', () => {
  it('records each outcome against the thresholds and reports it with the new state', async () => {
    const seen: [boolean, string][] = [];
    const loop = new Scripted([true, false, false, true, true], (o, s) => seen.push([o.ok, s.status]));
    loops.push(loop);
    expect(loop.state().status).toBe('unknown');
    loop.start();
    await eventually(() => expect(seen.length).toBeGreaterThanOrEqual(5));
    expect(seen.slice(0, 5)).toEqual([
      [true, 'healthy'],
      [false, 'healthy'],
      [false, 'unhealthy'],
      [true, 'unhealthy'],
      [true, 'healthy'],
    ]);
    expect(loop.state()).toMatchObject({ status: expect.any(String), everReached: true });
  });

  it('stop ends the probing and releases what the prober holds', async () => {
    let reports = 0;
    const loop = new Scripted([true], () => reports++);
    loop.start();
    await eventually(() => expect(reports).toBeGreaterThan(0));
    loop.stop();
    expect(loop.released).toBe(1);
    const after = loop.probes;
    await new Promise((r) => setTimeout(r, 30));
    expect(loop.probes).toBe(after);
  });
});
