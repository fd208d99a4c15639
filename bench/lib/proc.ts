/**
 * Child processes of the bench and what they cost: fork the TypeScript
 * children (under tsx), spawn the compiled router, read a process's CPU time
 * and RSS from /proc, and sample RSS peaks during a measured window.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { RpcClient } from './rpc.js';
import { ROOT, ROUTER_MAIN } from './paths.js';

/** Clock ticks per second of /proc/<pid>/stat utime/stime (USER_HZ: 100 on Linux). */
const CLK_TCK = 100;

export interface Usage {
  /** utime + stime, ms. */
  readonly cpuMs: number;
  readonly rssMb: number;
}

/** CPU time and RSS of a live process (Linux /proc). */
export function procUsage(pid: number): Usage {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Field 2 (comm) is in parentheses and may contain spaces: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 'NaN');
  return { cpuMs: (ticks * 1000) / CLK_TCK, rssMb: rssKb / 1024 };
}

/** Tracks the RSS peak of a few processes while a window runs. */
export class RssSampler {
  private readonly peaks = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pids: readonly number[], private readonly everyMs = 100) {}

  start(): void {
    this.peaks.clear();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
  }

  peak(pid: number): number {
    return this.peaks.get(pid) ?? NaN;
  }

  private sample(): void {
    for (const pid of this.pids) {
      try {
        const rss = procUsage(pid).rssMb;
        this.peaks.set(pid, Math.max(this.peaks.get(pid) ?? 0, rss));
      } catch {
        // exited
      }
    }
  }
}

export interface BenchChild {
  readonly name: string;
  readonly pid: number;
  readonly rpc: RpcClient;
  readonly info: unknown;
  stop(): Promise<void>;
}

/** Waits for the child to exit; after `graceMs` sends `signal` and resolves (SIGKILL: once it is gone). */
function waitExit(child: ChildProcess, graceMs: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill(signal);
      if (signal !== 'SIGKILL') resolve();
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Forks a bench child (TypeScript under tsx) and waits for its `ready` message. */
export async function forkChild(name: string, file: string, args: readonly string[] = [], nodeFlags: readonly string[] = []): Promise<BenchChild> {
  const child = fork(file, [...args], {
    cwd: ROOT,
    execArgv: [...nodeFlags, '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const rpc = new RpcClient(child, name);
  const info = await rpc.ready;
  return {
    name,
    pid: child.pid!,
    rpc,
    info,
    async stop() {
      // Disconnecting lets the child exit on its own (and write a --cpu-prof profile); SIGTERM if it does not.
      if (child.connected) child.disconnect();
      await waitExit(child, 2000, 'SIGTERM');
      await waitExit(child, 3000);
    },
  };
}

export interface RouterProcess {
  readonly pid: number;
  readonly extProc: string;
  readonly admin: string;
  /** The relay verifier's address (listen.relay), when it serves one. */
  readonly relay?: string;
  /** ms from spawn to the "serving" log line. */
  readonly startupMs: number;
  /** Calls `cb` with every JSON log line from now on (and the time it arrived); returns an unsubscribe. */
  onLog(cb: (entry: Record<string, unknown>, at: number) => void): () => void;
  /** SIGTERM (graceful drain), SIGKILL after a grace period. */
  stop(): Promise<void>;
}

/** Starts the compiled router (`node dist/src/main.js --config FILE`) and waits until it serves. */
export function spawnRouter(configFile: string, nodeFlags: readonly string[] = [], timeoutMs = 60_000, env: Record<string, string> = {}): Promise<RouterProcess> {
  return spawnCli([], 'mcip-router serving', configFile, nodeFlags, timeoutMs, env);
}

/** Starts the compiled export controller (`--export-controller --config FILE`) and waits until it runs. */
export function spawnExportController(configFile: string, nodeFlags: readonly string[] = [], timeoutMs = 60_000): Promise<RouterProcess> {
  return spawnCli(['--export-controller'], 'mcip-router export controller running', configFile, nodeFlags, timeoutMs, {});
}

/** The compiled CLI with `mode` flags; resolves at the log line `ready` (its admin address, and extProc if it logs one). */
function spawnCli(mode: readonly string[], ready: string, configFile: string, nodeFlags: readonly string[], timeoutMs: number, env: Record<string, string>): Promise<RouterProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, ROUTER_MAIN, ...mode, '--config', configFile], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const listeners = new Set<(entry: Record<string, unknown>, at: number) => void>();
  let stderr = '';
  let buffered = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  child.stdout!.on('data', (d: Buffer) => {
    const at = performance.now();
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      for (const l of listeners) l(entry, at);
    }
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${[ROUTER_MAIN, ...mode].join(' ')} did not start within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    const onExit = (code: number | null): void => {
      clearTimeout(timer);
      reject(new Error(`${[ROUTER_MAIN, ...mode].join(' ')} exited with ${code} before "${ready}"\n${stderr}`));
    };
    child.once('exit', onExit);
    const serving = (entry: Record<string, unknown>, at: number): void => {
      if (entry.msg !== ready) return;
      listeners.delete(serving);
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve({
        pid: child.pid!,
        extProc: String(entry.extProc),
        admin: String(entry.admin),
        ...(typeof entry.relay === 'string' ? { relay: entry.relay } : {}),
        startupMs: at - started,
        onLog(cb) {
          listeners.add(cb);
          return () => listeners.delete(cb);
        },
        async stop() {
          child.kill('SIGTERM');
          await waitExit(child, 20_000);
        },
      });
    };
    listeners.add(serving);
  });
}
