/**
 * Control-plane measurements, in their own process (run with --expose-gc so
 * heap figures are after a full GC):
 * - build: buildSnapshot time (cold: nothing reusable; incremental: one route
 *   changed, the other members unchanged) and retained heap for synthetic
 *   ClusterSets, one object change -> new snapshot through the real
 *   SnapshotStore, and route match + pick per request against that snapshot;
 * - picker: pickWith per request with 2 / 10 / 100 candidates, per policy, and
 *   the (failover-only) fallback order.
 */
import { createLogger } from '../../src/log.js';
import { candidateOrder } from '../../src/picker/order.js';
import { pick, pickWith } from '../../src/picker/pick.js';
import { PICK_POLICIES } from '../../src/config/pick-policy.js';
import { SnapshotStore, type SnapshotObserver } from '../../src/runtime/snapshot-store.js';
import { DEFAULT_SATURATION } from '../../src/config/defaults.js';
import { signalView, type CandidateSignals } from '../../src/signals/types.js';
import { buildSnapshot } from '../../src/snapshot/build.js';
import { matchRequest } from '../../src/snapshot/match.js';
import type { RequestAttributes, RouteRule, RoutingSnapshot } from '../../src/snapshot/types.js';
import type { ClusterState } from '../../src/sources/types.js';
import { seededRandom } from '../../test/helpers/random.js';
import { pickerClusterSet, syntheticClusterSet, withChangedRoute } from '../lib/synthetic.js';
import { serveRpc } from '../lib/rpc.js';
import type { BuildPoint, PickerPoint } from '../lib/types.js';

const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const heapMb = (): number => {
  gc();
  gc();
  return process.memoryUsage().heapUsed / (1024 * 1024);
};
const round = (n: number, d = 3): number => Math.round(n * 10 ** d) / 10 ** d;
const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** ns per call of `fn`: batches of at least `batchMs`, median of `batches`. */
function nsPerOp(fn: (i: number) => number, batchMs: number, batches: number): number {
  let n = 64;
  let sink = 0;
  for (;;) {
    const t = performance.now();
    for (let i = 0; i < n; i++) sink += fn(i);
    if (performance.now() - t >= batchMs / 4 || n > 1e8) break;
    n *= 4;
  }
  const samples: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) sink += fn(i);
    samples.push(Number(process.hrtime.bigint() - t) / n);
  }
  if (sink === 0.5) process.stdout.write(''); // keep the work observable
  return round(median(samples), 1);
}

const noopObserver: SnapshotObserver = { snapshotBuilt() {}, sourceApplied() {}, sourceRejected() {} };

function attrs(host: string): RequestAttributes {
  return { authority: host, path: '/v1/chat/completions', method: 'POST', header: () => undefined };
}

async function changeToServing(set: ReturnType<typeof syntheticClusterSet>, times: number): Promise<number[]> {
  const store = new SnapshotStore(set.config, createLogger('silent'), noopObserver);
  for (const s of set.states) store.applyState(s);
  store.release();
  const out: number[] = [];
  let local = set.states[0]!;
  for (let k = 0; k < times; k++) {
    const next = withChangedRoute(local, 0, 40 + (k % 20), `rev-change-${k}`);
    local = next;
    const t = performance.now();
    const seen = new Promise<void>((resolve) => {
      const off = store.onSnapshot(() => {
        off();
        resolve();
      });
    });
    store.applyState(next);
    await seen;
    out.push(performance.now() - t);
  }
  store.stop();
  return out;
}

async function build(args: { routes: number; repeats: number; changes: number; batchMs: number }): Promise<BuildPoint> {
  const before = heapMb();
  const set = syntheticClusterSet({ routes: args.routes });
  const afterInput = heapMb();
  // The builder reuses its per-cluster work for ClusterState objects it has seen (src/snapshot/context.ts,
  // expand.ts): new state objects for every cold build, so nothing is reused.
  const fresh = (): ClusterState[] => set.states.map((s) => ({ ...s }));
  const times: number[] = [];
  let snapshot: RoutingSnapshot | undefined;
  for (let r = 0; r <= args.repeats; r++) {
    snapshot = undefined;
    const clusters = fresh();
    const t = performance.now();
    snapshot = buildSnapshot({ config: set.config, clusters, version: r + 1 }).snapshot;
    if (r > 0) times.push(performance.now() - t); // the first build warms the JIT
  }
  // Retained heap: three snapshots kept alive at once (each with its own states, so the builder's caches count), averaged.
  snapshot = undefined;
  const base = heapMb();
  const keptStates = [0, 1, 2].map(fresh);
  const kept = keptStates.map((clusters, k) => buildSnapshot({ config: set.config, clusters, version: 100 + k }).snapshot);
  const retained = (heapMb() - base) / kept.length;
  snapshot = kept[0]!;
  kept.length = 1;
  keptStates.length = 1;
  // Incremental: one HTTPRoute changed, the other members' states passed again as the same objects (as SnapshotStore does).
  const incremental: number[] = [];
  let local = set.states[0]!;
  buildSnapshot({ config: set.config, clusters: set.states, version: 200 });
  for (let r = 0; r <= args.repeats; r++) {
    local = withChangedRoute(local, 0, 40 + (r % 20), `rev-incremental-${r}`);
    const clusters = [local, ...set.states.slice(1)];
    const t = performance.now();
    buildSnapshot({ config: set.config, clusters, version: 201 + r });
    if (r > 0) incremental.push(performance.now() - t);
  }
  const changes = await changeToServing(set, args.changes);
  const hosts = Array.from({ length: 1024 }, (_, i) => attrs(`r${(i * 7919) % args.routes}.example.com`));
  const random = seededRandom(7);
  const snap = snapshot;
  const matchNs = nsPerOp(
    (i) => {
      const m = matchRequest(snap, hosts[i & 1023]!);
      if (m.type !== 'matched') return 0;
      const p = pick(m.rule, random);
      return p.type === 'picked' ? 1 : 0;
    },
    args.batchMs,
    5,
  );
  if (snap.candidates.size === 0) throw new Error('synthetic ClusterSet produced no candidates');
  return {
    ...set.counts,
    candidates: snap.candidates.size,
    buildMs: { median: round(median(times)), min: round(Math.min(...times)), max: round(Math.max(...times)) },
    incrementalBuildMs: { median: round(median(incremental)), min: round(Math.min(...incremental)), max: round(Math.max(...incremental)) },
    snapshotHeapMb: round(retained, 2),
    inputHeapMb: round(afterInput - before, 2),
    changeToServingMs: { median: round(median(changes)), max: round(Math.max(...changes)) },
    matchNs,
  };
}

function signalsFor(rule: RouteRule): Array<[string, CandidateSignals]> {
  const out: Array<[string, CandidateSignals]> = [];
  let k = 0;
  for (const g of rule.backends) {
    for (const c of g.candidates) {
      k++;
      out.push([
        c.id,
        { ready: 'ready', ejected: false, readyPods: 2 + (k % 5), queueSize: (k % 7) * 0.5, kvCache: 0.2 + (k % 5) * 0.1, runningRequests: k % 4, ageMs: 500, saturated: false, source: 'epp-health', reason: 'health:serving' },
      ]);
    }
  }
  return out;
}

function picker(args: { sizes: number[]; batchMs: number }): PickerPoint[] {
  const out: PickerPoint[] = [];
  for (const n of args.sizes) {
    const set = pickerClusterSet(n);
    const { snapshot } = buildSnapshot({ config: set.config, clusters: set.states, version: 1 });
    const rule = snapshot.routes[0]?.rules[0];
    const count = rule?.backends.reduce((a, g) => a + g.candidates.length, 0) ?? 0;
    if (!rule || count !== n) throw new Error(`picker set-up: expected ${n} candidates, got ${count}`);
    const view = signalView(signalsFor(rule));
    const random = seededRandom(11);
    out.push({
      candidates: n,
      policy: 'weighted, no signals (pick)',
      nsPerPick: nsPerOp(() => (pick(rule, random).type === 'picked' ? 1 : 0), args.batchMs, 5),
      fallbacksNs: NaN,
    });
    for (const policy of PICK_POLICIES) {
      const settings = { defaultPolicy: policy, saturation: DEFAULT_SATURATION };
      const nsPerPick = nsPerOp(() => (pickWith(rule, view, random, settings).type === 'picked' ? 1 : 0), args.batchMs, 5);
      const primary = rule.backends[0]!.candidates[0]!.id;
      const fallbacksNs = nsPerOp(() => candidateOrder(rule, view, policy, DEFAULT_SATURATION, primary).length, args.batchMs, 5);
      out.push({ candidates: n, policy, nsPerPick, fallbacksNs });
    }
  }
  return out;
}

serveRpc(
  {
    build: (a: Parameters<typeof build>[0]) => build(a),
    picker: (a: Parameters<typeof picker>[0]) => picker(a),
  },
  { gc: typeof (globalThis as { gc?: unknown }).gc === 'function' },
);
