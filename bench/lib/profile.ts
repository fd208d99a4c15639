/**
 * Summarises a V8 .cpuprofile (node --cpu-prof): time by category (router
 * code, grpc-js, protobufjs, Node core, GC, ...), the hottest functions by
 * self time, and the router's own functions by inclusive time.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ProfileSummary } from './types.js';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly startTime: number;
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * Node flags that `--cpu-prof` one process into a directory of its own, and the entry
 * run.ts reads it from: the directory, whose largest profile is the main thread's
 * (a child run under tsx also writes an idle one from tsx's loader thread).
 */
export function cpuProfile(profileDir: string, dirName: string, processName = dirName): { flags: string[]; profile: { process: string; file: string } } {
  const dir = join(profileDir, dirName);
  mkdirSync(dir, { recursive: true });
  return { flags: ['--cpu-prof', `--cpu-prof-dir=${dir}`], profile: { process: processName, file: dir } };
}

const CATEGORIES: readonly [string, (f: CallFrame) => boolean][] = [
  ['idle', (f) => f.functionName === '(idle)'],
  ['garbage collector', (f) => f.functionName === '(garbage collector)'],
  ['program (native, unattributed)', (f) => f.functionName === '(program)' || f.functionName === '(root)'],
  ['router (dist/src)', (f) => f.url.includes('/dist/src/') || (f.url.includes('/src/') && !f.url.includes('/node_modules/') && !f.url.startsWith('node:'))],
  ['bench child code', (f) => f.url.includes('/bench/')],
  ['grpc-js', (f) => f.url.includes('/@grpc/grpc-js/')],
  ['protobufjs', (f) => f.url.includes('/protobufjs/') || f.url.includes('/@protobufjs/')],
  ['pino', (f) => f.url.includes('/pino') || f.url.includes('/thread-stream/') || f.url.includes('/sonic-boom/')],
  ['prom-client', (f) => f.url.includes('/prom-client/')],
  ['yaml', (f) => f.url.includes('/node_modules/yaml/')],
  ['zod', (f) => f.url.includes('/node_modules/zod/')],
  ['undici', (f) => f.url.includes('/undici/')],
  ['other dependencies', (f) => f.url.includes('/node_modules/')],
  ['node core', (f) => f.url.startsWith('node:')],
  ['native / builtins', () => true],
];

function categoryOf(f: CallFrame): string {
  for (const [name, test] of CATEGORIES) if (test(f)) return name;
  return 'native / builtins';
}

function where(f: CallFrame): string {
  const url = f.url.replace(/^file:\/\//, '');
  const short = url.includes('/node_modules/')
    ? url.slice(url.lastIndexOf('/node_modules/') + '/node_modules/'.length)
    : url.includes('/dist/')
      ? url.slice(url.indexOf('/dist/') + 1)
      : url.includes('/src/')
        ? url.slice(url.lastIndexOf('/src/') + 1)
        : url;
  return short ? `${short}:${f.lineNumber + 1}` : '(native)';
}

const key = (f: CallFrame): string => `${f.functionName || '(anonymous)'}\u0000${f.url}\u0000${f.lineNumber}`;
const r1 = (n: number): number => Math.round(n * 10) / 10;

/** Monotonic clock in µs, the clock V8 stamps profile samples with (CLOCK_MONOTONIC on Linux). */
export function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * `window`: [from, to] in monotonicUs(); samples outside it (start-up, idle
 * tails) are left out. If no sample falls inside, every sample is used.
 */
export function summarizeProfile(processName: string, file: string, window?: readonly [number, number], top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const stamps: number[] = [];
  let t = profile.startTime;
  for (const dt of profile.timeDeltas) stamps.push((t += dt));
  const inWindow = window ? stamps.filter((x) => x >= window[0] && x <= window[1]).length : 0;
  const keep = (i: number): boolean => !window || inWindow === 0 || (stamps[i]! >= window[0] && stamps[i]! <= window[1]);
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const self = new Map<string, { f: CallFrame; us: number }>();
  const total = new Map<string, { f: CallFrame; us: number }>();
  const categories = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    if (!keep(i)) continue;
    const node = byId.get(profile.samples[i]!);
    if (!node) continue;
    const dt = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    const cat = categoryOf(node.callFrame);
    categories.set(cat, (categories.get(cat) ?? 0) + dt);
    if (cat === 'idle') continue;
    busy += dt;
    const k = key(node.callFrame);
    const s = self.get(k) ?? { f: node.callFrame, us: 0 };
    s.us += dt;
    self.set(k, s);
    const seen = new Set<string>();
    for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (categoryOf(f) !== 'router (dist/src)') continue;
      const fk = key(f);
      if (seen.has(fk)) continue;
      seen.add(fk);
      const t = total.get(fk) ?? { f, us: 0 };
      t.us += dt;
      total.set(fk, t);
    }
  }
  const pct = (us: number): number => (busy > 0 ? r1((us / busy) * 100) : 0);
  return {
    process: window && inWindow > 0 ? `${processName}, load phase only` : processName,
    file,
    totalMs: r1(busy / 1000),
    categories: [...categories.entries()]
      .filter(([name]) => name !== 'idle')
      .map(([name, us]) => ({ name, ms: r1(us / 1000), pct: pct(us) }))
      .sort((a, b) => b.ms - a.ms),
    topSelf: [...self.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((s) => ({ fn: s.f.functionName || '(anonymous)', where: where(s.f), ms: r1(s.us / 1000), pct: pct(s.us) })),
    topRouter: [...total.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((t) => ({
        fn: t.f.functionName || '(anonymous)',
        where: where(t.f),
        selfMs: r1((self.get(key(t.f))?.us ?? 0) / 1000),
        totalMs: r1(t.us / 1000),
        pct: pct(t.us),
      })),
  };
}
