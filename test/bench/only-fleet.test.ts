/**
 * `npm run bench -- --only-fleet` end to end (real processes, tiny fleet): the results hold
 * the fleet cell for each size asked and nothing else, every new export was seen in the
 * router's /debug/routes, the summary is written and latest.* is not touched. No time or RSS
 * bounds: the machine is shared.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT } from '../../bench/lib/paths.js';
import type { BenchResults } from '../../bench/lib/types.js';

const out = mkdtempSync(join(tmpdir(), 'mcip-bench-fleet-'));

afterAll(() => rmSync(out, { recursive: true, force: true }));

it('measures a router taking 1 and then 2 members from ClusterProfiles, a new export and churn', () => {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/run.ts'), '--only-fleet', '--quick', '--fleet-members', '2,1', '--fleet-pools', '2', '--out', out],
    { cwd: ROOT, encoding: 'utf8', timeout: 170_000 },
  );
  expect(run.status, run.stderr.slice(-3000)).toBe(0);
  const files = readdirSync(out).sort();
  expect(files.filter((f) => f.startsWith('latest'))).toEqual([]);
  expect(files.map((f) => f.replace(/^[\d-]+/, ''))).toEqual(['quick-fleet.json', 'quick-fleet.md']);
  const results = JSON.parse(readFileSync(join(out, files[0]!), 'utf8')) as BenchResults;
  const f = results.fleet!;
  expect(f.points.map((p) => [p.members, p.candidates])).toEqual([
    [1, 2],
    [2, 4],
  ]);
  for (const p of f.points) {
    expect(p.syncMs).toBeGreaterThanOrEqual(p.startupMs);
    expect(p.rest.rssMb).toBeGreaterThan(0);
    // The export controller beside the router: it reached every member's imports and statuses, then was measured.
    expect(p.controller.syncMs).toBeGreaterThan(0);
    expect(p.controller.rest.rssMb).toBeGreaterThan(0);
  }
  expect(Number.isFinite(f.slope.rssMbPerMember)).toBe(true);
  expect(f.visibility.members).toBe(2);
  expect(f.visibility.ms).toHaveLength(3);
  for (const ms of f.visibility.ms) expect(ms).toBeGreaterThan(0);
  expect(f.everywhere.ms).toHaveLength(3);
  for (const ms of f.everywhere.ms) expect(ms).toBeGreaterThan(0);
  expect([f.churn.members, f.churn.ops]).toEqual([2, 10]);
  expect(f.churn.snapshots).toBeGreaterThan(0);
  expect(f.churn.controller.cpuPct).toBeGreaterThan(0);
  expect(results.budget.map((b) => b.item)).toEqual([
    'new export visible in the router (pool written to one member -> candidate in /debug/routes), 2 members',
    "new export in every member (pool written to one member -> the export controller's InferencePoolImport in all 2)",
    'router RSS per member at rest (slope over 1, 2 members, 2 pools each)',
  ]);
  expect(results.dataPath.cells).toEqual([]);
  expect(results.controlPlane.build).toEqual([]);
  expect(readFileSync(join(out, files[1]!), 'utf8')).toContain('## Fleet: members from ClusterProfiles');
}, 180_000);
