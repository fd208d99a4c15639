/**
 * Picker micro-benchmark: ns per pick for rules of 2, 10 and 100 candidates,
 * per policy, with live-looking signals (ready pods, some saturated, one not
 * ready). No assertions; prints a table.
 *
 *   node --import tsx bench/picker.ts [picks-per-cell]
 */
import { pick, pickOrdered } from '../src/picker/pick.js';
import type { PickPolicy } from '../src/config/pick-policy.js';
import type { PickResult } from '../src/picker/types.js';
import { signalView, type CandidateSignals, type SignalView } from '../src/signals/types.js';
import type { BackendGroup, Candidate, RouteRule } from '../src/snapshot/types.js';

const PICKS = Number(process.argv[2] ?? 1_000_000);

function candidate(cluster: string, pool: string): Candidate {
  return {
    id: `${cluster}/bench/${pool}`,
    cluster,
    namespace: 'bench',
    pool,
    local: cluster === 'local',
    failureMode: 'FailClose',
    targetPorts: [8000],
    via: 'epp',
    epp: {
      address: '10.0.0.1:9002', host: '10.0.0.1', port: 9002, cluster,
      service: { namespace: 'bench', name: `${pool}-epp` }, source: 'clusterIP',
      tls: { enabled: true, insecureSkipVerify: true },
    },
  };
}

/** `groups` backendRefs: the first a local InferencePool, the others imports over `perImport` clusters. */
function makeRule(groups: number, perImport: number): RouteRule {
  const backends: BackendGroup[] = [];
  for (let g = 0; g < groups; g++) {
    const cs = g === 0 ? [candidate('local', 'pool-0')] : Array.from({ length: perImport }, (_, j) => candidate(`cluster-${j}`, `pool-${g}`));
    backends.push({ ref: { group: 'inference.networking.k8s.io', kind: g === 0 ? 'InferencePool' : 'InferencePoolImport', namespace: 'bench', name: `pool-${g}` }, weight: 10 + g, candidates: cs, excluded: [] });
  }
  return { route: { namespace: 'bench', name: 'r' }, index: 0, backends, totalWeight: backends.reduce((s, b) => s + b.weight, 0) };
}

function makeView(rule: RouteRule): SignalView {
  const entries: [string, CandidateSignals][] = [];
  let k = 0;
  for (const g of rule.backends) {
    for (const c of g.candidates) {
      k++;
      const saturated = k % 7 === 0;
      entries.push([c.id, k % 11 === 0
        ? { ready: 'not-ready', ejected: false, source: 'epp-health', reason: 'health:failing' }
        : { ready: 'ready', ejected: false, readyPods: 1 + (k % 5), queueSize: saturated ? 8 : k % 4, kvCache: 0.2 + (k % 5) / 10, saturated, source: 'epp-health', reason: 'health:serving' }]);
    }
  }
  return signalView(entries);
}

const shapes: [string, RouteRule][] = [
  ['2 candidates (2 pools)', makeRule(2, 1)],
  ['10 candidates (pool + 3 imports x 3)', makeRule(4, 3)],
  ['100 candidates (pool + 11 imports x 9)', makeRule(12, 9)],
];

let sink = 0;
function consume(p: PickResult): void {
  if (p.type === 'picked') sink += p.primary.id.length;
}

function measure(fn: () => PickResult, n: number): number {
  for (let i = 0; i < Math.min(n, 200_000); i++) consume(fn()); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) consume(fn());
  return Number(process.hrtime.bigint() - t0) / n;
}

const random = Math.random;
const rows: string[][] = [];
for (const [label, rule] of shapes) {
  const view = makeView(rule);
  const row = [label, measure(() => pick(rule, random), PICKS).toFixed(0)];
  for (const policy of ['weighted', 'prefer-local', 'least-loaded'] as PickPolicy[]) {
    row.push(measure(() => pickOrdered(rule, view, random, policy), PICKS).toFixed(0));
  }
  // With the lazy fallback order materialized (what a failover costs on top).
  row.push(
    measure(() => {
      const p = pickOrdered(rule, view, random, 'weighted');
      if (p.type === 'picked') sink += p.fallbacks.length;
      return p;
    }, Math.max(1000, PICKS / 10)).toFixed(0),
  );
  rows.push(row);
}

const header = ['rule', 'pick (no signals)', 'weighted', 'prefer-local', 'least-loaded', 'weighted + fallbacks'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(`ns per pick (${PICKS} picks per cell, node ${process.version})`);
console.log(line(header));
for (const r of rows) console.log(line(r));
if (sink === 0) console.log('(sink)');
