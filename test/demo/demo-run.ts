/**
 * Running `npm run demo` as a child process the way the package script runs it (the tsx CLI
 * on demo/main.ts), and talking to its front door over real HTTP: what the end-to-end demo
 * tests share.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { GatewayShape } from '../../demo/gateway-shape.js';
import { layout, portIsFree, portsOf } from '../../demo/layout.js';
import { buildIsStale, buildRouter, ROOT, ROUTER_MAIN } from '../../demo/router-process.js';

/**
 * Builds the router once, outside the tests' time budget (the demo would do it itself, as on a
 * fresh clone); the runs use --no-build so edits to src/ made meanwhile do not trigger rebuilds.
 * Like the demo, falls back to an existing build when src/ is mid-edit (npm test's pretest build
 * still fails loudly).
 */
export async function ensureBuild(): Promise<void> {
  if (!buildIsStale()) return;
  try {
    await buildRouter();
  } catch (err) {
    if (!existsSync(ROUTER_MAIN)) throw err;
  }
}

export const TSX_CLI = join(ROOT, 'node_modules/tsx/dist/cli.mjs');
export const PODS = 3;

export interface DemoRun {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves with the first match of `re` in stdout (waiting for it), or rejects after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

export function runDemo(args: string[]): DemoRun {
  // Its own process group, so a Ctrl-C can be sent the way a terminal sends it: to the whole group (tsx and the demo).
  const child = spawn(process.execPath, [TSX_CLI, 'demo/main.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
    detached: true,
  });
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of [...listeners]) l();
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      for (const l of [...listeners]) l();
      resolve({ code, signal });
    }),
  );
  return {
    child,
    exited,
    output: () => out,
    stderr: () => err,
    waitFor(re, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const m = out.match(re);
          if (m) {
            done();
            resolve(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            done();
            reject(new Error(`demo exited before printing ${re}\n--- stdout\n${out}\n--- stderr\n${err}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`demo did not print ${re} within ${timeoutMs} ms\n--- stdout\n${out}\n--- stderr\n${err}`));
        }, timeoutMs);
        const done = (): void => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** A base port whose whole layout (of that shape) is free (away from the default 8080, other tests' ports and ephemeral ports). */
export async function freeBasePort(shape: GatewayShape = 'envoy'): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    // Below Linux's ephemeral range (32768-60999), where other processes' outgoing connections take ports at random.
    const base = 20_000 + Math.floor(Math.random() * 600) * 20;
    const ports = portsOf(layout(base, PODS, shape)).map((p) => p.port);
    let free = true;
    for (const p of ports) if (!(await portIsFree(p))) free = false;
    if (free) return base;
  }
  throw new Error('no free port range for the demo');
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line contains `needle` (read from /proc; Linux only). */
export function processesWith(needle: string): number[] {
  if (!existsSync('/proc')) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(needle)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export interface Completion {
  status: number;
  body: { choices?: { text?: string; message?: { content?: string } }[]; served_by?: { cluster: string; pod: string; endpoint: string } };
  headers: Record<string, string | string[] | undefined>;
}

export const agent = new Agent({ connections: 16 });

export async function complete(base: number, path = '/v1/completions', extra: Record<string, unknown> = {}): Promise<Completion> {
  const chat = path.includes('chat');
  const payload = chat ? { model: 'llama3-8b', messages: [{ role: 'user', content: 'Hi' }] } : { model: 'llama3-8b', prompt: 'Hello' };
  const res = await request(`http://127.0.0.1:${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...payload, ...extra }),
    dispatcher: agent,
  });
  const text = await res.body.text();
  let body: Completion['body'] = {};
  try {
    body = JSON.parse(text) as Completion['body'];
  } catch {
    body = {};
  }
  return { status: res.statusCode, body, headers: res.headers };
}

/** `n` completions, `concurrency` at a time; the cluster (or "error <status>") of each. */
export async function many(base: number, n: number, concurrency: number): Promise<string[]> {
  const out: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const r = await complete(base, i % 2 === 0 ? '/v1/completions' : '/v1/chat/completions');
        out.push(r.status === 200 && r.body.served_by ? r.body.served_by.cluster : `error ${r.status}`);
      }
    }),
  );
  return out;
}

/** A demo that printed "Ready.", with the router's pid and config file from its banner. */
export interface StartedDemo {
  readonly demo: DemoRun;
  readonly routerPid: number;
  readonly configFile: string;
}

export async function startDemo(args: string[]): Promise<StartedDemo> {
  const demo = runDemo(args);
  await demo.waitFor(/^Ready\./m, 60_000);
  const routerPid = Number((await demo.waitFor(/the real one \(pid (\d+)\)/, 1000))[1]);
  const configFile = (await demo.waitFor(/config: (\S+router\.yaml)/, 1000))[1]!;
  return { demo, routerPid, configFile };
}

/** Leaves nothing behind after a test: SIGKILL to the demo's process group, and to the router. */
export async function killDemo(demo: DemoRun | undefined, routerPid: number | undefined): Promise<void> {
  if (demo && demo.child.exitCode === null && demo.child.signalCode === null) {
    process.kill(-demo.child.pid!, 'SIGKILL');
    await demo.exited;
  }
  if (routerPid && alive(routerPid)) process.kill(routerPid, 'SIGKILL');
}

/** Ctrl-C the way a terminal sends it (SIGINT to the whole process group); resolves with how the demo exited. */
export function interrupt(demo: DemoRun): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  process.kill(-demo.child.pid!, 'SIGINT');
  return Promise.race([
    demo.exited,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`demo did not exit within 15 s\n${demo.output()}`)), 15_000)),
  ]);
}
