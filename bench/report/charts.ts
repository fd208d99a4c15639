/**
 * The two charts of a run: latency distributions of the data path (one panel
 * per variant x load, one curve per set-up, percentile on a "nines" axis,
 * plus throughput vs concurrency), and the control plane's growth with size.
 */
import { curve, decodeHistogram } from '../lib/hist.js';
import { STREAM_SETUPS, type BenchResults, type Cell, type StreamCell } from '../lib/types.js';
import { renderChart, type Panel } from './svg.js';

/** x = -log10(1 - p): p50 -> 0.3, p90 -> 1, p99 -> 2, p99.9 -> 3. */
const nines = (p: number): number => -Math.log10(Math.max(1e-6, 1 - p / 100));
const NINES_TICKS: [number, string][] = [
  [0, 'p0'],
  [nines(50), 'p50'],
  [1, 'p90'],
  [2, 'p99'],
  [3, 'p99.9'],
  [4, 'p99.99'],
];

function caveat(r: BenchResults): string[] {
  const m = r.meta;
  return [
    `${m.date}${m.quick ? ' (quick mode)' : ''} · node ${m.node} · ${m.cpus} CPUs (${m.cpuModel}) · load average ${m.loadAvgStart.map((l) => l.toFixed(1)).join('/')} at start`,
    m.caveat,
  ];
}

export function latencyChart(r: BenchResults): string {
  const dp = r.dataPath;
  const panels: Panel[] = [];
  const groups = new Map<string, Cell[]>();
  for (const c of dp.cells) {
    const k = `${c.variant}|${c.label}`;
    groups.set(k, [...(groups.get(k) ?? []), c]);
  }
  for (const [k, cells] of groups) {
    const [variant, label] = k.split('|');
    panels.push({
      title: `${variant === '2k' ? '~2 KiB' : '~64 KiB'} body, ${label}`,
      x: { label: 'percentile', ticks: NINES_TICKS, min: 0, max: 4 },
      y: { label: 'exchange latency (ms)', log: true },
      series: dp.setups.map((s) => {
        const cell = cells.find((c) => c.setup === s);
        return { name: s, points: cell ? curve(decodeHistogram(cell.histogram)).map(([p, v]) => [nines(p), v] as [number, number]) : [] };
      }),
    });
  }
  for (const variant of dp.variants) {
    const closed = dp.cells.filter((c) => c.variant === variant && c.load.kind === 'closed');
    if (new Set(closed.map((c) => c.label)).size < 2) continue;
    panels.push({
      title: `${variant === '2k' ? '~2 KiB' : '~64 KiB'} body: throughput`,
      x: { label: 'concurrent streams', log: true },
      y: { label: 'exchanges / s' },
      series: dp.setups.map((s) => ({
        name: s,
        points: closed.filter((c) => c.setup === s).map((c) => [c.load.kind === 'closed' ? c.load.concurrency : NaN, c.throughput] as [number, number]),
      })),
    });
  }
  panels.push(...streamingPanels(r));
  return renderChart('mcip-router data path: latency distribution per set-up', caveat(r), panels, 3);
}

/** Streamed responses: per events-per-response, the hop's CPU per event and the client's inter-event gap (p99) against concurrency. */
function streamingPanels(r: BenchResults): Panel[] {
  const st = r.dataPath.streaming;
  if (!st || st.cells.length === 0) return [];
  const panels: Panel[] = [];
  for (const chunks of [...new Set(st.cells.map((c) => c.chunks))]) {
    const cells = st.cells.filter((c) => c.chunks === chunks);
    const bySetup = (f: (c: StreamCell) => number | undefined) =>
      STREAM_SETUPS.map((s) => ({ name: s, points: cells.filter((c) => c.setup === s).map((c) => [c.concurrency, f(c) ?? NaN] as [number, number]) }));
    panels.push(
      {
        title: `streamed, ${chunks} events/response: hop CPU`,
        x: { label: 'concurrent streams', log: true },
        y: { label: 'CPU µs per event' },
        series: bySetup((c) => c.proxy?.cpuUsPerEvent).filter((x) => x.name !== 'direct'),
      },
      {
        title: `streamed, ${chunks} events/response: gap p99`,
        x: { label: 'concurrent streams', log: true },
        y: { label: 'ms between events (p99)', log: true },
        series: bySetup((c) => c.gapMs.p99),
      },
    );
  }
  return panels;
}

export function controlPlaneChart(r: BenchResults): string {
  const cp = r.controlPlane;
  /** pools + imports of the build point with this many routes. */
  const sizeOf = (routes: number, fallback: number): number => {
    const b = cp.build.find((bb) => bb.routes === routes);
    return b ? b.pools + b.imports : fallback;
  };
  const panels: Panel[] = [
    {
      title: 'snapshot build time',
      x: { label: 'pools + imports', log: true },
      y: { label: 'ms (median)', log: true },
      series: [{ name: 'buildSnapshot', points: cp.build.map((b) => [b.pools + b.imports, b.buildMs.median]) }],
      hlines: [{ y: 100, label: 'budget 100 ms @ 10k' }],
    },
    {
      title: 'one object change -> new snapshot serving',
      x: { label: 'pools + imports', log: true },
      y: { label: 'ms (median)', log: true },
      series: [
        { name: 'SnapshotStore (in process)', points: cp.build.map((b) => [b.pools + b.imports, b.changeToServingMs.median]) },
        { name: 'router process, manifest reload', points: cp.reload.map((p) => [sizeOf(p.routes, p.objects), p.reloadMs.median]) },
      ],
    },
    {
      title: 'memory',
      x: { label: 'pools + imports', log: true },
      y: { label: 'MiB', log: true },
      series: [
        { name: 'snapshot heap', points: cp.build.map((b) => [b.pools + b.imports, b.snapshotHeapMb]) },
        { name: 'input objects heap', points: cp.build.map((b) => [b.pools + b.imports, b.inputHeapMb]) },
        { name: 'router RSS (manifests)', points: cp.reload.map((p) => [sizeOf(p.routes, p.objects), p.routerRssMb]) },
      ],
    },
    {
      title: 'picker cost per request',
      x: { label: 'candidates in the rule', log: true },
      y: { label: 'ns per pick', log: true },
      series: [...new Set(cp.picker.map((p) => p.policy))].map((policy) => ({
        name: `pick: ${policy}`,
        points: cp.picker.filter((p) => p.policy === policy).map((p) => [p.candidates, p.nsPerPick] as [number, number]),
      })),
      hlines: [{ y: 5000, label: 'budget 5 µs @ 10' }],
    },
    {
      title: 'route match + pick per request',
      x: { label: 'HTTPRoutes', log: true },
      y: { label: 'ns', log: true },
      series: [{ name: 'matchRequest + pick', points: cp.build.map((b) => [b.routes, b.matchNs]) }],
    },
  ];
  return renderChart('mcip-router control plane: growth with ClusterSet size', caveat(r), panels, 3, 330, 250);
}
