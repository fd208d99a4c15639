// The rate-limited report of what a member's answer rules refused or dropped.
import { describe, expect, it } from 'vitest';
import { AnswerGuardReport, WARN_INTERVAL_MS } from '../../src/extproc/answer-report.js';
import { RecordingObserver } from './scenario.js';

describe('AnswerGuardReport', () => {
  it('counts every finding and warns at most once per member and reason per interval', () => {
    const observer = new RecordingObserver();
    const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
    let now = 0;
    const report = new AnswerGuardReport(observer, { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }) } as never, () => now);
    const denied = { reason: 'destination_denied' as const, detail: 'x' };
    for (let i = 0; i < 5; i++) report.report('b', 'b/ns/p', denied, true);
    report.report('c', 'c/ns/p', denied, true);
    report.report('b', 'b/ns/p', { reason: 'header_not_allowed', detail: 'set header "authorization"' }, false);
    expect(observer.guarded).toHaveLength(7);
    expect(warnings.map((w) => [w.obj.cluster, w.obj.reason])).toEqual([['b', 'destination_denied'], ['c', 'destination_denied'], ['b', 'header_not_allowed']]);
    now += WARN_INTERVAL_MS;
    report.report('b', 'b/ns/p', denied, true);
    expect(warnings).toHaveLength(4);
    expect(warnings[3]!.obj.suppressedSinceLastWarning).toBe(4);
    expect(warnings[3]!.msg).toMatch(/refused an EPP answer/);
  });
});
