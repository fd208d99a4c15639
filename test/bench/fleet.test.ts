/**
 * The fleet cell's flags, plan, budget and report (no processes, no timing): sizes and pools
 * parse, --only-fleet runs that cell alone and never replaces latest.*, the churn keeps at most
 * its live pools and spreads them over the members, the slope is least squares, and the budget
 * and summary read the results they are given.
 */
import { describe, expect, it } from 'vitest';
import { checkBudget, fleetBudget } from '../../bench/budget.js';
import { parseArgs } from '../../bench/lib/args.js';
import { churnSchedule, quantile, slope } from '../../bench/lib/fleet-plan.js';
import type { BenchResults, FleetResults } from '../../bench/lib/types.js';
import { fleetSection } from '../../bench/report/fleet.js';
import { renderFleetMarkdown, renderMarkdown } from '../../bench/report/markdown.js';

function results(o: { visibleMax?: number; everywhereMax?: number; rss?: readonly number[]; members?: readonly number[] } = {}): FleetResults {
  const members = o.members ?? [10, 25, 50];
  const rss = o.rss ?? [150, 165, 190];
  const largest = members.at(-1)!;
  return {
    poolsPerMember: 10,
    restS: 10,
    points: members.map((m, i) => ({
      members: m,
      candidates: m * 10,
      startupMs: 900 + m,
      syncMs: 1000 + m,
      rest: { cpuPct: 0.5 + m / 100, rssMb: rss[i]!, heapUsedMb: 60 + m / 10 },
      controller: { syncMs: 2000 + m, rest: { cpuPct: 0.2, rssMb: 100 + m } },
    })),
    slope: { rssMbPerMember: slope(members.map((m, i) => [m, rss[i]!])), cpuPctPerMember: 0.01, controllerRssMbPerMember: 1 },
    visibility: { members: largest, ms: [120, 140, o.visibleMax ?? 230], p50: 140, max: o.visibleMax ?? 230 },
    everywhere: { members: largest, ms: [300, 410, o.everywhereMax ?? 520], p50: 410, max: o.everywhereMax ?? 520 },
    churn: { members: largest, opsPerS: 5, windowS: 20, ops: 100, cpuPct: 16.6, rssMaxMb: 289.2, snapshots: 87, controller: { cpuPct: 21.5, rssMaxMb: 180.4 }, apiserversCpuPct: 2.6 },
    apiserversRssMb: 174,
  };
}

describe('fleet flags', () => {
  it('full runs measure 10, 25 and 50 members of 10 pools; --fleet-members and --fleet-pools set them', () => {
    const d = parseArgs([]);
    expect([d.fleetMembers, d.fleetPools, d.skipFleet, d.onlyFleet]).toEqual([[10, 25, 50], 10, false, false]);
    const o = parseArgs(['--fleet-members', '5,20', '--fleet-pools=3']);
    expect([o.fleetMembers, o.fleetPools]).toEqual([[5, 20], 3]);
    expect(() => parseArgs(['--fleet-members', '0,3'])).toThrow(/bad list/);
    expect(parseArgs(['--skip-fleet']).skipFleet).toBe(true);
    expect(parseArgs(['--only-open-streams']).skipFleet).toBe(true);
  });

  it('--only-fleet skips the data path and control plane and never writes latest.*, even with --latest', () => {
    for (const argv of [['--only-fleet'], ['--only-fleet', '--latest'], ['--latest', '--only-fleet']]) {
      const o = parseArgs(argv);
      expect([o.onlyFleet, o.skipDataPath, o.skipControlPlane, o.skipFleet, o.latest]).toEqual([true, true, true, false, false]);
    }
  });
});

describe('fleet plan', () => {
  it('churn: adds spread over the members, at most `live` churn pools at once, the oldest removed first', () => {
    const ops = churnSchedule(50, 4, 20);
    expect(ops).toHaveLength(20);
    const live: string[] = [];
    for (const op of ops) {
      const key = `${op.member}/${op.pool}`;
      if (op.op === 'add') {
        expect(live).not.toContain(key);
        live.push(key);
      } else {
        expect(key).toBe(live.shift());
      }
      expect(live.length).toBeLessThanOrEqual(4);
    }
    const added = ops.filter((o) => o.op === 'add');
    expect(new Set(added.map((o) => o.member)).size).toBe(added.length);
    expect(added.slice(0, 3).map((o) => [o.member, o.pool])).toEqual([['member-00', 'churn-0'], ['member-07', 'churn-1'], ['member-14', 'churn-2']]);
  });

  it('slope is the least-squares line; quantile is the nearest rank', () => {
    expect(slope([[10, 100], [25, 130], [50, 180]])).toBeCloseTo(2, 10);
    expect(slope([[10, 1], [10, 2]])).toBeNaN();
    expect(slope([[10, 1]])).toBeNaN();
    expect(quantile([5, 1, 3, 2, 4], 0.5)).toBe(3);
    expect(quantile([5, 1, 3, 2, 4], 1)).toBe(5);
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('fleet budget', () => {
  it('passes an export visible within 5 s at 50 members, in the router and in every member, and RSS growing < 2 MB per member', () => {
    const lines = fleetBudget(results());
    expect(lines.map((l) => l.pass)).toEqual([true, true, true]);
    expect(lines[0]!.measured).toBe('0.23 s worst of 3 (p50 0.14 s)');
    expect(lines[1]!.item).toMatch(/export controller's InferencePoolImport in all 50/);
    expect(lines[1]!.measured).toBe('0.52 s worst of 3 (p50 0.41 s)');
    expect(lines[2]!.measured).toBe('1.05 MB (1.00 MiB) per member');
  });

  it('misses a slow export, a run below 50 members, and RSS growing 2 MB per member or more', () => {
    expect(fleetBudget(results({ visibleMax: 5001 }))[0]!.pass).toBe(false);
    expect(fleetBudget(results({ everywhereMax: 5001 })).map((l) => l.pass)).toEqual([true, false, true]);
    expect(fleetBudget(results({ members: [5, 10, 25] }))[0]!.pass).toBe(false);
    // 1.91 MiB = 2.0 MB per member.
    const heavy = fleetBudget(results({ rss: [150, 150 + 15 * 1.91, 150 + 40 * 1.91] }))[2]!;
    expect([heavy.pass, heavy.measured]).toEqual([false, '2.00 MB (1.91 MiB) per member']);
  });

  it('a fleet-only run is judged on the fleet lines alone; a full run adds them to the others', () => {
    const empty = { setups: [], variants: [], cells: [], comparisons: [], openStreams: [] } as unknown as BenchResults['dataPath'];
    const noCp = { build: [], picker: [], reload: [] };
    expect(checkBudget({ dataPath: empty, controlPlane: noCp, fleet: results() }).map((l) => l.item)).toEqual(fleetBudget(results()).map((l) => l.item));
    const withCp = checkBudget({ dataPath: empty, controlPlane: { ...noCp, build: [{ routes: 1 } as never] }, fleet: results() });
    expect(withCp.length).toBeGreaterThan(3);
    expect(withCp.slice(-3)).toEqual(fleetBudget(results()));
  });
});

describe('fleet report', () => {
  const meta: BenchResults['meta'] = {
    date: '2026-11-28T08:28:08.310Z', quick: false, node: 'v26.12.1', cpus: 2, cpuModel: 'test', loadAvgStart: [1, 1, 1], loadAvgEnd: [2, 2, 2],
    distBuiltAt: 'x', gitHead: 'abc1234', caveat: 'shared machine', wallS: 169,
  };

  it('the section tables each size and states the slope, the export times and the churn', () => {
    const md = fleetSection(results()).join('\n');
    expect(md).toContain('| 50 | 500 | 950 | 1050 | 1.00 | 190.0 | 65.0 | 2050 | 0.20 | 150.0 |');
    expect(md).toContain("RSS 1.00 MiB (1.05 MB), CPU at rest 0.010% of a core; the export controller's RSS 1.00 MiB");
    expect(md).toContain('p50 140 ms, worst 230 ms of 3 (120, 140, 230 ms)');
    expect(md).toContain('in every one of the 50 members');
    expect(md).toContain('p50 410 ms, worst 520 ms (300, 410, 520 ms)');
    expect(md).toContain('100 writes over 20.0 s: router CPU 16.6% of a core, RSS peak 289.2 MiB, 87 snapshots built; the export controller 21.5% (RSS peak 180.4 MiB)');
  });

  it('a fleet-only summary has the head, the budget and the fleet section; a full summary ends with it', () => {
    const r = { meta, dataPath: { setups: [] }, controlPlane: { build: [] }, fleet: results(), budget: fleetBudget(results()), profiles: [] } as unknown as BenchResults;
    const md = renderFleetMarkdown(r);
    expect(md.split('\n')[0]).toBe('# mcip-router benchmark: fleet cell, 2026-11-28T08:28:08.310Z');
    expect(md).toContain('| **PASS** | new export visible in the router');
    expect(md).toContain('## Fleet: members from ClusterProfiles');
    expect(md).not.toContain('## Data path');
    expect(() => renderFleetMarkdown({ ...r, fleet: undefined } as BenchResults)).toThrow(/no fleet results/);
  });

  it('renders the newest committed results with a fleet cell into their committed summary', async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const dir = new URL('../../bench/results/', import.meta.url);
    // Dated runs only (latest.* copies the newest full run), fleet-only or full, newest first by name.
    const dated = readdirSync(dir).filter((f) => /^\d{4}-\d{2}-\d{2}-\d{6}(-fleet)?\.json$/.test(f)).sort().reverse();
    const file = dated.find((f) => (JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as BenchResults).fleet !== undefined)!;
    const r = JSON.parse(readFileSync(new URL(file, dir), 'utf8')) as BenchResults;
    const stem = file.replace(/\.json$/, '');
    const md = file.endsWith('-fleet.json') ? renderFleetMarkdown(r) : renderMarkdown(r, { svg: `${stem}.svg`, cpSvg: `${stem}-control-plane.svg` });
    expect(r.fleet!.points[0]!.controller).toBeDefined();
    expect(readFileSync(new URL(`${stem}.md`, dir), 'utf8')).toBe(md + '\n');
  });

  it('the summary of a full run carries the fleet section after the control plane', async () => {
    const { readFileSync } = await import('node:fs');
    const latest = JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8')) as BenchResults;
    const files = { svg: 'x.svg', cpSvg: 'y.svg' };
    const { fleet: _latestFleet, ...withoutFleet } = latest;
    expect(renderMarkdown(withoutFleet, files)).not.toContain('## Fleet');
    const md = renderMarkdown({ ...withoutFleet, fleet: results() }, files);
    expect(md.indexOf('## Fleet: members from ClusterProfiles')).toBeGreaterThan(md.indexOf('## Control plane'));
  });
});
