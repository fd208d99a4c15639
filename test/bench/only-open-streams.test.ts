/**
 * `npm run bench -- --only-open-streams` end to end (real processes, tiny
 * stream count): the results hold the fresh open-streams cell for every
 * set-up and nothing else, and latest.* is not touched. No RSS bounds: the
 * machine is shared.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ROOT } from '../../bench/lib/paths.js';
import type { BenchResults } from '../../bench/lib/types.js';

const STREAMS = 30;
const out = mkdtempSync(join(tmpdir(), 'mcip-bench-open-streams-'));

afterAll(() => rmSync(out, { recursive: true, force: true }));

it('measures only the fresh open-streams cell of router, floor, h2floor and direct', () => {
  const run = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'bench/run.ts'), '--only-open-streams', '--open-streams', String(STREAMS), '--router-transport', 'http2', '--out', out],
    { cwd: ROOT, encoding: 'utf8', timeout: 110_000 },
  );
  expect(run.status, run.stderr.slice(-3000)).toBe(0);
  const files = readdirSync(out);
  expect(files.some((f) => f.startsWith('latest'))).toBe(false);
  const results = JSON.parse(readFileSync(join(out, files.find((f) => f.endsWith('.json'))!), 'utf8')) as BenchResults;
  const dp = results.dataPath;
  expect(dp.openStreams.map((o) => [o.setup, o.phase, o.streams])).toEqual(
    ['router', 'floor', 'h2floor', 'direct'].map((setup) => [setup, 'fresh', STREAMS]),
  );
  for (const o of dp.openStreams) expect(o.heldRssMb).toBeGreaterThan(0);
  expect(dp.routerIdleRssMb).toBeGreaterThan(0);
  expect(dp.routerMemoryAfterLoad.heapUsedMb).toBeGreaterThan(0);
  expect(dp.cells).toEqual([]);
  expect(dp.streaming).toBeUndefined();
  expect(dp.closeCheck.cells).toEqual([]);
  expect(results.controlPlane.build).toEqual([]);
  expect(results.budget.some((b) => b.item === `router RSS with ${STREAMS} concurrent open streams`)).toBe(true);
}, 120_000);
