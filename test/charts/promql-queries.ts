/**
 * The PromQL of what the chart ships for monitoring (the Grafana dashboard and the
 * PrometheusRule), parsed with Prometheus's own PromQL grammar (@prometheus-io/lezer-promql),
 * and the series a running router or export controller exposes on /metrics, so a test can
 * hold every query to what is really exported.
 */
import { parser } from '@prometheus-io/lezer-promql';
import { find, renderChart, type K8sObject } from './render-chart.js';

export interface Query {
  /** Where it is: "dashboard panel <title>" or "alert <name>". */
  readonly where: string;
  readonly expr: string;
  /** Labels the query's legend names ({{label}}), for dashboard targets. */
  readonly legendLabels: readonly string[];
}

interface Panel {
  title?: string;
  targets?: { expr: string; legendFormat?: string }[];
  panels?: Panel[];
}

/** Every query of the dashboard and the alert rules, as the chart renders them with both enabled. */
export function shippedQueries(): Query[] {
  const r = renderChart({ dashboards: { enabled: true }, prometheusRule: { enabled: true } });
  const cm = find(r, 'ConfigMap', '-dashboard') as K8sObject & { data: Record<string, string> };
  const dashboard = JSON.parse(cm.data['mcip-router.json']!) as { panels: Panel[] };
  const out: Query[] = [];
  const walk = (panels: Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        const legendLabels = [...(t.legendFormat ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]!);
        out.push({ where: `dashboard panel "${p.title ?? ''}"`, expr: t.expr, legendLabels });
      }
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  const rule = find(r, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: { alert: string; expr: string }[] }[] } };
  for (const g of rule.spec.groups) for (const a of g.rules) out.push({ where: `alert ${a.alert}`, expr: a.expr, legendLabels: [] });
  return out;
}

/** Grafana's built-in variables, replaced as Grafana does before the query reaches Prometheus. */
function interpolate(expr: string): string {
  return expr.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '30s').replaceAll('$__range', '1h');
}

export interface ParsedQuery {
  readonly metrics: readonly string[];
  readonly labels: readonly string[];
  /**
   * Labels held to particular metrics: a matcher's label to its selector's metric; an
   * aggregation's by/without label to the metrics it aggregates (one of them must carry it).
   */
  readonly scoped: readonly { readonly label: string; readonly metrics: readonly string[] }[];
  /** Syntax errors, as the offending text. */
  readonly errors: readonly string[];
}

export function parseQuery(expr: string): ParsedQuery {
  const text = interpolate(expr);
  const tree = parser.parse(text);
  const metrics = new Set<string>();
  const labels = new Set<string>();
  const errors: string[] = [];
  const scoped: { label: string; metrics: string[] }[] = [];
  const slice = (n: { from: number; to: number }): string => text.slice(n.from, n.to);
  /** The metric names of the vector selectors under `node`. */
  const metricsUnder = (node: { from: number; to: number }): string[] => {
    const out: string[] = [];
    tree.iterate({
      from: node.from,
      to: node.to,
      enter(c) {
        if (c.from >= node.from && c.to <= node.to && c.name === 'Identifier' && c.node.parent?.name === 'VectorSelector') out.push(slice(c));
      },
    });
    return out;
  };
  tree.iterate({
    enter(n) {
      if (n.type.isError) errors.push(`at ${n.from}: "${text.slice(Math.max(0, n.from - 10), n.to + 10)}"`);
      else if (n.name === 'Identifier' && n.node.parent?.name === 'VectorSelector') metrics.add(slice(n));
      else if (n.name === 'LabelName') {
        const label = slice(n);
        labels.add(label);
        const parent = n.node.parent;
        const selector = parent?.name === 'UnquotedLabelMatcher' ? parent.parent?.parent : undefined;
        const metric = selector?.name === 'VectorSelector' ? selector.getChild('Identifier') : null;
        if (metric) scoped.push({ label, metrics: [slice(metric)] });
        const aggregate = parent?.name === 'GroupingLabels' && parent.parent?.name === 'AggregateModifier' ? parent.parent.parent : undefined;
        if (aggregate?.name === 'AggregateExpr') scoped.push({ label, metrics: metricsUnder(aggregate) });
      }
    },
  });
  return { metrics: [...metrics], labels: [...labels], scoped, errors };
}

/** Series families a /metrics page exposes (histograms as their _bucket, _sum and _count series), each with its label names. */
export function exposedSeries(text: string, into = new Map<string, Set<string>>()): Map<string, Set<string>> {
  const add = (name: string, label?: string): void => {
    let s = into.get(name);
    if (s === undefined) into.set(name, (s = new Set()));
    if (label !== undefined) s.add(label);
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) {
      const [, name, kind] = type;
      if (kind === 'histogram') {
        for (const suffix of ['_sum', '_count']) add(name! + suffix);
        add(`${name}_bucket`, 'le');
      } else add(name!);
      continue;
    }
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample || line.startsWith('#')) continue;
    add(sample[1]!);
    for (const m of (sample[2] ?? '').matchAll(/(\w+)="(?:[^"\\]|\\.)*"/g)) add(sample[1]!, m[1]!);
  }
  return into;
}

interface RegisteredMetric {
  readonly name: string;
  readonly type?: string;
  readonly labelNames?: readonly string[];
}

/** The label names of every metric in a running process's registry, also of those with no sample yet. */
export function registeredSeries(metrics: readonly unknown[], into = new Map<string, Set<string>>()): Map<string, Set<string>> {
  for (const raw of metrics) {
    const m = raw as RegisteredMetric;
    const names = m.type === 'histogram' ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`] : [m.name];
    for (const n of names) {
      let s = into.get(n);
      if (s === undefined) into.set(n, (s = new Set()));
      for (const l of m.labelNames ?? []) s.add(l);
      if (n.endsWith('_bucket')) s.add('le');
    }
  }
  return into;
}
