// Which pools have no load signal, from the config alone and from a scrape's state.
import { describe, expect, it } from 'vitest';
import { configWarnings, formatWarnings, noLoadSignal } from '../../src/signals/load-signal.js';
import type { ScrapeState } from '../../src/signals/metrics-scraper.js';
import { planCandidate } from '../../src/signals/plan.js';
import { eppTarget, parentTarget, signalsConfig, viaEpp, viaParent } from './fixtures.js';

const config = signalsConfig({ a: {}, b: { epp: { metrics: { enabled: false } } } });
const planOf = (c: Parameters<typeof planCandidate>[0]) => planCandidate(c, config);
const onA = planOf(viaEpp('a', 'p', eppTarget('a', '10.0.0.1:9002')));
const onB = planOf(viaEpp('b', 'q', eppTarget('b', '10.0.0.2:9002')));
const scrape = (s: Partial<ScrapeState>): ScrapeState => ({ pools: new Map(), consecutiveFailures: 0, ...s });

describe('noLoadSignal', () => {
  it('a member whose metrics are off: every pool of its EPPs, naming the field', () => {
    expect(noLoadSignal(onB, config)).toMatchObject({ cluster: 'b', candidate: 'b/ns/q', field: 'clusters[1].epp.metrics.enabled' });
    expect(noLoadSignal(onA, config)).toBeUndefined();
  });

  it('from the scrape: failing, or without the pool\'s series; fine once the pool is in a successful scrape', () => {
    expect(noLoadSignal(onA, config, scrape({ consecutiveFailures: 2, lastError: 'http-401: HTTP 401' }))?.message).toContain('fails (http-401: HTTP 401)');
    expect(noLoadSignal(onA, config, scrape({ lastSuccessAt: 1, pools: new Map([['other', {}]]) }))?.message).toContain('no series labelled name="p"');
    expect(noLoadSignal(onA, config, scrape({ lastSuccessAt: 1, pools: new Map([['p', { queueSize: 0 }]]) }))).toBeUndefined();
    // Not scraped yet: no verdict.
    expect(noLoadSignal(onA, config, scrape({}))).toBeUndefined();
  });

  it('a pool reached through its parent without an EPP has nothing to scrape: no warning', () => {
    expect(noLoadSignal(planOf(viaParent('b', 'r', parentTarget('b', '10.9.0.1:443'))), config)).toBeUndefined();
  });
});

describe('configWarnings and formatWarnings', () => {
  it('member security first, then pools; one "warning:" line each', () => {
    const skip = signalsConfig({ a: { epp: { tls: { insecureSkipVerify: true }, metrics: { enabled: false } } } });
    const ws = configWarnings(skip, [planCandidate(viaEpp('a', 'p', eppTarget('a', '10.0.0.1:9002')), skip)]);
    expect(ws.map((w) => w.field)).toEqual(['clusters[0].epp.tls.insecureSkipVerify', 'clusters[0].epp.metrics.enabled']);
    const text = formatWarnings(ws);
    expect(text.split('\n')).toHaveLength(3);
    expect(text).toMatch(/^warning: cluster a: clusters\[0\]\.epp\.tls\.insecureSkipVerify: /);
    expect(formatWarnings([])).toBe('');
  });
});
