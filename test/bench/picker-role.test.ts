/**
 * The Endpoint Picker role cell's plumbing (bench/picker-role.ts): its flags, the comparisons
 * and budget lines computed from a results object, and the report rendered from one. No
 * processes and no timing: the cell itself runs in `npm run bench` (and its quick mode).
 */
import { describe, expect, it } from 'vitest';
import { checkBudget, formatBudget } from '../../bench/budget.js';
import { parseArgs } from '../../bench/lib/args.js';
import type { BenchResults, Cell, DataPathResults, PickerRoleResults, PickerSetup } from '../../bench/lib/types.js';
import { comparePickerRole, pickerLevels } from '../../bench/picker-role.js';
import { renderMarkdown } from '../../bench/report/markdown.js';

describe('flags', () => {
  it('--only picker runs the cell alone and leaves latest.* alone', () => {
    for (const argv of [['--only', 'picker'], ['--only=picker']]) {
      const o = parseArgs(argv);
      expect(o).toMatchObject({ pickerRole: true, skipDataPath: true, skipControlPlane: true, latest: false });
    }
    expect(() => parseArgs(['--only', 'data-path'])).toThrow(/--only: picker/);
  });

  it('a full run includes the cell; --skip-picker and --only-open-streams leave it out', () => {
    expect(parseArgs([])).toMatchObject({ pickerRole: true, skipDataPath: false, skipControlPlane: false, latest: true });
    expect(parseArgs(['--skip-picker']).pickerRole).toBe(false);
    expect(parseArgs(['--only-open-streams']).pickerRole).toBe(false);
  });

  it('measures 1 and 16 streams in a full run, 16 in quick mode', () => {
    expect(pickerLevels(parseArgs([]))).toEqual([1, 16]);
    expect(pickerLevels(parseArgs(['--quick', '--only', 'picker']))).toEqual([16]);
  });
});

const latency = (p50: number, p99: number) => ({ p50, p90: p50 * 1.5, p99, p999: p99, max: p99, mean: p50 });

function cell(setup: PickerSetup, concurrency: number, p50: number, p99: number, routerCpuMs: number, errors = 0): Cell<PickerSetup> {
  const requests = 1000;
  return {
    setup, variant: '2k', load: { kind: 'closed', concurrency }, label: `c=${concurrency}`, requests, errors, durationS: 3, throughput: 333.3,
    latencyMs: latency(p50, p99), histogram: '', generatorCpuPct: 40,
    proxy: { cpuMs: routerCpuMs * requests, cpuMsPerRequest: routerCpuMs, cpuPct: 50, rssMaxMb: 120.4 },
    epp: { cpuMs: 300, cpuMsPerRequest: 0.3, cpuPct: 10, rssMaxMb: 80 },
    ...(errors ? { firstError: 'relay hop: the verifier refused the token (answer member 7)' } : {}),
  };
}

function pickerResults(directCpu: number, relayCpu: number, errors = 0): PickerRoleResults {
  const cells = [
    cell('envoy', 16, 8, 20, 0.5),
    cell('picker-direct', 16, 8.4, 21, directCpu),
    cell('picker-relay', 16, 10.1, 25.5, relayCpu, errors),
  ];
  return { variant: '2k', rounds: 2, warmupMs: 1000, measureMs: 3000, connections: 2, cells, comparisons: comparePickerRole(cells) };
}

const noDataPath = { cells: [], openStreams: [] } as unknown as DataPathResults;
const noControlPlane = { build: [], picker: [], reload: [] };

describe('comparisons and budget', () => {
  it('compares the direct answer with the own-Envoy path and the relay answer with the direct one, per stream count', () => {
    expect(pickerResults(0.55, 0.7).comparisons).toEqual([
      {
        label: 'c=16',
        directOverEnvoyCpu: 1.1,
        directMinusEnvoy: { p50: 0.4, p99: 1 },
        relayMinusDirectCpuMs: 0.15,
        relayOverDirectCpu: 1.273,
        relayMinusDirect: { p50: 1.7, p99: 4.5 },
      },
    ]);
  });

  it('has the picker lines alone when only the cell ran, PASS within the budget', () => {
    const lines = checkBudget({ dataPath: noDataPath, controlPlane: noControlPlane, pickerRole: pickerResults(0.55, 0.7) });
    expect(lines.map((l) => [l.pass, l.target])).toEqual([
      [true, '<= 1.15x'],
      [true, '<= 1.50x'],
      [true, '0'],
    ]);
    expect(lines[0]!.measured).toBe('1.10x (p50 +0.400 ms)');
    expect(lines[1]!.measured).toBe('1.27x (+0.150 ms CPU, p50 +1.700 ms)');
    expect(formatBudget(lines)).toMatch(/^PASS {2}Endpoint Picker role: router CPU per direct picker answer/);
  });

  it('MISSes a costlier direct answer, a costlier relay hop and failed exchanges', () => {
    const lines = checkBudget({ dataPath: noDataPath, controlPlane: noControlPlane, pickerRole: pickerResults(0.6, 0.95, 3) });
    expect(lines.map((l) => l.pass)).toEqual([false, false, false]);
    expect(lines[2]!.measured).toBe('3 of 3003 (relay hop: the verifier refused the token (answer member 7))');
  });

  it('has no picker lines in a run without the cell', () => {
    expect(checkBudget({ dataPath: noDataPath, controlPlane: noControlPlane })).toEqual([]);
  });
});

describe('report', () => {
  const results = (): BenchResults => {
    const pickerRole = pickerResults(0.55, 0.7);
    return {
      meta: {
        date: '2026-11-28T08:00:00.000Z', quick: false, node: 'v26.0.0', cpus: 2, cpuModel: 'test CPU', loadAvgStart: [0.1, 0.1, 0.1], loadAvgEnd: [1, 1, 1],
        distBuiltAt: '2026-11-28T07:59:00.000Z', gitHead: 'abc1234', caveat: 'quiet machine', wallS: 40,
      },
      dataPath: noDataPath,
      controlPlane: noControlPlane,
      pickerRole,
      budget: checkBudget({ dataPath: noDataPath, controlPlane: noControlPlane, pickerRole }),
      profiles: [],
    };
  };

  it('shows the three set-ups next to each other, the relay hop and the budget, and no part that did not run', () => {
    const md = renderMarkdown(results(), { svg: 'x.svg', cpSvg: 'x-cp.svg' });
    expect(md).toContain('## Endpoint Picker role');
    expect(md).not.toContain('## Data path');
    expect(md).not.toContain('## Control plane');
    expect(md).toContain('| c=16 | envoy | 333 | 8.000 |');
    expect(md).toContain('| c=16 | picker-direct | 333 | 8.400 |');
    expect(md).toContain('| c=16 | picker-relay | 333 | 10.100 |');
    expect(md).toContain('| c=16 | 1.10 | +0.400 | +1.000 | +0.150 | 1.27 | +1.700 | +4.500 |');
    expect(md).toContain('| **PASS** | Endpoint Picker role: router CPU per relay answer + verifier exchange / direct picker answer, 2k body, 16 streams | 1.27x');
    expect(md).toMatch(/Not measured here: the relay's own Envoy/);
  });
});
