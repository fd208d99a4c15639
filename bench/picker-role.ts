/**
 * The Endpoint Picker role cell (`npm run bench -- --only picker`): what the router costs when
 * the gateway a team runs calls it as the Endpoint Picker of a multi-cluster pool, against its
 * own Envoy's path. One compiled router process (the bench topology: two local pools and an
 * import over two clusters, one fast EPP) serves three set-ups at once:
 * - envoy: listen.extProc, the request matched to the bench HTTPRoute (60/10/30);
 * - picker-direct: a picker port (TLS, as by default) of a multi-cluster pool over the same
 *   backends, answered directly (header and envoy.lb);
 * - picker-relay: a second picker port, its pool answered with the router's relay and a signed
 *   token; after the request path each exchange takes the relay hop as the relay's Envoy does
 *   (one ext_proc stream to listen.relay with the token) before its response phase.
 * Router CPU per request from /proc, set-ups interleaved per round after a warm-up, as in the
 * data-path cells. The relay's Envoy (the extra HTTP hop) is not here: only the router's part
 * of the relay hop and the verifier round trip are measured.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestCa } from '../test/helpers/pki.js';
import { freePorts, pickerPoolYaml } from '../test/runtime/picker-fixtures.js';
import type { BenchOptions } from './lib/args.js';
import { mergeCell, type Measured } from './lib/cells.js';
import { PROCS } from './lib/paths.js';
import { forkChild, procUsage, RssSampler, spawnRouter } from './lib/proc.js';
import { waitForSignals } from './lib/router-admin.js';
import { BENCH_POOLS, EPP_PORT_COUNT, writeTopology, type EppPorts } from './lib/topology.js';
import { PICKER_SETUPS, type Cell, type PickerRoleComparison, type PickerRoleResults, type PickerSetup, type Variant, type WindowResult } from './lib/types.js';

const log = (msg: string): void => void process.stderr.write(`[bench picker] ${msg}\n`);
const VARIANT: Variant = '2k';
/** The bench HTTPRoute's split, as a multi-cluster pool declares it. */
const BACKENDS = 'InferencePool/llm=60, InferencePool/llm-canary=10, InferencePoolImport/llm=30';
const RELAY_PORT = 8443;
/** The router's Service, as the gateways dial it and its certificate names it. */
const SERVICE_DNS = 'mcip-router.default.svc';

/** Closed-loop stream counts of the cell: one (nothing queues) and 16 (the data path's budget level). */
export function pickerLevels(o: BenchOptions): number[] {
  return o.quick ? [16] : [1, 16];
}

export async function runPickerRole(o: BenchOptions): Promise<PickerRoleResults> {
  const started: { stop(): Promise<void> }[] = [];
  const ca = createTestCa('mcip bench picker CA');
  try {
    const epp = await forkChild('fast-epp', PROCS.epp, ['--ports', String(EPP_PORT_COUNT), '--pools', BENCH_POOLS.join(',')]);
    started.push(epp);
    const ports = epp.info as EppPorts;
    const [directPort, relayPort] = await freePorts(2);
    const leaf = ca.leaf('mcip-router', [`DNS:${SERVICE_DNS}`]);
    const keyFile = join(ca.dir, 'relay.key');
    writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`);
    const { configFile } = writeTopology(
      'Endpoint',
      ports,
      o.routerTransport,
      {
        listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0', relay: '127.0.0.1:0' },
        endpointPicker: {
          namespace: 'default', serviceName: 'mcip-router', address: '127.0.0.1', ports: [directPort, relayPort],
          tls: { certFile: leaf.certPath, keyFile: leaf.keyPath }, relay: { keyFile, port: RELAY_PORT },
        },
      },
      {
        'picker-pools.yaml': [
          pickerPoolYaml('llm-mc-direct', directPort!, BACKENDS, { answer: 'direct' }),
          pickerPoolYaml('llm-mc-relay', relayPort!, BACKENDS, { answer: 'relay', targetPort: RELAY_PORT }),
        ].join('---\n'),
      },
    );
    const router = await spawnRouter(configFile, o.routerNodeArgs, 60_000, { POD_IP: '127.0.0.1' });
    started.push(router);
    // Warnings and errors (a refused multi-cluster pool, a failed handshake) explain a failed cell.
    router.onLog((e) => void (typeof e.level === 'number' && e.level >= 40 && log(`router ${e.level >= 50 ? 'error' : 'warning'}: ${String(e.msg)} ${JSON.stringify(e.err ?? e.reason ?? '')}`)));
    if (router.relay === undefined) throw new Error('the router serves no relay verifier (listen.relay)');
    const gen = await forkChild('loadgen', PROCS.loadgen);
    started.push(gen);
    await waitForSignals(router, EPP_PORT_COUNT, 8000);

    const tls = { caPem: ca.cert.toString(), servername: SERVICE_DNS };
    const targets: Record<PickerSetup, unknown> = {
      envoy: router.extProc,
      'picker-direct': { address: `127.0.0.1:${directPort}`, ...tls },
      'picker-relay': { address: `127.0.0.1:${relayPort}`, ...tls, verifier: router.relay },
    };
    await gen.rpc.call('connect', { targets, connections: o.connections, maxRequestsPerConnection: o.maxRequestsPerConnection });
    for (const setup of PICKER_SETUPS) {
      const r = await gen.rpc.call<{ destination: string; relayToken: boolean }>('preflight', { target: setup, variant: VARIANT });
      if ((setup === 'picker-relay') !== r.relayToken) throw new Error(`preflight ${setup}: relay token ${r.relayToken ? 'present' : 'missing'}`);
      log(`preflight ${setup}: destination ${r.destination}${r.relayToken ? ' with a relay token' : ''}`);
    }

    const measure = async (setup: PickerSetup, concurrency: number): Promise<Measured> => {
      const args = { target: setup, variant: VARIANT, close: o.close, concurrency };
      if (o.warmupMs > 0) await gen.rpc.call('closed', { ...args, durationMs: o.warmupMs });
      const sampler = new RssSampler([router.pid, epp.pid]);
      const before = { router: procUsage(router.pid).cpuMs, epp: procUsage(epp.pid).cpuMs };
      sampler.start();
      const window = await gen.rpc.call<WindowResult>('closed', { ...args, durationMs: o.measureMs });
      sampler.stop();
      return {
        window,
        proxyCpuMs: procUsage(router.pid).cpuMs - before.router,
        eppCpuMs: procUsage(epp.pid).cpuMs - before.epp,
        proxyRss: sampler.peak(router.pid),
        eppRss: sampler.peak(epp.pid),
      };
    };

    const cells: Cell<PickerSetup>[] = [];
    let turn = 0;
    for (const concurrency of pickerLevels(o)) {
      const parts = new Map<PickerSetup, Measured[]>(PICKER_SETUPS.map((s) => [s, []]));
      for (let round = 0; round < o.rounds; round++) {
        const shift = turn++ % PICKER_SETUPS.length;
        for (const setup of [...PICKER_SETUPS.slice(shift), ...PICKER_SETUPS.slice(0, shift)]) parts.get(setup)!.push(await measure(setup, concurrency));
      }
      for (const setup of PICKER_SETUPS) {
        const cell = mergeCell(setup, VARIANT, { kind: 'closed', concurrency }, parts.get(setup)!);
        cells.push(cell);
        log(
          `${cell.label.padEnd(5)} ${setup.padEnd(13)} ${String(cell.throughput).padStart(7)} req/s  p50 ${cell.latencyMs.p50} p99 ${cell.latencyMs.p99} ms` +
            `  router ${cell.proxy!.cpuMsPerRequest.toFixed(3)} ms CPU/req${cell.errors ? `  errors ${cell.errors} (${cell.firstError})` : ''}`,
        );
      }
    }
    return { variant: VARIANT, rounds: o.rounds, warmupMs: o.warmupMs, measureMs: o.measureMs, connections: o.connections, cells, comparisons: comparePickerRole(cells) };
  } finally {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
    ca.remove();
  }
}

/** Per stream count: the direct picker answer against the own-Envoy path, and the relay answer against the direct one. */
export function comparePickerRole(cells: readonly Cell<PickerSetup>[]): PickerRoleComparison[] {
  const out: PickerRoleComparison[] = [];
  const ratio = (a: number, b: number): number => Math.round((a / b) * 1000) / 1000;
  const diff = (a: number, b: number): number => Math.round((a - b) * 1000) / 1000;
  for (const direct of cells.filter((c) => c.setup === 'picker-direct')) {
    const envoy = cells.find((c) => c.setup === 'envoy' && c.label === direct.label);
    const relay = cells.find((c) => c.setup === 'picker-relay' && c.label === direct.label);
    if (!envoy || !relay) continue;
    const cpu = (c: Cell<PickerSetup>): number => c.proxy?.cpuMsPerRequest ?? NaN;
    out.push({
      label: direct.label,
      directOverEnvoyCpu: ratio(cpu(direct), cpu(envoy)),
      directMinusEnvoy: { p50: diff(direct.latencyMs.p50, envoy.latencyMs.p50), p99: diff(direct.latencyMs.p99, envoy.latencyMs.p99) },
      relayMinusDirectCpuMs: diff(cpu(relay), cpu(direct)),
      relayOverDirectCpu: ratio(cpu(relay), cpu(direct)),
      relayMinusDirect: { p50: diff(relay.latencyMs.p50, direct.latencyMs.p50), p99: diff(relay.latencyMs.p99, direct.latencyMs.p99) },
    });
  }
  return out;
}
