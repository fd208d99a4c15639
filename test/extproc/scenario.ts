// Scenario wiring for the data-path tests, all on real sockets: simulated EPPs for a
// local pool (cluster-a/example/pool-a) and a remote one (cluster-b/example/pool-b),
// a snapshot built over typed objects, the router's ext_proc server, and an Envoy stand-in.
//
// Routes (Gateway example/inf-gw):
//   local.example   -> InferencePool pool-a (local)
//   remote.example  -> InferencePoolImport pool-b (exported by cluster-b; parent Gateway gw-b 10.2.0.100:80)
//   split.example   -> pool-a and the pool-b import, weight 1 each (failover between the two)
//   missing.example -> InferencePool ghost (does not exist: invalid backend, 500)
//   refused.example -> pool-a, in a rule with a request timeout the router does not honour (refused rule, 500)
//   headers.example / headers-remote.example -> pool-a / the pool-b import, with HEADER_MODIFIER on the rule
// With `signals`, a SignalStore probes both EPPs (health on their ext_proc ports, metrics
// where the clusters' `epp.metrics` point) and feeds the picks; it also gets the outcomes.
// A stock EPP (eppA/eppB `stock`) is scraped on its own metrics port, with its first
// accepted token from a file.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { EppClientPool } from '../../src/transport/epp-client.js';
import { testExtProcTransport } from '../harness/extproc-transport.js';
import type { RouterConfig } from '../../src/config/schema.js';
import { FailOpenEndpoints, staticFailOpenEndpoints } from '../../src/extproc/fail-open.js';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import type { ExtProcSettings } from '../../src/extproc/deps.js';
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import type { DataPathObserver, PickCountReason, StreamInfo, StreamTracer } from '../../src/extproc/observer.js';
import { SignalStore } from '../../src/signals/index.js';
import type { FailureReason } from '../../src/signals/types.js';
import type { GuardReason } from '../../src/protocol/answer-guard.js';
import { createExtProcServer, type ExtProcServer, type ExtProcServerOptions } from '../../src/extproc/server.js';
import type { HeaderModifier } from '../../src/model/types.js';
import type { PeerCutReason } from '../../src/transport/peer-guard.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';
import { buildSnapshot } from '../../src/snapshot/build.js';
import { seededRandom } from '../helpers/random.js';
import { createEnvoyStandin, type EnvoyStandin, type StandinClientOptions } from '../harness/envoy-standin.js';
import { startSimulatedEpp, type SimulatedEpp, type SimulatedEppOptions } from '../harness/simulated-epp.js';
import {
  config,
  gateway,
  importRef,
  parentRef,
  pool,
  poolImport,
  poolRef,
  route,
  rule,
  state,
  NS,
} from '../snapshot/fixtures.js';

export const POOL_A_ENDPOINTS = ['10.1.0.1:8000', '10.1.0.2:8000'];
export const POOL_B_ENDPOINTS = ['10.2.0.1:8000'];
export const PARENT_B = '10.2.0.100:80';

export class RecordingObserver implements DataPathObserver {
  started = 0;
  readonly finished: StreamInfo[] = [];
  picks = 0;
  readonly reasons: PickCountReason[] = [];
  readonly failovers: { from: string; to: string; reason: FailureReason }[] = [];
  readonly firstResponses: string[] = [];
  readonly eppStreams: string[] = [];
  streamStarted(): void {
    this.started++;
  }
  streamFinished(info: StreamInfo): void {
    this.finished.push(info);
  }
  picked(): void {
    this.picks++;
  }
  pickedFor(reason: PickCountReason): void {
    this.reasons.push(reason);
  }
  failover(from: string, to: string, reason: FailureReason): void {
    this.failovers.push({ from, to, reason });
  }
  eppFirstResponse(cluster: string): void {
    this.firstResponses.push(cluster);
  }
  eppStreamFinished(cluster: string): void {
    this.eppStreams.push(cluster);
  }
  readonly guarded: { cluster: string; reason: GuardReason }[] = [];
  eppAnswerGuarded(cluster: string, reason: GuardReason): void {
    this.guarded.push({ cluster, reason });
  }
  readonly peerCuts: PeerCutReason[] = [];
  peerCut(reason: PeerCutReason): void {
    this.peerCuts.push(reason);
  }
  outcomes(): string[] {
    return this.finished.map((f) => f.outcome);
  }
}

export interface EppTlsInput {
  enabled: boolean;
  insecureSkipVerify?: boolean;
  caFile?: string;
  serverName?: string;
}

/** The ext_proc transport scenarios run on (MCIP_TEST_EXTPROC_TRANSPORT, else the schema default). */
export const scenarioTransport = testExtProcTransport;

export interface ScenarioOptions {
  /** The router's extProc.transport (default: scenarioTransport()). */
  transport?: 'grpc-js' | 'http2';
  mode?: 'Endpoint' | 'Parent';
  eppA?: Partial<SimulatedEppOptions>;
  eppB?: Partial<SimulatedEppOptions>;
  /** TLS from the router to the EPPs (default plaintext); the simulated EPPs serve TLS when enabled. */
  eppTls?: EppTlsInput;
  destinationHeader?: 'primary' | 'list';
  failureModeA?: 'FailClose' | 'FailOpen';
  failureModeB?: 'FailClose' | 'FailOpen';
  /** Extra per-cluster config (epp health/metrics, failOpen), merged into clusters[]. */
  clusterA?: Record<string, unknown>;
  clusterB?: Record<string, unknown>;
  eppConnectTimeoutMs?: number;
  attemptTimeoutMs?: number;
  eppStallTimeoutMs?: number;
  replayBufferBytes?: number;
  maxAttempts?: number;
  /** Run a SignalStore over the scenario's config (probing both EPPs) and pick with it. */
  signals?: boolean;
  maxMessageBytes?: number;
  /** Listen address (default 127.0.0.1:0). */
  listen?: string;
  /** Start without a routing snapshot (not ready). */
  noSnapshot?: boolean;
  standin?: StandinClientOptions;
  /** Stream bounds (extProc.maxStreams, firstMessageTimeoutMs, maxHeldBytesPerStream, heldBytesBudget). */
  bounds?: Partial<Pick<ExtProcSettings, 'maxStreams' | 'firstMessageTimeoutMs' | 'maxHeldBytesPerStream' | 'heldBytesBudget'>>;
  /** Traces per stream (src/telemetry/); absent: tracing off. */
  tracer?: StreamTracer;
  /** createExtProcServer's options (TLS on the router's port). */
  serverOptions?: ExtProcServerOptions;
  /** extProc.peerLimits (hostile-peer bounds). */
  peerLimits?: Partial<ExtProcSettings['peerLimits']>;
}

export interface Scenario {
  readonly server: ExtProcServer;
  readonly address: string;
  readonly eppA: SimulatedEpp;
  readonly eppB: SimulatedEpp;
  readonly envoy: EnvoyStandin;
  readonly observer: RecordingObserver;
  readonly pool: EppClientPool;
  readonly signals: SignalStore | undefined;
  readonly config: RouterConfig;
  setSnapshot(s: RoutingSnapshot | undefined): void;
  /** Waits until the router and both EPPs have no open stream. */
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ScenarioSnapshotInput {
  mode?: 'Endpoint' | 'Parent';
  eppA: string;
  eppB: string;
  tls?: EppTlsInput;
  failureModeA?: 'FailClose' | 'FailOpen';
  failureModeB?: 'FailClose' | 'FailOpen';
  clusterA?: Record<string, unknown>;
  clusterB?: Record<string, unknown>;
}

/** The scenario's router config: cluster-a (local) and cluster-b, EPP addresses overridden. */
export function scenarioConfig(o: ScenarioSnapshotInput): RouterConfig {
  const tls = o.tls ?? { enabled: false };
  const cluster = (name: string, svc: string, address: string, extra: Record<string, unknown> = {}) => {
    const { epp, ...rest } = extra as { epp?: Record<string, unknown> };
    return { name, epp: { tls, ...epp }, addressOverrides: { services: [{ namespace: NS, name: svc, address }] }, ...rest };
  };
  return config({
    mode: o.mode ?? 'Endpoint',
    clusters: [cluster('cluster-a', 'pool-a-epp', o.eppA, o.clusterA), cluster('cluster-b', 'pool-b-epp', o.eppB, o.clusterB)],
    // The headers HEADER_MODIFIER changes, as an Envoy whose mutation_rules let them through.
    routes: { requestHeaders: ['x-tier', 'x-keep', 'x-multi', 'x-drop'] },
  });
}

/** The RequestHeaderModifier of the headers.example routes. */
export const HEADER_MODIFIER: HeaderModifier = {
  set: [{ name: 'x-tier', value: 'gold' }, { name: 'x-keep', value: 'new' }],
  add: [{ name: 'x-multi', value: 'b' }],
  remove: ['x-drop'],
};

export function buildScenarioSnapshot(o: ScenarioSnapshotInput): RoutingSnapshot {
  const cfg = scenarioConfig(o);
  const a = [
    gateway('inf-gw', { addresses: ['10.1.0.100'] }),
    pool('pool-a', { failureMode: o.failureModeA ?? 'FailClose' }),
    poolImport('pool-b', [['cluster-b']]),
    route('local', [rule([poolRef('pool-a')])], { hostnames: ['local.example'] }),
    route('remote', [rule([importRef('pool-b')])], { hostnames: ['remote.example'] }),
    route('split', [rule([poolRef('pool-a'), importRef('pool-b')])], { hostnames: ['split.example'] }),
    route('missing', [rule([poolRef('ghost')])], { hostnames: ['missing.example'] }),
    route('headers', [{ ...rule([poolRef('pool-a')]), requestHeaderModifier: HEADER_MODIFIER }], { hostnames: ['headers.example'] }),
    route('headers-remote', [{ ...rule([importRef('pool-b')]), requestHeaderModifier: HEADER_MODIFIER }], { hostnames: ['headers-remote.example'] }),
    route('refused', [rule([poolRef('pool-a')], undefined, undefined, [
      { path: 'spec.rules[0].timeouts', feature: 'timeouts', message: 'timeouts: not honoured' },
    ])], { hostnames: ['refused.example'] }),
  ];
  const b = [
    pool('pool-b', { exported: true, parents: [parentRef('gw-b')], failureMode: o.failureModeB ?? 'FailClose' }),
    gateway('gw-b', { addresses: ['10.2.0.100'] }),
  ];
  return buildSnapshot({ config: cfg, clusters: [state('cluster-a', a), state('cluster-b', b)], version: 1 }).snapshot;
}

/**
 * The cluster config that scrapes a stock EPP's own metrics port (with its first token, written to
 * a file under `dir`), under the caller's `extra`; `extra` unchanged for other EPPs.
 */
function withStockMetrics(epp: SimulatedEpp, opts: Partial<SimulatedEppOptions> | undefined, dir: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  if (epp.metricsPort === undefined) return extra;
  const token = typeof opts?.stock === 'object' ? opts.stock.metricsTokens?.[0] : undefined;
  const tokenFile = join(dir, `token-${epp.metricsPort}`);
  if (token !== undefined) writeFileSync(tokenFile, token);
  const { epp: eppExtra = {}, ...rest } = extra as { epp?: { metrics?: object } };
  // A stock EPP serves its token-protected /metrics over plain http: the operator opts in to sending the token.
  const metrics = { port: epp.metricsPort, ...(token === undefined ? {} : { bearerTokenFile: tokenFile, allowTokenOverPlainHttp: true }), ...eppExtra.metrics };
  return { ...rest, epp: { ...eppExtra, metrics } };
}

export async function startScenario(o: ScenarioOptions = {}): Promise<Scenario> {
  const tls = o.eppTls ?? { enabled: false };
  const eppA = await startSimulatedEpp({ endpoints: POOL_A_ENDPOINTS, tls: tls.enabled, ...o.eppA });
  const eppB = await startSimulatedEpp({ endpoints: POOL_B_ENDPOINTS, tls: tls.enabled, ...o.eppB });
  const tokenDir = mkdtempSync(join(tmpdir(), 'mcip-scenario-'));
  const input: ScenarioSnapshotInput = {
    mode: o.mode,
    eppA: eppA.address,
    eppB: eppB.address,
    tls,
    failureModeA: o.failureModeA,
    failureModeB: o.failureModeB,
    clusterA: withStockMetrics(eppA, o.eppA, tokenDir, o.clusterA),
    clusterB: withStockMetrics(eppB, o.eppB, tokenDir, o.clusterB),
  };
  const cfg = scenarioConfig(input);
  let snapshot: RoutingSnapshot | undefined = o.noSnapshot ? undefined : buildScenarioSnapshot(input);
  const observer = new RecordingObserver();
  const settings = {
    ...DEFAULT_EXT_PROC,
    maxMessageBytes: o.maxMessageBytes ?? 16 * 1024 * 1024,
    destinationHeader: o.destinationHeader ?? 'primary',
    eppConnectTimeoutMs: o.eppConnectTimeoutMs ?? 2000,
    drainTimeoutMs: 5000,
    attemptTimeoutMs: o.attemptTimeoutMs ?? 10_000,
    eppStallTimeoutMs: o.eppStallTimeoutMs ?? 30_000,
    replayBufferBytes: o.replayBufferBytes ?? 8 * 1024 * 1024,
    maxAttempts: o.maxAttempts ?? 3,
    failOpenCacheTtlMs: 300_000,
    transport: o.transport ?? scenarioTransport(),
    ...o.bounds,
    // Every test client connects over loopback, which the schema trusts as a proxy in the pod: here
    // they stand for peers on the network (peerLimits.trustedPeers: [] unless a test says otherwise).
    peerLimits: { ...DEFAULT_EXT_PROC.peerLimits, trustedPeers: [] as string[], ...o.peerLimits },
  } as const;
  const signals = o.signals ? new SignalStore({ config: cfg, evaluateIntervalMs: 50 }) : undefined;
  if (signals && snapshot) signals.update(snapshot);
  const pool = new EppClientPool({
    maxMessageBytes: settings.maxMessageBytes,
    connectTimeoutMs: settings.eppConnectTimeoutMs,
    transport: settings.transport,
  });
  const server = createExtProcServer({
    snapshot: () => snapshot,
    settings,
    random: seededRandom(7),
    eppClients: pool,
    observer,
    logger: pino({ level: 'silent' }),
    ...(signals ? { signals, outcomes: signals } : {}),
    picker: cfg.picker,
    failOpen: new FailOpenEndpoints({ endpoints: staticFailOpenEndpoints(cfg) }),
    answerRules: new MemberAnswerRules(cfg),
    ...(o.tracer ? { tracer: o.tracer } : {}),
  }, o.serverOptions);
  const address = await server.bind(o.listen ?? '127.0.0.1:0');
  server.setServing(true);
  const envoy = createEnvoyStandin(address, o.standin);
  return {
    server,
    address,
    eppA,
    eppB,
    envoy,
    observer,
    pool,
    signals,
    config: cfg,
    setSnapshot(s) {
      snapshot = s;
      if (s) signals?.update(s);
    },
    async settled(timeoutMs = 5000) {
      await waitFor(
        () => server.activeStreams() === 0 && eppA.counters.openStreams === 0 && eppB.counters.openStreams === 0,
        timeoutMs,
        () => `router ${server.activeStreams()}, eppA ${eppA.counters.openStreams}, eppB ${eppB.counters.openStreams} open streams`,
      );
    },
    async stop() {
      envoy.close();
      signals?.stop();
      await server.close();
      pool.close();
      await eppA.stop();
      await eppB.stop();
      rmSync(tokenDir, { recursive: true, force: true });
    },
  };
}

/** A TCP server that accepts and never answers: a TLS handshake to it hangs (a black-holed EPP). */
export async function blackHole(): Promise<{ address: string; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    close() {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

export async function waitFor(cond: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what()}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A JSON object body of exactly `size` bytes (the simulated EPP parses request bodies as JSON). */
export function jsonBody(size: number): Buffer {
  if (size === 0) return Buffer.alloc(0);
  const head = '{"model":"m","prompt":"';
  const tail = '"}';
  const pad = size - head.length - tail.length;
  if (pad < 0) throw new Error(`body size ${size} too small for a JSON object`);
  return Buffer.from(head + 'p'.repeat(pad) + tail);
}

/** Splits a body into data frames of `frame` bytes. */
export function frames(b: Buffer, frame = 64 * 1024): Buffer[] {
  const out: Buffer[] = [];
  for (let off = 0; off < b.length; off += frame) out.push(b.subarray(off, off + frame));
  return out;
}
