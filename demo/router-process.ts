/**
 * The real mcip-router, run the way an operator runs it: `node dist/src/main.js
 * --config FILE` as a child process. The config is examples/router.yaml with
 * the demo's loopback ports (and faster health checks and scrapes so faults
 * show within a second or two); the manifests are examples/cluster-a and
 * examples/cluster-b, unchanged. In the byo shape (gateway-shape.ts) the router is
 * the Endpoint Picker of a multi-cluster InferencePool written next to the config:
 * cluster-a's pool plus that manifest, no Gateway of its own to serve, one picker port.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { DEFAULT_EPP_HEADERS } from '../src/config/guard-schema.js';
import { endpointPickerConfig, writeMultiClusterPool } from './gateway-shape.js';
import { CLUSTERS, HOST, type Layout } from './layout.js';
import { raceTimeout, TIMED_OUT } from './timing.js';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const ROUTER_MAIN = join(ROOT, 'dist/src/main.js');
export const EXAMPLES = join(ROOT, 'examples');

function newestMtime(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = st.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** True when dist/src/main.js is missing or older than anything it is built from. */
export function buildIsStale(): boolean {
  if (!existsSync(ROUTER_MAIN)) return true;
  const inputs = [join(ROOT, 'src'), join(ROOT, 'tsconfig.build.json'), join(ROOT, 'tsconfig.json')];
  return statSync(ROUTER_MAIN).mtimeMs < Math.max(...inputs.filter(existsSync).map(newestMtime));
}

/** `tsc -p tsconfig.build.json` (what `npm run build` runs). Rejects with the compiler output. */
export function buildRouter(): Promise<void> {
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  return new Promise((resolveBuild, reject) => {
    execFile(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? reject(new Error(`building the router failed (npm run build):\n${stdout}${stderr}`)) : resolveBuild(),
    );
  });
}

/** Health and scrape timing for the demo: fast, so kills and saturation show within ~1-2 s. */
export const DEMO_SIGNALS = {
  health: { intervalMs: 500, timeoutMs: 400, healthyThreshold: 1, unhealthyThreshold: 2 },
  metricsIntervalMs: 1000,
} as const;

/**
 * The router config: examples/router.yaml with the demo's ports. With `multiClusterPool`
 * (the byo shape: the manifest file of the multi-cluster InferencePool), the router serves
 * no Gateway; cluster-a's objects are its InferencePool and that multi-cluster pool, and the
 * picker port of the layout is on.
 */
export function routerConfig(l: Layout, multiClusterPool?: string): Record<string, unknown> {
  const manifests = (name: string): string[] =>
    multiClusterPool !== undefined && name === 'cluster-a' ? [join(EXAMPLES, name, 'inferencepool.yaml'), multiClusterPool] : [join(EXAMPLES, name)];
  return {
    clusterName: 'cluster-a',
    mode: 'Endpoint',
    listen: { extProc: `${HOST}:${l.routerExtProc}`, admin: `${HOST}:${l.routerAdmin}` },
    gateways: multiClusterPool === undefined ? [{ namespace: 'default', name: 'inference-gateway' }] : [],
    ...(multiClusterPool === undefined ? {} : { endpointPicker: endpointPickerConfig(l) }),
    clusters: CLUSTERS.map((name) => ({
      name,
      manifests: { paths: manifests(name) },
      epp: {
        tls: { enabled: false },
        health: DEMO_SIGNALS.health,
        metrics: { port: l.clusters[name].metrics, intervalMs: DEMO_SIGNALS.metricsIntervalMs, timeoutMs: 500 },
      },
      // The demo's model servers listen on loopback, which no member may route to by default,
      // and its EPPs name themselves in a response header the front door shows.
      eppAnswers: { destinations: { allow: ['127.0.0.0/8'], deny: [] }, headers: [...DEFAULT_EPP_HEADERS, 'x-demo-picked-by'] },
      addressOverrides: {
        // Where the Service llm-pool-epp of this cluster is reachable (a LoadBalancer address in a real ClusterSet).
        services: [{ namespace: 'default', name: 'llm-pool-epp', address: `${HOST}:${l.clusters[name].epp}` }],
      },
    })),
    extProc: { eppConnectTimeoutMs: 500, drainTimeoutMs: 3000 },
    outlier: { consecutiveFailures: 3, baseEjectionMs: 5000 },
  };
}

export interface RouterFiles {
  readonly configFile: string;
  /** The multi-cluster InferencePool's manifest (byo shape only). */
  readonly multiClusterPool?: string;
}

/** Writes the router config into `dir`, and in the byo shape (a layout with a picker port) the multi-cluster pool beside it. */
export async function writeRouterConfig(dir: string, l: Layout): Promise<RouterFiles> {
  const configFile = join(dir, 'router.yaml');
  const multiClusterPool = l.routerPicker === undefined ? undefined : await writeMultiClusterPool(dir, l);
  const header =
    '# Generated by `npm run demo` from examples/router.yaml: the same clusters and manifests,\n' +
    '# with the demo\'s loopback ports and faster health checks and scrapes.\n' +
    (multiClusterPool === undefined ? '' : '# Bring your own gateway: the router is the Endpoint Picker of the multi-cluster pool beside this file.\n');
  await writeFile(configFile, header + stringify(routerConfig(l, multiClusterPool)));
  return { configFile, ...(multiClusterPool === undefined ? {} : { multiClusterPool }) };
}

/**
 * Loaded into the router process before its own code (node --import): when the
 * demo goes away in any way, even SIGKILL, the router's stdin pipe closes and
 * the router stops itself gracefully (SIGTERM). Nothing else of the router changes.
 */
const PARENT_GUARD =
  'data:text/javascript,' +
  encodeURIComponent(
    "process.stdin.on('end', () => process.kill(process.pid, 'SIGTERM')); process.stdin.on('error', () => {}); process.stdin.resume();",
  );

export type RouterLog = Record<string, unknown> & { level?: number; msg?: string };

export interface RouterProcessOptions {
  readonly configFile: string;
  readonly onLog: (entry: RouterLog) => void;
  /** Called if the router exits on its own (not through stop()). */
  readonly onUnexpectedExit: (code: number | null, signal: NodeJS.Signals | null, stderr: string) => void;
}

export class RouterProcess {
  private child: ChildProcess | undefined;
  private stopping = false;
  private stderr = '';
  private exited: Promise<number | null> = Promise.resolve(null);
  private readonly killOnExit = (): void => {
    // Last resort if the demo dies without stop(): never leave the router behind.
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  };

  constructor(private readonly opts: RouterProcessOptions) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Spawns the router and resolves once it logs "mcip-router serving". */
  start(timeoutMs = 20_000): Promise<void> {
    // Own process group: a Ctrl-C in the terminal reaches the demo only, which then stops the
    // router once (SIGTERM: drain, exit 0) instead of the router seeing two signals.
    const child = spawn(process.execPath, ['--import', PARENT_GUARD, ROUTER_MAIN, '--config', this.opts.configFile], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    this.child = child;
    process.on('exit', this.killOnExit);
    this.exited = new Promise((r) => child.on('exit', (code) => r(code)));
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-8192);
    });
    return new Promise((resolveStart, reject) => {
      let serving = false;
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`mcip-router did not start within ${timeoutMs} ms\n${this.stderr}`));
      }, timeoutMs);
      let buffered = '';
      child.stdout!.on('data', (d: Buffer) => {
        buffered += d.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          let entry: RouterLog;
          try {
            entry = JSON.parse(line) as RouterLog;
          } catch {
            entry = { level: 30, msg: line };
          }
          this.opts.onLog(entry);
          if (!serving && entry.msg === 'mcip-router serving') {
            serving = true;
            clearTimeout(timer);
            resolveStart();
          }
        }
      });
      child.on('exit', (code, signal) => {
        process.off('exit', this.killOnExit);
        if (!serving) {
          clearTimeout(timer);
          reject(new Error(`mcip-router exited (${signal ?? code}) before serving:\n${this.stderr}`));
        } else if (!this.stopping) {
          this.opts.onUnexpectedExit(code, signal, this.stderr);
        }
      });
    });
  }

  /**
   * SIGTERM (the router drains and exits 0); SIGKILL if it takes longer than `timeoutMs`.
   * Resolves with the exit code (null: killed), or undefined if it was not running.
   */
  async stop(timeoutMs = 6000): Promise<number | null | undefined> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return undefined;
    this.stopping = true;
    child.kill('SIGTERM');
    const code = await raceTimeout(this.exited, timeoutMs);
    if (code !== TIMED_OUT) return code;
    child.kill('SIGKILL');
    await this.exited;
    return null;
  }

  /** Immediate kill (a second Ctrl-C). */
  kill(): void {
    this.stopping = true;
    this.killOnExit();
  }
}
