import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { WARN_INTERVAL_MS } from '../../src/extproc/answer-report.js';
import { RelayReport } from '../../src/relay/relay-report.js';

describe('relay report', () => {
  it('counts every refusal and forward, warns at most once per reason and interval with the count since', async () => {
    const registry = new Registry();
    const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
    let now = 1_000_000;
    const report = new RelayReport(registry, { warn: ((obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg })) as never }, () => now);
    const text = await registry.metrics();
    expect(text).toContain('mcip_relay_refusals_total{reason="destination_denied"} 0');
    expect(text).toContain('mcip_relay_forwards_total{kind="parent"} 0');
    for (let i = 0; i < 5; i++) report.refused('forged', 'the relay token is not signed with a relay key');
    report.refused('replayed', 'the relay token was used before', { cluster: 'b', target: '10.0.0.1:80' });
    report.forwarded('endpoint');
    expect(warnings.map((w) => [w.obj.reason, w.obj.suppressedSinceLastWarning])).toEqual([['forged', 0], ['replayed', 0]]);
    now += WARN_INTERVAL_MS;
    report.refused('forged', 'again');
    expect(warnings.at(-1)!.obj).toMatchObject({ reason: 'forged', suppressedSinceLastWarning: 4, detail: 'again' });
    const after = await registry.metrics();
    expect(after).toContain('mcip_relay_refusals_total{reason="forged"} 6');
    expect(after).toContain('mcip_relay_forwards_total{kind="endpoint"} 1');
  });
});
