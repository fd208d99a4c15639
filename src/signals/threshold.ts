/**
 * Envoy-style health thresholds, pure: a target starts 'unknown'; its first
 * success makes it healthy at once (as Envoy does for new hosts); afterwards it
 * turns unhealthy after `unhealthyThreshold` consecutive failures and healthy
 * again after `healthyThreshold` consecutive successes.
 */
import type { HealthStatus, ProbeOutcome, ProbeState, UnsupportedCode } from './probe-types.js';

export interface Thresholds {
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

export interface ThresholdState {
  readonly status: HealthStatus;
  readonly successes: number;
  readonly failures: number;
}

export const INITIAL_THRESHOLD_STATE: ThresholdState = { status: 'unknown', successes: 0, failures: 0 };

export function recordProbe(state: ThresholdState, ok: boolean, t: Thresholds): ThresholdState {
  if (ok) {
    const successes = state.successes + 1;
    const healthy = state.status === 'unknown' || state.status === 'healthy' || successes >= t.healthyThreshold;
    return { status: healthy ? 'healthy' : state.status, successes, failures: 0 };
  }
  const failures = state.failures + 1;
  const unhealthy = state.status === 'unhealthy' || failures >= t.unhealthyThreshold;
  return { status: unhealthy ? 'unhealthy' : state.status, successes: 0, failures };
}

/**
 * Outcome bookkeeping of one probed target: thresholds plus reachability. Pure.
 * An "unsupported" answer (no health signal) proves the target is reachable,
 * starts the thresholds over and reports status 'unsupported' until another
 * kind of answer arrives.
 */
export class ProbeTracker {
  private threshold: ThresholdState = INITIAL_THRESHOLD_STATE;
  private unsupported: UnsupportedCode | undefined;
  private everReached = false;
  private unansweredStreak = 0;
  private lastProbeAt: number | undefined;
  private lastError: string | undefined;

  constructor(private readonly t: Thresholds) {}

  record(outcome: ProbeOutcome): void {
    this.unsupported = outcome.unsupported;
    this.threshold = outcome.unsupported ? INITIAL_THRESHOLD_STATE : recordProbe(this.threshold, outcome.ok, this.t);
    if (outcome.reached) {
      this.everReached = true;
      this.unansweredStreak = 0;
    } else {
      this.unansweredStreak++;
    }
    this.lastProbeAt = outcome.at;
    this.lastError = outcome.ok ? undefined : (outcome.detail ?? outcome.reason);
  }

  state(): ProbeState {
    return {
      ...(this.unsupported === undefined ? { status: this.threshold.status } : { status: 'unsupported', code: this.unsupported }),
      reachable: this.everReached && this.unansweredStreak < this.t.unhealthyThreshold,
      everReached: this.everReached,
      ...(this.lastProbeAt === undefined ? {} : { lastProbeAt: this.lastProbeAt }),
      ...(this.lastError === undefined ? {} : { lastError: this.lastError }),
    };
  }
}
