/**
 * `npm run bench` (see bench/README.md): the data-path and control-plane
 * benchmarks, the budget check, and the report files
 * bench/results/<date>.{json,md,svg} (+ -control-plane.svg; full runs also
 * refresh latest.*).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { checkBudget, formatBudget } from './budget.js';
import { runControlPlane } from './control-plane.js';
import { runDataPath } from './data-path.js';
import { runFleet } from './fleet.js';
import { parseArgs, type BenchOptions } from './lib/args.js';
import { ROOT, ROUTER_MAIN } from './lib/paths.js';
import { summarizeProfile } from './lib/profile.js';
import type { BenchResults, DataPathResults, Meta, ProfileSummary } from './lib/types.js';
import { runPickerRole } from './picker-role.js';
import { controlPlaneChart, latencyChart } from './report/charts.js';
import { renderFleetMarkdown, renderMarkdown } from './report/markdown.js';

const log = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** The router must run as compiled JS: rebuild dist/ when src/ is newer. */
function ensureDist(o: BenchOptions): void {
  const stale = !existsSync(ROUTER_MAIN) || statSync(ROUTER_MAIN).mtimeMs < newestMtime(join(ROOT, 'src'));
  if (stale && o.build) {
    log('dist/ is older than src/: building (tsc -p tsconfig.build.json)');
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
    } catch {
      log('warning: tsc reported errors (work in progress in src/?); benchmarking what it emitted');
    }
  } else if (stale) {
    log('warning: dist/ is older than src/ (--no-build): benchmarking the existing build');
  }
  if (!existsSync(ROUTER_MAIN)) throw new Error(`${ROUTER_MAIN} is missing: run npm run build`);
}

/** `path` itself, or for a directory its largest .cpuprofile; undefined when there is none. */
function largestProfile(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  if (!statSync(path).isDirectory()) return path;
  const files = readdirSync(path).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(path, f));
  return files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
}

function stamp(d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function gitHead(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    // What the router, the bench and their dependencies are built from (results files aside).
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bench', 'protos', 'package.json', 'package-lock.json', ':!bench/results'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return dirty ? `${head} (+ uncommitted work)` : head;
  } catch {
    return 'unknown';
  }
}

/**
 * What the machine's load says about the numbers. The bench itself keeps both cores busy, so
 * the load average at the end is mostly its own; the one at start tells whether anything
 * else was running.
 */
function caveat(cores: number, atStart: number, atEnd: number): string {
  const shared =
    'generator, EPP, proxies and routers all compete for the same cores, so absolute numbers include the scheduling of several busy processes on ' +
    `${cores} cores. Set-ups are interleaved per cell to spread any drift evenly.`;
  if (atStart < 1) {
    return (
      `Measured on the ${cores}-core machine with nothing else running (1-min load average ${atStart.toFixed(2)} at start; ` +
      `${atEnd.toFixed(1)} at end, the bench's own load): ${shared}`
    );
  }
  return (
    `Measured on a shared ${cores}-core machine with other work running (1-min load average ${atStart.toFixed(1)} at start, ` +
    `${atEnd.toFixed(1)} at end): ${shared} Absolute numbers and even ratios are noisy: re-run on an idle machine before trusting a PASS or MISS.`
  );
}

const EMPTY_DATA_PATH: DataPathResults = {
  setups: [], variants: [], rounds: 0, warmupMs: 0, measureMs: 0, connections: 0, maxRequestsPerConnection: 0, generatorConnections: {}, routerNodeArgs: [], rateRps: {}, cells: [], comparisons: [], openStreams: [], routerIdleRssMb: NaN, routerSignals: {},
  routerMemoryAfterLoad: { rssMb: NaN, heapUsedMb: NaN, heapTotalMb: NaN, externalMb: NaN }, profiled: false, closeMode: 'reset', closeCheck: { mode: 'graceful', cells: [] },
};

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const started = new Date();
  const loadAvgStart = loadavg();
  ensureDist(o);
  // The routers load dist/ once at start; later rebuilds by others do not change what was measured.
  const distBuiltAt = statSync(ROUTER_MAIN).mtime.toISOString();
  const name = `${stamp(started)}${o.quick ? '-quick' : ''}${o.onlyFleet ? '-fleet' : ''}`;
  const profileDir = join(o.out, 'profiles', name);
  mkdirSync(o.out, { recursive: true });

  const dp = o.skipDataPath ? { results: EMPTY_DATA_PATH, profiles: [] } : await runDataPath(o, profileDir);
  const cp = o.skipControlPlane ? { results: { build: [], picker: [], reload: [] }, profiles: [] } : await runControlPlane(o, profileDir);
  const pickerRole = o.pickerRole ? await runPickerRole(o) : undefined;
  const fleet = o.skipFleet ? undefined : await runFleet(o);

  const profiles: ProfileSummary[] = [];
  const written: readonly { process: string; file: string; window?: readonly [number, number] }[] = [...dp.profiles, ...cp.profiles];
  for (const p of written) {
    const file = largestProfile(p.file);
    if (file) profiles.push(summarizeProfile(p.process, file, p.window));
    else log(`warning: profile ${p.file} was not written`);
  }
  const loadAvgEnd = loadavg();
  const meta: Meta = {
    date: started.toISOString(),
    quick: o.quick,
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    loadAvgStart,
    loadAvgEnd,
    distBuiltAt,
    gitHead: gitHead(),
    caveat: caveat(cpus().length, loadAvgStart[0]!, loadAvgEnd[0]!),
    wallS: (performance.now() - t0) / 1000,
  };
  const partial = { dataPath: dp.results, controlPlane: cp.results, ...(pickerRole ? { pickerRole } : {}), ...(fleet ? { fleet } : {}) };
  const results: BenchResults = { meta, ...partial, budget: checkBudget(partial), profiles };

  const files = { json: `${name}.json`, md: `${name}.md`, svg: `${name}.svg`, cpSvg: `${name}-control-plane.svg` };
  writeFileSync(join(o.out, files.json), JSON.stringify(results, null, 2) + '\n');
  if (o.onlyFleet) {
    // One cell: its JSON and summary, no charts.
    writeFileSync(join(o.out, files.md), renderFleetMarkdown(results) + '\n');
    process.stdout.write(`\n${formatBudget(results.budget)}\n\n${meta.caveat}\n\nresults: ${join(o.out, files.json)}\nsummary: ${join(o.out, files.md)}\n`);
    return;
  }
  // The charts of the parts that ran (the report links only those).
  if (!o.skipDataPath) writeFileSync(join(o.out, files.svg), latencyChart(results));
  if (!o.skipControlPlane) writeFileSync(join(o.out, files.cpSvg), controlPlaneChart(results));
  writeFileSync(join(o.out, files.md), renderMarkdown(results, { svg: files.svg, cpSvg: files.cpSvg }) + '\n');
  if (o.latest) {
    copyFileSync(join(o.out, files.json), join(o.out, 'latest.json'));
    copyFileSync(join(o.out, files.svg), join(o.out, 'latest.svg'));
    copyFileSync(join(o.out, files.cpSvg), join(o.out, 'latest-control-plane.svg'));
    // latest.md links the latest SVGs.
    writeFileSync(join(o.out, 'latest.md'), renderMarkdown(results, { svg: 'latest.svg', cpSvg: 'latest-control-plane.svg' }) + '\n');
  }
  process.stdout.write(`\n${formatBudget(results.budget)}\n\n${meta.caveat}\n`);
  for (const p of profiles) {
    process.stdout.write(`\nprofile ${p.process}: ${p.categories.slice(0, 6).map((c) => `${c.name} ${c.pct}%`).join(', ')}\n`);
  }
  process.stdout.write(`\nresults: ${join(o.out, files.json)}\nsummary: ${join(o.out, files.md)}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
