import { describe, expect, it } from 'vitest';
import { OutlierDetector, type OutlierTransition } from '../../src/signals/outlier.js';
import { INITIAL_THRESHOLD_STATE, ProbeTracker, recordProbe, type ThresholdState } from '../../src/signals/threshold.js';

function fakeClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

const SETTINGS = { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000 };

function setup() {
  const clock = fakeClock();
  const transitions: OutlierTransition[] = [];
  const d = new OutlierDetector(SETTINGS, clock, (t) => transitions.push(t));
  const fail = (n: number, id = 'c/ns/p') => {
    for (let i = 0; i < n; i++) d.reportFailure(id, 'connect');
  };
  return { clock, d, transitions, fail };
}

describe('OutlierDetector', () => {
  it('ejects after consecutive failures only; a success resets the count', () => {
    const { d, fail, transitions } = setup();
    fail(4);
    d.reportSuccess('c/ns/p');
    fail(4);
    expect(d.isEjected('c/ns/p')).toBe(false);
    fail(1);
    expect(d.isEjected('c/ns/p')).toBe(true);
    expect(transitions).toEqual([{ type: 'ejected', candidateId: 'c/ns/p', durationMs: 10_000, reason: 'connect', level: 1 }]);
    expect(d.isEjected('other')).toBe(false);
  });

  it('stays ejected until the backoff passed, then a successful probe re-admits', () => {
    const { d, fail, clock, transitions } = setup();
    fail(5);
    clock.advance(9_999);
    d.probeSucceeded('c/ns/p');
    d.reportSuccess('c/ns/p');
    expect(d.isEjected('c/ns/p')).toBe(true);
    clock.advance(1);
    expect(d.isEjected('c/ns/p')).toBe(true); // time alone does not re-admit
    d.probeSucceeded('c/ns/p');
    expect(d.isEjected('c/ns/p')).toBe(false);
    expect(transitions.at(-1)).toEqual({ type: 'readmitted', candidateId: 'c/ns/p', by: 'probe' });
  });

  it('failures while ejected neither extend the ejection nor count', () => {
    const { d, fail, clock } = setup();
    fail(5);
    clock.advance(5_000);
    fail(20);
    clock.advance(5_000);
    d.probeSucceeded('c/ns/p');
    expect(d.isEjected('c/ns/p')).toBe(false);
    expect(d.state('c/ns/p').consecutiveFailures).toBe(0);
  });

  it('backoff doubles on quick re-ejections and is capped at maxEjectionMs', () => {
    const { d, fail, clock, transitions } = setup();
    const durations: number[] = [];
    for (let i = 0; i < 8; i++) {
      fail(5);
      const last = transitions.at(-1)!;
      expect(last.type).toBe('ejected');
      if (last.type === 'ejected') durations.push(last.durationMs);
      clock.advance(durations.at(-1)!);
      d.probeSucceeded('c/ns/p');
      expect(d.isEjected('c/ns/p')).toBe(false);
    }
    expect(durations).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
  });

  it('the backoff decays while the candidate stays admitted', () => {
    const { d, fail, clock, transitions } = setup();
    fail(5);
    clock.advance(10_000);
    d.probeSucceeded('c/ns/p');
    fail(5);
    clock.advance(20_000);
    d.probeSucceeded('c/ns/p'); // level 2
    clock.advance(20_000); // two base periods admitted: level back to 0
    fail(5);
    const last = transitions.at(-1)!;
    expect(last).toMatchObject({ type: 'ejected', durationMs: 10_000 });
  });

  it('a data-path success after the backoff re-admits too (panic-mode traffic)', () => {
    const { d, fail, clock, transitions } = setup();
    fail(5);
    clock.advance(10_000);
    d.reportSuccess('c/ns/p');
    expect(d.isEjected('c/ns/p')).toBe(false);
    expect(transitions.at(-1)).toMatchObject({ type: 'readmitted', by: 'request' });
  });

  it('retain() forgets candidates that left the snapshot', () => {
    const { d, fail } = setup();
    fail(5, 'a/ns/p');
    fail(5, 'b/ns/p');
    d.retain(new Set(['b/ns/p']));
    expect(d.isEjected('a/ns/p')).toBe(false);
    expect(d.isEjected('b/ns/p')).toBe(true);
  });
});

describe('health thresholds', () => {
  const t = { healthyThreshold: 2, unhealthyThreshold: 3 };
  const run = (seq: boolean[], from: ThresholdState = INITIAL_THRESHOLD_STATE) => {
    const out: string[] = [];
    let s = from;
    for (const ok of seq) {
      s = recordProbe(s, ok, t);
      out.push(s.status);
    }
    return out;
  };

  it('first success makes an unknown target healthy; 3 failures make it unhealthy; 2 successes bring it back', () => {
    expect(run([true, false, false, true, false, false, false, true, true])).toEqual([
      'healthy', 'healthy', 'healthy', 'healthy', 'healthy', 'healthy', 'unhealthy', 'unhealthy', 'healthy',
    ]);
  });

  it('an unknown target that never answers turns unhealthy after 3 failures', () => {
    expect(run([false, false, false])).toEqual(['unknown', 'unknown', 'unhealthy']);
  });

  it('ProbeTracker: reachability needs an answer and is lost after unhealthyThreshold unanswered probes', () => {
    const p = new ProbeTracker(t);
    expect(p.state()).toMatchObject({ status: 'unknown', reachable: false, everReached: false });
    p.record({ ok: false, reached: false, reason: 'timeout', at: 1 });
    expect(p.state()).toMatchObject({ reachable: false, lastError: 'timeout', lastProbeAt: 1 });
    p.record({ ok: false, reached: true, reason: 'not-serving', at: 2 });
    expect(p.state()).toMatchObject({ reachable: true, everReached: true });
    for (let i = 0; i < 2; i++) p.record({ ok: false, reached: false, at: 3 + i });
    expect(p.state().reachable).toBe(true);
    p.record({ ok: false, reached: false, at: 9 });
    expect(p.state()).toMatchObject({ reachable: false, everReached: true, status: 'unhealthy' });
  });
});
