/**
 * Passive outlier detection, pure and clock-injected. The data path reports
 * each attempt against a candidate's EPP; `consecutiveFailures` failures in a
 * row eject the candidate for baseEjectionMs * 2^(level), capped at
 * maxEjectionMs, where level counts recent ejections. Once the ejection time has
 * passed, the next successful probe (or data-path success) re-admits it. The
 * level decays by one per baseEjectionMs spent admitted (like Envoy's
 * ejection multiplier), so a flapping candidate backs off longer and longer
 * while a recovered one starts over.
 */
import type { Clock, FailureReason } from './types.js';

export interface OutlierSettings {
  readonly consecutiveFailures: number;
  readonly baseEjectionMs: number;
  readonly maxEjectionMs: number;
}

export interface OutlierState {
  readonly ejected: boolean;
  /** While ejected: when re-admission becomes possible. */
  readonly ejectedUntil?: number;
  readonly consecutiveFailures: number;
  /** Ejections counted for the backoff (decays while admitted). */
  readonly level: number;
  readonly lastReason?: FailureReason;
}

/** What changed, for logs and metrics. */
export type OutlierTransition =
  | { readonly type: 'ejected'; readonly candidateId: string; readonly durationMs: number; readonly reason: FailureReason; readonly level: number }
  | { readonly type: 'readmitted'; readonly candidateId: string; readonly by: 'probe' | 'request' };

interface Entry {
  ejected: boolean;
  ejectedUntil: number;
  failures: number;
  level: number;
  /** When the level was last updated (ejection or decay). */
  levelAt: number;
  lastReason?: FailureReason;
}

const IDLE: OutlierState = { ejected: false, consecutiveFailures: 0, level: 0 };

export class OutlierDetector {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private settings: OutlierSettings,
    private readonly clock: Clock,
    private readonly onTransition: (t: OutlierTransition) => void = () => {},
  ) {}

  setSettings(settings: OutlierSettings): void {
    this.settings = settings;
  }

  reportFailure(candidateId: string, reason: FailureReason): void {
    const now = this.clock.now();
    const e = this.entry(candidateId, now);
    e.lastReason = reason;
    if (e.ejected) return; // panic-mode traffic to an ejected candidate does not extend its ejection
    e.failures++;
    if (e.failures < this.settings.consecutiveFailures) return;
    this.decay(e, now);
    const durationMs = Math.min(this.settings.maxEjectionMs, this.settings.baseEjectionMs * 2 ** Math.min(e.level, 30));
    e.ejected = true;
    e.ejectedUntil = now + durationMs;
    e.failures = 0;
    e.level++;
    e.levelAt = now;
    this.onTransition({ type: 'ejected', candidateId, durationMs, reason, level: e.level });
  }

  reportSuccess(candidateId: string): void {
    const e = this.entries.get(candidateId);
    if (!e) return;
    e.failures = 0;
    if (e.ejected) this.tryReadmit(candidateId, e, 'request');
  }

  /** A health or parent probe of the candidate succeeded. */
  probeSucceeded(candidateId: string): void {
    const e = this.entries.get(candidateId);
    if (e?.ejected) this.tryReadmit(candidateId, e, 'probe');
  }

  isEjected(candidateId: string): boolean {
    return this.entries.get(candidateId)?.ejected ?? false;
  }

  state(candidateId: string): OutlierState {
    const e = this.entries.get(candidateId);
    if (!e) return IDLE;
    const base = { ejected: e.ejected, consecutiveFailures: e.failures, level: e.level };
    const withUntil = e.ejected ? { ...base, ejectedUntil: e.ejectedUntil } : base;
    return e.lastReason === undefined ? withUntil : { ...withUntil, lastReason: e.lastReason };
  }

  /** Forgets candidates that left the snapshot. */
  retain(ids: ReadonlySet<string>): void {
    for (const id of [...this.entries.keys()]) if (!ids.has(id)) this.entries.delete(id);
  }

  private entry(candidateId: string, now: number): Entry {
    let e = this.entries.get(candidateId);
    if (!e) {
      e = { ejected: false, ejectedUntil: 0, failures: 0, level: 0, levelAt: now };
      this.entries.set(candidateId, e);
    }
    return e;
  }

  private tryReadmit(candidateId: string, e: Entry, by: 'probe' | 'request'): void {
    const now = this.clock.now();
    if (now < e.ejectedUntil) return;
    e.ejected = false;
    e.failures = 0;
    e.levelAt = now;
    this.onTransition({ type: 'readmitted', candidateId, by });
  }

  /** Lowers the level by one per baseEjectionMs admitted since the last update. */
  private decay(e: Entry, now: number): void {
    if (e.level === 0) return;
    const steps = Math.floor((now - e.levelAt) / this.settings.baseEjectionMs);
    e.level = Math.max(0, e.level - steps);
  }
}
