/**
 * One run of the demo: starts its parts in order (router build if stale, the
 * simulated clusters, the real mcip-router, the front door), prints the
 * banner, runs the live view, load, faults and keys until asked to stop, then
 * stops everything in order and prints the summary.
 */
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import type { DemoOptions } from './args.js';
import { printBanner, routeSummary } from './banner.js';
import { FaultInjector } from './faults.js';
import { FrontDoor, type FrontDoorOptions } from './front-door.js';
import { pickerAuthority, pickerPort } from './gateway-shape.js';
import { KeyControls } from './keys.js';
import { CLUSTERS, HOST, type ClusterName, type Layout } from './layout.js';
import { LoadGenerator } from './load.js';
import { buildIsStale, buildRouter, ROUTER_MAIN, RouterProcess, writeRouterConfig } from './router-process.js';
import { SimulatedCluster } from './sim-cluster.js';
import { Cancelled, handleStopSignals, StopRequest } from './stop-request.js';
import { sleep } from './timing.js';
import { bold, dim, LiveView } from './view.js';

export class DemoSession {
  private readonly clusters: Record<ClusterName, SimulatedCluster>;
  private readonly view: LiveView;
  private readonly load: LoadGenerator;
  private readonly faults: FaultInjector;
  private readonly keys: KeyControls;
  private readonly stop = new StopRequest();
  private readonly routerAdmin: string;
  private router: RouterProcess | undefined;
  private frontDoor: FrontDoor | undefined;
  private tempDir: string | undefined;
  private durationTimer: NodeJS.Timeout | undefined;
  private exitCode = 0;

  constructor(
    private readonly o: DemoOptions,
    private readonly ports: Layout,
  ) {
    this.clusters = {
      'cluster-a': new SimulatedCluster('cluster-a', ports.clusters['cluster-a'], o.latencyMs),
      'cluster-b': new SimulatedCluster('cluster-b', ports.clusters['cluster-b'], o.latencyMs),
    };
    this.routerAdmin = `${HOST}:${ports.routerAdmin}`;
    this.load = new LoadGenerator(ports.frontDoor, o.load);
    this.view = new LiveView({ routerAdmin: this.routerAdmin, verbose: o.verbose, load: () => this.load.rps });
    this.faults = new FaultInjector(this.clusters, this.view, () => this.stop.requested);
    this.keys = new KeyControls({ faults: this.faults, load: this.load, view: this.view, quit: (reason) => this.requestStop(reason) });
  }

  /** Runs until asked to stop; resolves with the exit code. */
  async run(): Promise<number> {
    handleStopSignals(
      (signal) => this.requestStop(signal),
      () => {
        this.router?.kill();
        if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
      },
    );
    try {
      await this.startAll();
      this.view.start();
      this.load.start();
      this.faults.schedule(this.o.faults, this.o.afterS, this.o.forS);
      if (this.o.durationS !== undefined) this.durationTimer = setTimeout(() => this.requestStop('--duration'), this.o.durationS * 1000);
      this.keys.start();
      const reason = await this.stop.reason;
      this.view.info(dim(`stopping (${reason})…`));
    } catch (err) {
      if (!(err instanceof Cancelled)) {
        process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
        this.exitCode = 1;
      }
    } finally {
      await this.stopAll();
    }
    return this.exitCode;
  }

  private requestStop(reason: string, code = 0): void {
    if (this.stop.request(reason)) this.exitCode = code;
  }

  private async startAll(): Promise<void> {
    const say = (s: string): void => void process.stdout.write(`${s}\n`);
    const shape = this.o.gateway === 'byo' ? 'the router as the Endpoint Picker behind your own gateway' : 'the router beside its own Envoy';
    say(bold(`mcip-router demo: two clusters of a ClusterSet, simulated on this machine; ${shape}`));
    await this.buildRouterIfStale(say);
    this.stop.checkpoint();
    for (const name of CLUSTERS) {
      await this.clusters[name].start();
      this.stop.checkpoint();
    }
    this.tempDir = await mkdtemp(join(tmpdir(), 'mcip-demo-'));
    const files = await writeRouterConfig(this.tempDir, this.ports);
    this.router = new RouterProcess({
      configFile: files.configFile,
      onLog: (entry) => this.view.routerLog(entry),
      onUnexpectedExit: (code, signal, stderr) => {
        process.stderr.write(`demo: mcip-router exited unexpectedly (${signal ?? `code ${code}`})\n${stderr}`);
        this.requestStop('the router exited', 1);
      },
    });
    await this.router.start();
    this.stop.checkpoint();
    this.frontDoor = new FrontDoor({ port: this.ports.frontDoor, ...this.routerCall(), onRequest: (r) => this.view.record(r) });
    await this.frontDoor.start();
    await this.waitForRouterSignals();
    this.stop.checkpoint();
    const routeLines = await routeSummary(this.routerAdmin);
    printBanner({ options: this.o, ports: this.ports, files, routerPid: this.router.pid, routeLines });
  }

  /** How the front door calls the router: Envoy's ext_proc cluster (envoy.yaml), or a gateway calling its Endpoint Picker. */
  private routerCall(): Pick<FrontDoorOptions, 'extProc' | 'routerTransport' | 'authority'> {
    if (this.o.gateway === 'envoy') return { extProc: `${HOST}:${this.ports.routerExtProc}` };
    return { extProc: `${HOST}:${pickerPort(this.ports)}`, routerTransport: 'skip-verify', authority: pickerAuthority(this.ports) };
  }

  /** `npm run build` when dist/ is missing or older than src/ (unless --no-build). */
  private async buildRouterIfStale(say: (s: string) => void): Promise<void> {
    if (this.o.noBuild && !existsSync(ROUTER_MAIN)) throw new Error(`--no-build, but there is no build: run npm run build first (${ROUTER_MAIN} is missing)`);
    if (this.o.noBuild || !buildIsStale()) return;
    say(dim('Building the router first (dist/ is missing or older than src/: npm run build)…'));
    try {
      await buildRouter();
    } catch (err) {
      if (!existsSync(ROUTER_MAIN)) throw err;
      // A half-edited working tree must not stop the demo when an earlier build exists.
      say(`${(err as Error).message.split('\n').slice(0, 6).join('\n')}\n${bold('The build failed: running the previous build in dist/ instead.')}`);
    }
  }

  /** Gives the router's first health checks a moment, so the first requests see both pools ready. */
  private async waitForRouterSignals(): Promise<void> {
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && !this.stop.requested) {
      try {
        const res = await request(`http://${this.routerAdmin}/debug/signals`);
        const body = (await res.body.json()) as { candidates?: Record<string, { ready?: string }> };
        const states = Object.values(body.candidates ?? {});
        if (states.length >= CLUSTERS.length && states.every((s) => s.ready === 'ready')) return;
      } catch {
        // not up yet
      }
      await sleep(100);
    }
  }

  private async stopAll(): Promise<void> {
    clearTimeout(this.durationTimer);
    this.faults.cancel();
    this.keys.stop();
    await this.load.stop(2000);
    this.view.stop();
    // Envoy goes first in a real rollout too: no new streams, in-flight ones finish.
    await this.frontDoor?.stop(2000);
    const routerCode = await this.router?.stop();
    if (routerCode !== undefined && routerCode !== 0) {
      process.stderr.write(`demo: mcip-router exited with ${routerCode === null ? 'a signal' : `code ${routerCode}`} on shutdown\n`);
      this.exitCode = 1;
    }
    for (const name of CLUSTERS) await this.clusters[name].stop();
    if (this.tempDir) await rm(this.tempDir, { recursive: true, force: true });
    if (this.frontDoor) process.stdout.write(`\n${this.view.summary().join('\n')}\n`);
    process.stdout.write(`${dim('Stopped: router, front door, EPPs and model servers are all down.')}\n`);
  }
}
