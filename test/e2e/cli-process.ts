/**
 * Runs the built CLI (`node dist/src/main.js`) as a child process, the way an
 * operator or a container runtime does. `npm test` builds first (pretest); a
 * stale or missing build is rebuilt here so single-file runs work too.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const MAIN = join(ROOT, 'dist/src/main.js');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

export function ensureBuilt(): void {
  if (existsSync(MAIN) && statSync(MAIN).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: 'inherit',
  });
}

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI to completion (for --help, --check and failures). `nodeArgs` go before the script (e.g. `--import`). */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000, nodeArgs: string[] = []): Promise<CliRun> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, MAIN, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`mcip-router ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

export interface ServingRouter {
  readonly child: ChildProcess;
  readonly extProc: string;
  readonly admin: string;
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[];
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
}

/** Starts `mcip-router --config FILE` and waits for its "serving" log line. */
export function startCli(
  args: string[],
  timeoutMs = 20_000,
  o: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<ServingRouter> {
  return new Promise((resolveStart, reject) => {
    const child = spawn(process.execPath, [...(o.nodeArgs ?? []), MAIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs: Record<string, unknown>[] = [];
    let stderr = '';
    let buffered = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`router did not start within ${timeoutMs} ms\n${stderr}\n${JSON.stringify(logs)}`));
    }, timeoutMs);
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          logs.push(entry);
          if (entry.msg === 'mcip-router serving') {
            clearTimeout(timer);
            resolveStart({ child, extProc: String(entry.extProc), admin: String(entry.admin), logs, exited });
          }
        } catch {
          stderr += `[non-JSON stdout] ${line}\n`;
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`router exited with ${code} before serving\n${stderr}`));
    });
  });
}
