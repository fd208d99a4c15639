import { describe, expect, it } from 'vitest';
import { upstreamFlags, weightedRotation } from '../../bench/lib/upstreams.js';
import { EPP_PORT_COUNT, EPP_PORT_WEIGHTS } from '../../bench/lib/topology.js';

describe('the floor proxies spread their streams like the router', () => {
  it('weightedRotation gives each upstream its share in every round of sum(weights) picks, without long runs', () => {
    const next = weightedRotation(EPP_PORT_WEIGHTS);
    const total = EPP_PORT_WEIGHTS.reduce((a, b) => a + b, 0);
    for (let round = 0; round < 3; round++) {
      const counts = EPP_PORT_WEIGHTS.map(() => 0);
      let run = 0;
      let longest = 0;
      let last = -1;
      for (let i = 0; i < total; i++) {
        const k = next();
        counts[k]!++;
        run = k === last ? run + 1 : 1;
        longest = Math.max(longest, run);
        last = k;
      }
      expect(counts).toEqual([...EPP_PORT_WEIGHTS]);
      // 60 of 100 to the first port, but never 60 in a row: interleaved as the router's random picks are.
      expect(longest).toBeLessThanOrEqual(3);
    }
  });

  it('one weight per EPP port of the topology; flags parse and are checked', () => {
    expect(EPP_PORT_WEIGHTS).toHaveLength(EPP_PORT_COUNT);
    expect(upstreamFlags(['--target', 'a:1,b:2', '--weights', '3,1'])).toEqual({ targets: ['a:1', 'b:2'], weights: [3, 1] });
    expect(upstreamFlags(['--target', 'a:1'])).toEqual({ targets: ['a:1'], weights: [1] });
    expect(() => upstreamFlags(['--target', 'a:1,b:2', '--weights', '3'])).toThrow('one positive integer per --target entry');
    expect(() => upstreamFlags([])).toThrow('--target');
  });
});
