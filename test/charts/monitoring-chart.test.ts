// The chart's monitoring objects: the Grafana dashboard ConfigMap (sidecar convention) and
// the PrometheusRule, both opt-in; every alert carries a summary, a description and a
// runbook link to its entry in docs/operations.md.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseQuery, shippedQueries } from './promql-queries.js';
import { CHART_DIR, find, renderChart, REPO, type K8sObject } from './render-chart.js';

type Rule = { alert: string; expr: string; for?: string; labels: Record<string, string>; annotations: Record<string, string> };

const REQUIRED_ALERTS = [
  'McipMemberStale',
  'McipPoolNotReady',
  'McipPoolEjected',
  'McipRouteUnavailable',
  'McipEppAnswerViolations',
  'McipFailoverRate',
  'McipConfigRejected',
  'McipExportFailing',
  'McipExportLagging',
  'McipExportLeaderMissing',
  'McipImportLeaderMissing',
];

/** GitHub's anchor of a markdown heading. */
const anchor = (heading: string): string => heading.toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');

describe('monitoring objects of the chart', () => {
  it('are off by default', () => {
    const r = renderChart({});
    expect(r.objects.filter((o) => o.kind === 'PrometheusRule' || o.metadata.name.endsWith('-dashboard'))).toEqual([]);
  });

  it('the dashboard: a ConfigMap the Grafana sidecar loads, holding dashboards/mcip-router.json', () => {
    const r = renderChart({ dashboards: { enabled: true, namespace: 'monitoring', annotations: { grafana_folder: 'Inference' } } });
    const cm = find(r, 'ConfigMap', '-dashboard') as K8sObject & { data: Record<string, string> };
    expect(cm.metadata.labels!.grafana_dashboard).toBe('1');
    expect(cm.metadata.namespace).toBe('monitoring');
    expect(cm.metadata.annotations).toEqual({ grafana_folder: 'Inference' });
    const json = JSON.parse(cm.data['mcip-router.json']!) as { uid: string; panels: { type: string; title: string }[] };
    expect(json).toEqual(JSON.parse(readFileSync(path.join(CHART_DIR, 'dashboards/mcip-router.json'), 'utf8')));
    expect(json.uid).toBe('mcip-router');
    const titles = json.panels.map((p) => p.title);
    for (const t of ['Traffic share per cluster', 'Pick reasons', 'Failovers', 'EPP first answer p99', 'EPP errors', 'Pool readiness', 'Queue size', 'Signal age', 'Member stale', 'Export controller', 'Import controller', 'Open ext_proc streams', 'CPU']) {
      expect(titles).toContain(t);
    }
  });

  it('the PrometheusRule: every alert the runbook covers, each with summary, description and its runbook link', () => {
    const r = renderChart({ prometheusRule: { enabled: true, labels: { release: 'kps' }, runbookUrl: 'https://docs.example/operations.md' } });
    const rule = find(r, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: Rule[] }[] } };
    expect(rule.metadata.labels!.release).toBe('kps');
    const rules = rule.spec.groups.flatMap((g) => g.rules);
    expect(rules.map((a) => a.alert).sort()).toEqual([...REQUIRED_ALERTS].sort());
    const doc = readFileSync(path.join(REPO, 'docs/operations.md'), 'utf8');
    const headings = new Set([...doc.matchAll(/^#{2,4} (.+)$/gm)].map((m) => anchor(m[1]!)));
    for (const a of rules) {
      expect(a.annotations.summary, a.alert).toMatch(/\S/);
      expect(a.annotations.description, a.alert).toMatch(/\S/);
      expect(a.annotations.runbook_url).toBe(`https://docs.example/operations.md#${a.alert.toLowerCase()}`);
      expect(headings, `docs/operations.md has a heading for ${a.alert}`).toContain(a.alert.toLowerCase());
      expect(['warning', 'critical']).toContain(a.labels.severity);
      // Helm left Prometheus's own template variables alone.
      expect(`${a.annotations.summary} ${a.annotations.description}`).not.toContain('RUNBOOK_URL');
    }
    expect(rules.find((a) => a.alert === 'McipMemberStale')!.annotations.summary).toContain('{{ $labels.cluster }}');
  });

  it('every query parses as PromQL', () => {
    const queries = shippedQueries();
    const bad = queries.flatMap((q) => parseQuery(q.expr).errors.map((e) => `${q.where}: ${e}`));
    expect(bad).toEqual([]);
    // The parser does find errors: a query with a missing parenthesis is refused.
    expect(parseQuery('sum by (cluster (rate(mcip_requests_total[5m]))').errors).not.toEqual([]);
  });

  it('a query\'s labels are held to the metrics they apply to, not to any metric of the query', () => {
    // route is on mcip_requests_total, not on mcip_failovers_total: the matcher and the by() are each scoped to theirs.
    const q = parseQuery('sum by (route) (rate(mcip_failovers_total{route="a/b", reason!=""}[5m])) / on (instance) group_left sum by (route) (rate(mcip_requests_total[5m]))');
    expect(q.scoped).toEqual([
      { label: 'route', metrics: ['mcip_failovers_total'] },
      { label: 'route', metrics: ['mcip_failovers_total'] },
      { label: 'reason', metrics: ['mcip_failovers_total'] },
      { label: 'route', metrics: ['mcip_requests_total'] },
    ]);
  });
});
