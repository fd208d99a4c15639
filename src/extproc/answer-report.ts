/**
 * The report of what a member's answer rules (config/answer-rules.ts) refused or
 * dropped: a metric per finding and a warning at most once per member and reason
 * every {@link WARN_INTERVAL_MS} (with the count since).
 */
import type { Logger } from 'pino';
import type { GuardFinding } from '../protocol/answer-guard.js';
import type { DataPathObserver } from './observer.js';

export const WARN_INTERVAL_MS = 10_000;

/** Counts every finding and warns, rate-limited per member and reason. */
export class AnswerGuardReport {
  /** "cluster reason" -> when it was last logged and how many findings since. */
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly observer: DataPathObserver,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly now: () => number = Date.now,
  ) {}

  report(cluster: string, pool: string, finding: GuardFinding, refused: boolean): void {
    this.observer.eppAnswerGuarded(cluster, finding.reason);
    const key = `${cluster} ${finding.reason}`;
    const now = this.now();
    const seen = this.last.get(key);
    if (seen !== undefined && now - seen.at < WARN_INTERVAL_MS) {
      seen.suppressed++;
      return;
    }
    this.last.set(key, { at: now, suppressed: 0 });
    this.logger.warn(
      { cluster, pool, reason: finding.reason, detail: finding.detail, suppressedSinceLastWarning: seen?.suppressed ?? 0 },
      refused ? 'refused an EPP answer (failed over like any EPP failure)' : 'dropped part of an EPP answer',
    );
  }
}
