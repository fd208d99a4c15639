/**
 * `npm run demo`: multi-cluster routing on a laptop, in one command.
 *
 * Starts on 127.0.0.1 a simulated two-cluster ClusterSet (per cluster: model
 * server pods and the Endpoint Picker of InferencePool llm-pool), the real
 * mcip-router (dist/, built first if stale) reading the manifests in examples/,
 * and an HTTP front door standing in for Envoy. Then shows which cluster serves
 * each request, with optional load and faults (kill, EPP down, saturation).
 * Ctrl-C (or --duration) stops everything and prints a summary.
 */
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { request } from 'undici';
import { parseArgs, USAGE, type DemoOptions, type Fault } from './args.js';
import { FrontDoor } from './front-door.js';
import { CLUSTERS, HOST, lastPort, layout, takenPorts, type ClusterName, type Layout } from './layout.js';
import { LoadGenerator } from './load.js';
import { buildIsStale, buildRouter, ROOT, ROUTER_MAIN, RouterProcess, writeRouterConfig } from './router-process.js';
import { POOL, SimulatedCluster } from './sim-cluster.js';
import { bold, dim, LiveView } from './view.js';

/** A demo stopped on request (Ctrl-C, q, --duration) before it finished starting. */
class Cancelled extends Error {}

export async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseArgs(argv);
  if (parsed.type === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.type === 'error') {
    process.stderr.write(`demo: ${parsed.message}\n\n${USAGE}`);
    return 2;
  }
  const o = parsed.options;
  const ports = layout(o.basePort, o.pods);
  const taken = await takenPorts(ports);
  if (taken.length > 0) {
    const list = taken.map((t) => `  ${t.port} (${t.use})`).join('\n');
    process.stderr.write(
      `demo: ${taken.length === 1 ? 'a port the demo needs is' : 'ports the demo needs are'} already in use on ${HOST}:\n${list}\n` +
        `Stop whatever holds ${taken.length === 1 ? 'it' : 'them'} (an earlier demo?), or move the demo with --base-port N ` +
        `(it uses ports N to N+${lastPort(0)}), e.g. npm run demo -- --base-port ${o.basePort === 8080 ? 18080 : 8080}\n`,
    );
    return 2;
  }
  return new Demo(o, ports).run();
}

class Demo {
  private readonly clusters: Record<ClusterName, SimulatedCluster>;
  private readonly view: LiveView;
  private readonly load: LoadGenerator;
  private router: RouterProcess | undefined;
  private frontDoor: FrontDoor | undefined;
  private tempDir: string | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private quitRequested = false;
  private exitCode = 0;
  private resolveQuit: (reason: string) => void = () => undefined;
  private readonly quit = new Promise<string>((r) => (this.resolveQuit = r));
  private signals = 0;
  private rawMode = false;

  constructor(
    private readonly o: DemoOptions,
    private readonly ports: Layout,
  ) {
    this.clusters = {
      'cluster-a': new SimulatedCluster('cluster-a', ports.clusters['cluster-a'], o.latencyMs),
      'cluster-b': new SimulatedCluster('cluster-b', ports.clusters['cluster-b'], o.latencyMs),
    };
    this.load = new LoadGenerator(ports.frontDoor, o.load);
    this.view = new LiveView({ routerAdmin: `${HOST}:${ports.routerAdmin}`, verbose: o.verbose, load: () => this.load.rps });
  }

  private requestQuit(reason: string, code = 0): void {
    if (this.quitRequested) return;
    this.quitRequested = true;
    this.exitCode = code;
    this.resolveQuit(reason);
  }

  private checkpoint(): void {
    if (this.quitRequested) throw new Cancelled();
  }

  async run(): Promise<number> {
    let firstSignalAt = 0;
    const onSignal = (signal: NodeJS.Signals): void => {
      // tsx (npm run demo) relays a terminal Ctrl-C that the demo also got directly when the
      // demo is slow to acknowledge it: a repeat within 1.5 s is the same Ctrl-C.
      if (this.signals > 0 && performance.now() - firstSignalAt < 1500) return;
      if (this.signals === 0) firstSignalAt = performance.now();
      this.signals++;
      if (this.signals > 1) {
        process.stderr.write(`\ndemo: second ${signal}: stopping at once\n`);
        this.router?.kill();
        if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
        process.exit(1);
      }
      this.requestQuit(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      await this.startAll();
      this.view.start();
      this.load.start();
      this.scheduleFaults();
      if (this.o.durationS !== undefined) this.timers.push(setTimeout(() => this.requestQuit('--duration'), this.o.durationS * 1000));
      this.listenForKeys();
      const reason = await this.quit;
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

  // ---- start-up -------------------------------------------------------------------------

  private async startAll(): Promise<void> {
    const say = (s: string): void => void process.stdout.write(`${s}\n`);
    say(bold('mcip-router demo: two clusters of a ClusterSet, simulated on this machine'));
    if (this.o.noBuild && !existsSync(ROUTER_MAIN)) throw new Error(`--no-build, but there is no build: run npm run build first (${ROUTER_MAIN} is missing)`);
    if (!this.o.noBuild && buildIsStale()) {
      say(dim('Building the router first (dist/ is missing or older than src/: npm run build)…'));
      try {
        await buildRouter();
      } catch (err) {
        if (!existsSync(ROUTER_MAIN)) throw err;
        // A half-edited working tree must not stop the demo when an earlier build exists.
        say(`${(err as Error).message.split('\n').slice(0, 6).join('\n')}\n${bold('The build failed: running the previous build in dist/ instead.')}`);
      }
    }
    this.checkpoint();
    for (const name of CLUSTERS) {
      await this.clusters[name].start();
      this.checkpoint();
    }
    this.tempDir = await mkdtemp(join(tmpdir(), 'mcip-demo-'));
    const configFile = await writeRouterConfig(this.tempDir, this.ports);
    this.router = new RouterProcess({
      configFile,
      onLog: (entry) => this.view.routerLog(entry),
      onUnexpectedExit: (code, signal, stderr) => {
        process.stderr.write(`demo: mcip-router exited unexpectedly (${signal ?? `code ${code}`})\n${stderr}`);
        this.requestQuit('the router exited', 1);
      },
    });
    await this.router.start();
    this.checkpoint();
    this.frontDoor = new FrontDoor({
      port: this.ports.frontDoor,
      extProc: `${HOST}:${this.ports.routerExtProc}`,
      onRequest: (r) => this.view.record(r),
    });
    await this.frontDoor.start();
    await this.waitForRouterSignals();
    this.checkpoint();
    this.printBanner(configFile, await this.routeSummary());
  }

  /** Gives the router's first health checks a moment, so the first requests see both pools ready. */
  private async waitForRouterSignals(): Promise<void> {
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && !this.quitRequested) {
      try {
        const res = await request(`http://${HOST}:${this.ports.routerAdmin}/debug/signals`);
        const body = (await res.body.json()) as { candidates?: Record<string, { ready?: string }> };
        const states = Object.values(body.candidates ?? {});
        if (states.length >= CLUSTERS.length && states.every((s) => s.ready === 'ready')) return;
      } catch {
        // not up yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The router's routing table in one line per rule, from its admin /debug/routes (what it really built). */
  private async routeSummary(): Promise<string[]> {
    interface Backend { ref: { kind: string; name: string }; weight: number; candidates: string[] }
    interface Routes { routes?: { route: { namespace: string; name: string }; rules: { index: number; backends: Backend[] }[] }[] }
    try {
      const res = await request(`http://${HOST}:${this.ports.routerAdmin}/debug/routes`, { headersTimeout: 2000, bodyTimeout: 2000 });
      const body = (await res.body.json()) as Routes;
      const lines: string[] = [];
      for (const r of body.routes ?? []) {
        for (const rule of r.rules) {
          const backends = rule.backends.map((b) => {
            const clusters = b.candidates.map((c) => c.split('/')[0]).join(', ') || 'no usable pool';
            return `weight ${b.weight} ${b.ref.kind} ${b.ref.name} (${clusters})`;
          });
          lines.push(`${r.route.namespace}/${r.route.name} rule ${rule.index}: ${backends.join(', ')}`);
        }
      }
      return lines;
    } catch {
      return [];
    }
  }

  private printBanner(configFile: string, routeLines: readonly string[]): void {
    const p = this.ports;
    const url = `http://${HOST}:${p.frontDoor}`;
    const admin = `http://${HOST}:${p.routerAdmin}`;
    const podRange = (name: ClusterName): string => {
      const pods = p.clusters[name].pods;
      return pods.length === 1 ? `${pods[0]}` : `${pods[0]}-${pods[pods.length - 1]}`;
    };
    const rel = (f: string): string => relative(ROOT, f) || f;
    const json = `-H 'content-type: application/json'`;
    const label = (text: string): string => bold(text.padEnd(13));
    const lines = [
      '',
      `  ${label('cluster-a')}imports ${POOL} from cluster-b; this router's cluster`,
      `  ${label('')}EPP ${HOST}:${p.clusters['cluster-a'].epp} (metrics :${p.clusters['cluster-a'].metrics}), ${this.o.pods} model servers on :${podRange('cluster-a')}`,
      `  ${label('cluster-b')}exports ${POOL} (annotation inference.networking.x-k8s.io/export: ClusterSet)`,
      `  ${label('')}EPP ${HOST}:${p.clusters['cluster-b'].epp} (metrics :${p.clusters['cluster-b'].metrics}), ${this.o.pods} model servers on :${podRange('cluster-b')}`,
      ...routeLines.map((r, i) => `  ${label(i === 0 ? 'HTTPRoute' : '')}${r}`),
      `  ${label('')}manifests: ${rel(join(ROOT, 'examples/cluster-a'))}/, ${rel(join(ROOT, 'examples/cluster-b'))}/`,
      `  ${label('mcip-router')}the real one (pid ${this.router?.pid}): ext_proc ${HOST}:${p.routerExtProc}, admin ${admin}`,
      `  ${label('')}config: ${configFile} (examples/router.yaml with the demo's ports)`,
      `  ${label('front door')}${url}`,
      `  ${label('')}${bold('A stand-in for Envoy.')} In production, Envoy runs with envoy/envoy.yaml and`,
      `  ${label('')}calls the router over ext_proc the same way this front door does (FULL_DUPLEX_STREAMED).`,
      '',
      bold('Try:'),
      `  curl -s ${url}/v1/completions ${json} -d '{"model":"llama3-8b","prompt":"Hello"}'`,
      `  curl -s ${url}/v1/chat/completions ${json} -d '{"model":"llama3-8b","messages":[{"role":"user","content":"Hi"}]}'`,
      `  curl -sN ${url}/v1/completions ${json} -d '{"model":"llama3-8b","prompt":"Hi","stream":true}'`,
      `  curl -s ${admin}/debug/routes     ${dim('# the routing table the router built from the manifests')}`,
      `  curl -s ${admin}/debug/signals    ${dim('# health and load the router knows of each pool')}`,
      `  curl -s http://${HOST}:${p.clusters['cluster-b'].metrics}/metrics   ${dim("# cluster-b's pool metrics, as its EPP exports them")}`,
      '',
    ];
    if (process.stdin.isTTY) {
      lines.push(`${bold('Keys:')} k kill/revive cluster-b · e stop/start cluster-b's EPP · s saturate/relieve cluster-b · +/- load · q quit`);
    }
    const plan: string[] = [];
    if (this.o.load > 0) plan.push(`sending ${this.o.load} req/s`);
    for (const f of this.o.faults) plan.push(`${faultName(f)} at ${this.o.afterS}s${this.o.forS !== undefined ? ` for ${this.o.forS}s` : ''}`);
    if (this.o.durationS !== undefined) plan.push(`stopping after ${this.o.durationS}s`);
    lines.push(`${bold('Ready.')} ${plan.length > 0 ? `${plan.join(', ')}. ` : ''}Ctrl-C stops everything.`, '');
    process.stdout.write(`${lines.join('\n')}\n`);
  }

  // ---- faults and keys ----------------------------------------------------------------------

  private scheduleFaults(): void {
    if (this.o.faults.length === 0) return;
    this.timers.push(
      setTimeout(() => {
        void (async () => {
          for (const f of this.o.faults) await this.applyFault(f, true);
          if (this.o.forS !== undefined) {
            this.timers.push(
              setTimeout(() => {
                void (async () => {
                  for (const f of this.o.faults) await this.applyFault(f, false);
                })();
              }, this.o.forS * 1000),
            );
          }
        })();
      }, this.o.afterS * 1000),
    );
  }

  private async applyFault(f: Fault, on: boolean): Promise<void> {
    if (this.quitRequested) return;
    const c = this.clusters[f.cluster];
    switch (f.kind) {
      case 'kill':
        if (on) {
          await c.kill();
          this.view.event(`kill ${f.cluster}`, `kill ${f.cluster}: its EPP, pool metrics and ${c.pods.length} model servers are down`);
        } else {
          await c.start();
          this.view.event(`revive ${f.cluster}`, `revive ${f.cluster}: EPP and model servers are back`);
        }
        return;
      case 'kill-epp':
        if (on) {
          await c.killEpp();
          this.view.event(`kill ${f.cluster}'s EPP`, `kill ${f.cluster}'s EPP: its model servers still run, but nothing picks them`);
        } else {
          await c.startEpp();
          this.view.event(`restart ${f.cluster}'s EPP`, `restart ${f.cluster}'s EPP`);
        }
        return;
      case 'saturate':
        c.setSaturated(on);
        this.view.event(
          `${on ? 'saturate' : 'relieve'} ${f.cluster}`,
          on
            ? `saturate ${f.cluster}: heavy background load on its model servers (queue and KV cache over the router's thresholds)`
            : `relieve ${f.cluster}: background load gone`,
        );
        return;
    }
  }

  private listenForKeys(): void {
    const stdin = process.stdin;
    if (!stdin.isTTY) return;
    stdin.setRawMode(true);
    this.rawMode = true;
    stdin.resume();
    stdin.on('data', (d: Buffer) => {
      for (const key of d.toString('utf8')) void this.onKey(key);
    });
  }

  private async onKey(key: string): Promise<void> {
    const b = this.clusters['cluster-b'];
    switch (key) {
      case '\u0003': // Ctrl-C in raw mode
      case 'q':
        return this.requestQuit(key === 'q' ? 'q' : 'Ctrl-C');
      case 'k': {
        const s = b.state();
        return this.applyFault({ kind: 'kill', cluster: 'cluster-b' }, s.eppUp || s.podsUp > 0);
      }
      case 'e':
        return this.applyFault({ kind: 'kill-epp', cluster: 'cluster-b' }, b.state().eppUp);
      case 's':
        return this.applyFault({ kind: 'saturate', cluster: 'cluster-b' }, !b.state().saturated);
      case '+':
      case '=':
      case '-': {
        const next = key === '-' ? Math.max(0, this.load.rps - 5) : this.load.rps + 5;
        this.load.setRps(next);
        this.view.info(`load: ${next} req/s`);
        return;
      }
      default:
        return;
    }
  }

  // ---- shut-down --------------------------------------------------------------------------

  private async stopAll(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    if (this.rawMode) {
      process.stdin.setRawMode(false);
      process.stdin.pause();
    }
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

function faultName(f: Fault): string {
  switch (f.kind) {
    case 'kill':
      return `killing ${f.cluster}`;
    case 'kill-epp':
      return `killing ${f.cluster}'s EPP`;
    case 'saturate':
      return `saturating ${f.cluster}`;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`demo: fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
