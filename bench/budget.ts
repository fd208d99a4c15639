/**
 * The performance budget, checked against a run's results. Each item yields
 * PASS or MISS with the measured value; an item whose measurement is missing
 * from the run (e.g. a size not measured) is a MISS saying so.
 */
import type { BenchResults, BudgetLine, ControlPlaneResults, DataPathResults, FleetResults, PickerRoleResults } from './lib/types.js';

const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
const f3 = (n: number): string => (Number.isFinite(n) ? n.toFixed(3) : 'n/a');

function dataPathBudget(dp: DataPathResults): BudgetLine[] {
  const out: BudgetLine[] = [];
  for (const variant of dp.variants) {
    for (const c of [16, 64]) {
      const cmp = dp.comparisons.find((x) => x.variant === variant && x.label === `c=${c}`);
      if (!cmp) continue;
      out.push({
        item: `router p50 / floor p50, ${variant} body, ${c} streams`,
        target: '<= 1.25x',
        measured: `${f2(cmp.routerOverFloor.p50)}x`,
        pass: cmp.routerOverFloor.p50 <= 1.25,
      });
      out.push({
        item: `router throughput / floor throughput, ${variant} body, ${c} streams`,
        target: '>= 0.80x',
        measured: `${f2(cmp.routerOverFloor.throughput)}x`,
        pass: cmp.routerOverFloor.throughput >= 0.8,
      });
    }
    const at16 = dp.comparisons.find((x) => x.variant === variant && x.label === 'c=16');
    if (at16) {
      out.push({
        item: `added latency over direct (p50), ${variant} body, 16 streams`,
        target: '<= 0.5 ms',
        measured: `${f3(at16.routerMinusDirect.p50)} ms${at16.h2floorMinusDirect ? ` (raw node:http2 relay alone: ${f3(at16.h2floorMinusDirect.p50)} ms)` : ''}`,
        pass: at16.routerMinusDirect.p50 <= 0.5,
      });
      out.push({
        item: `added latency over direct (p99), ${variant} body, 16 streams`,
        target: '<= 2 ms',
        measured: `${f3(at16.routerMinusDirect.p99)} ms${at16.h2floorMinusDirect ? ` (raw node:http2 relay alone: ${f3(at16.h2floorMinusDirect.p99)} ms)` : ''}`,
        pass: at16.routerMinusDirect.p99 <= 2,
      });
    }
  }
  const cpu2k = dp.comparisons.filter((x) => x.variant === '2k' && (x.label === 'c=16' || x.label === 'c=64'));
  if (cpu2k.length > 0) {
    const worst = Math.max(...cpu2k.map((x) => x.cpuPerRequestRatio));
    out.push({
      item: 'router CPU per exchange / floor CPU per exchange, 2k body, 16 and 64 streams (worse of the two)',
      target: '<= 1.00x',
      measured: `${f2(worst)}x (${cpu2k.map((x) => `${x.label} ${f2(x.cpuPerRequestRatio)}x`).join(', ')})`,
      pass: worst <= 1,
    });
  }
  out.push(...streamingBudget(dp));
  const routerCells = dp.cells.filter((c) => c.setup === 'router' || c.setup === 'parent');
  const streamCells = dp.streaming?.cells.filter((c) => c.setup === 'router') ?? [];
  if (routerCells.length > 0) {
    const failed = routerCells.reduce((a, c) => a + c.errors, 0) + streamCells.reduce((a, c) => a + c.errors, 0);
    const total = routerCells.reduce((a, c) => a + c.requests + c.errors, 0) + streamCells.reduce((a, c) => a + c.responses + c.errors, 0);
    const firstError = routerCells.find((c) => c.firstError)?.firstError ?? streamCells.find((c) => c.firstError)?.firstError ?? '';
    out.push({
      item: `router exchanges that failed, all cells (streamed responses included), close=${dp.closeMode}`,
      target: '0',
      measured: `${failed} of ${total}${failed ? ` (${firstError})` : ''}`,
      pass: failed === 0,
    });
  }
  const open = dp.openStreams.find((o) => o.setup === 'router' && o.phase === 'fresh');
  const loaded = dp.openStreams.find((o) => o.setup === 'router' && o.phase === 'after-load');
  const held = (setup: string): string => {
    const x = dp.openStreams.find((o) => o.setup === setup && o.phase === 'fresh');
    return x ? `${setup} ${x.heldRssMb.toFixed(1)} MiB` : '';
  };
  const floors = [held('floor'), held('h2floor')].filter(Boolean).join(', ');
  out.push({
    item: `router RSS with ${open?.streams ?? 'n/a'} concurrent open streams`,
    target: '< 150 MB (1,000 streams)',
    measured: open
      ? `${open.heldRssMb.toFixed(1)} MiB = ${(open.heldRssMb * 1.048576).toFixed(0)} MB (fresh router; ${open.idleRssMb.toFixed(1)} MiB before opening them` +
        `${loaded ? `; after the load cells: ${loaded.heldRssMb.toFixed(1)} MiB` : ''}${floors ? `; same streams through ${floors}` : ''})${dp.profiled ? ', profiled run: the profiler inflates RSS' : ''}`
      : 'not measured',
    pass: open !== undefined && open.streams >= 1000 && open.heldRssMb * 1.048576 < 150,
  });
  return out;
}

/** Streamed responses: the router's CPU per SSE event against both floors, at 16 and 64 streams (the worst cell counts). */
function streamingBudget(dp: DataPathResults): BudgetLine[] {
  const loaded = dp.streaming?.comparisons.filter((c) => c.concurrency >= 16) ?? [];
  if (loaded.length === 0) return [];
  const worst = (f: (c: (typeof loaded)[number]) => number) => loaded.reduce((a, c) => (f(c) > f(a) ? c : a));
  const byCell = (f: (c: (typeof loaded)[number]) => number): string => loaded.map((c) => `${c.chunks}/c=${c.concurrency} ${f2(f(c))}x`).join(', ');
  const wf = worst((c) => c.cpuOverFloor);
  const wh = worst((c) => c.cpuOverH2Floor);
  return [
    {
      item: 'router CPU per streamed event / grpc-js floor, 16 and 64 streams (worst cell)',
      target: '<= 0.85x',
      measured: `${f2(wf.cpuOverFloor)}x (${byCell((c) => c.cpuOverFloor)})`,
      pass: wf.cpuOverFloor <= 0.85,
    },
    {
      item: '(goal) router CPU per streamed event / raw node:http2 relay, 16 and 64 streams (worst cell)',
      target: '<= 1.15x',
      measured: `${f2(wh.cpuOverH2Floor)}x (${byCell((c) => c.cpuOverH2Floor)})`,
      pass: wh.cpuOverH2Floor <= 1.15,
    },
  ];
}

function controlPlaneBudget(cp: ControlPlaneResults): BudgetLine[] {
  const big = cp.build.find((b) => b.pools + b.imports >= 10_000);
  const at10 = cp.picker.filter((p) => p.candidates === 10 && !p.policy.includes('no signals'));
  const worst = at10.reduce<(typeof at10)[number] | undefined>((a, p) => (a === undefined || p.nsPerPick > a.nsPerPick ? p : a), undefined);
  return [
    {
      item: 'snapshot rebuild, 10,000 pools + imports',
      target: '< 100 ms',
      measured: big
        ? `${big.buildMs.median.toFixed(1)} ms median, nothing reused (${big.objects} objects incl. Services/routes)` +
          (big.incrementalBuildMs ? `; ${big.incrementalBuildMs.median.toFixed(1)} ms after one route change` : '')
        : 'not measured',
      pass: big !== undefined && big.buildMs.median < 100,
    },
    {
      item: 'picker per request, 10 candidates (slowest policy)',
      target: '< 5 µs',
      measured: worst ? `${(worst.nsPerPick / 1000).toFixed(2)} µs (${worst.policy})` : 'not measured',
      pass: worst !== undefined && worst.nsPerPick < 5000,
    },
  ];
}

/**
 * The Endpoint Picker role at 16 streams. A direct picker answer does the own-Envoy path's
 * work (match, pick, relay to the EPP) plus TLS on the gateway's connection and the answer's
 * header and envoy.lb metadata: within 1.15x. A relay answer adds a token signed and one
 * headers-only ext_proc stream to the verifier (one message each way, no EPP call) beside an
 * exchange of two streams and ~8 messages each way: within 1.5x of the direct answer.
 */
function pickerRoleBudget(pr: PickerRoleResults): BudgetLine[] {
  const at16 = pr.comparisons.find((c) => c.label === 'c=16');
  const failed = pr.cells.reduce((a, c) => a + c.errors, 0);
  const total = pr.cells.reduce((a, c) => a + c.requests + c.errors, 0);
  return [
    {
      item: 'Endpoint Picker role: router CPU per direct picker answer / own-Envoy path, 2k body, 16 streams',
      target: '<= 1.15x',
      measured: at16 ? `${f2(at16.directOverEnvoyCpu)}x (p50 ${at16.directMinusEnvoy.p50 >= 0 ? '+' : ''}${f3(at16.directMinusEnvoy.p50)} ms)` : 'not measured',
      pass: at16 !== undefined && at16.directOverEnvoyCpu <= 1.15,
    },
    {
      item: 'Endpoint Picker role: router CPU per relay answer + verifier exchange / direct picker answer, 2k body, 16 streams',
      target: '<= 1.50x',
      measured: at16 ? `${f2(at16.relayOverDirectCpu)}x (+${f3(at16.relayMinusDirectCpuMs)} ms CPU, p50 ${at16.relayMinusDirect.p50 >= 0 ? '+' : ''}${f3(at16.relayMinusDirect.p50)} ms)` : 'not measured',
      pass: at16 !== undefined && at16.relayOverDirectCpu <= 1.5,
    },
    {
      item: 'Endpoint Picker role: exchanges that failed, every set-up',
      target: '0',
      measured: `${failed} of ${total}${failed ? ` (${pr.cells.find((c) => c.firstError)?.firstError ?? ''})` : ''}`,
      pass: failed === 0,
    },
  ];
}

/** Fleet scale: a new export visible within 5 s at 50 members, in the router and in every member; router RSS grows < 2 MB per member. */
export function fleetBudget(f: FleetResults): BudgetLine[] {
  const v = f.visibility;
  const sizes = f.points.map((p) => p.members).join(', ');
  const perMemberMb = f.slope.rssMbPerMember * 1.048576;
  return [
    {
      item: `new export visible in the router (pool written to one member -> candidate in /debug/routes), ${v.members} members`,
      target: '<= 5 s (50 members)',
      measured: `${(v.max / 1000).toFixed(2)} s worst of ${v.ms.length} (p50 ${(v.p50 / 1000).toFixed(2)} s)`,
      pass: v.members >= 50 && v.ms.length > 0 && v.max <= 5000,
    },
    {
      item: `new export in every member (pool written to one member -> the export controller's InferencePoolImport in all ${f.everywhere.members})`,
      target: '<= 5 s (50 members)',
      measured: `${(f.everywhere.max / 1000).toFixed(2)} s worst of ${f.everywhere.ms.length} (p50 ${(f.everywhere.p50 / 1000).toFixed(2)} s)`,
      pass: f.everywhere.members >= 50 && f.everywhere.ms.length > 0 && f.everywhere.max <= 5000,
    },
    {
      item: `router RSS per member at rest (slope over ${sizes} members, ${f.poolsPerMember} pools each)`,
      target: '< 2 MB per member',
      measured: Number.isFinite(perMemberMb) ? `${perMemberMb.toFixed(2)} MB (${f.slope.rssMbPerMember.toFixed(2)} MiB) per member` : 'not measured',
      pass: f.points.length >= 2 && perMemberMb < 2,
    },
  ];
}

/** A part the run did not measure at all (e.g. `--only picker`, `--only fleet`) has no lines; a measurement missing from a part that ran is a MISS. */
export function checkBudget(r: Pick<BenchResults, 'dataPath' | 'controlPlane' | 'pickerRole' | 'fleet'>): BudgetLine[] {
  const dp = r.dataPath;
  const cp = r.controlPlane;
  return [
    ...(dp.cells.length > 0 || dp.openStreams.length > 0 ? dataPathBudget(dp) : []),
    ...(cp.build.length > 0 || cp.picker.length > 0 || cp.reload.length > 0 ? controlPlaneBudget(cp) : []),
    ...(r.pickerRole ? pickerRoleBudget(r.pickerRole) : []),
    ...(r.fleet ? fleetBudget(r.fleet) : []),
  ];
}

export function formatBudget(lines: readonly BudgetLine[]): string {
  const w = Math.max(...lines.map((l) => l.item.length));
  return lines.map((l) => `${l.pass ? 'PASS' : 'MISS'}  ${l.item.padEnd(w)}  ${l.measured}  (budget ${l.target})`).join('\n');
}
