/**
 * What tracing costs the router: three Endpoint-mode routers on the bench topology (one fast
 * EPP, four pools), one without tracing, one tracing every stream (sampler always_on) and one
 * with the default sampler (parentbased_traceidratio at 5%; the generator's requests carry no
 * traceparent, so 5% of them start a trace), both exporting OTLP/HTTP to a sink in this
 * process that accepts and discards. The generator runs the 2 KiB closed-loop cell on each in
 * turn, `rounds` times; the routers' CPU per exchange comes from /proc.
 *
 * First, in this process, the tracing layer alone: CPU per stream trace (open, pick, one EPP
 * attempt, close) with the sampler deciding yes and no, and the spans exported to the sink.
 *
 *   tsx bench/tracing.ts [--measure-ms 5000] [--warmup-ms 1000] [--rounds 3] [--concurrency 16] [--micro-streams 50000]
 */
import { createServer } from 'node:http';
import { pino } from 'pino';
import { tracingSchema } from '../src/config/tracing-schema.js';
import type { Picked } from '../src/picker/types.js';
import type { Candidate } from '../src/snapshot/types.js';
import { startTracing } from '../src/telemetry/tracing.js';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { mergeHistograms, summarize } from './lib/hist.js';
import { PROCS } from './lib/paths.js';
import { forkChild, procUsage, spawnRouter, type RouterProcess } from './lib/proc.js';
import { waitForSignals } from './lib/router-admin.js';
import { BENCH_POOLS, EPP_PORT_COUNT, writeTopology, type EppPorts } from './lib/topology.js';
import type { WindowResult } from './lib/types.js';

const { values } = parseArgs({
  options: {
    'measure-ms': { type: 'string', default: '5000' },
    'warmup-ms': { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '16' },
    'micro-streams': { type: 'string', default: '50000' },
  },
});
const measureMs = Number(values['measure-ms']);
const warmupMs = Number(values['warmup-ms']);
const rounds = Number(values.rounds);
const concurrency = Number(values.concurrency);
const log = (msg: string): void => void process.stderr.write(`[bench tracing] ${msg}\n`);

/** An OTLP/HTTP endpoint that reads each export request whole and answers 200. */
async function otlpSink(): Promise<{ url: string; requests: () => number; bytes: () => number; close(): void }> {
  let requests = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests += 1;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests, bytes: () => bytes, close: () => server.close() };
}

/** CPU µs per stream trace in this process: the tracing layer alone, export included. */
async function micro(sinkUrl: string, streams: number): Promise<string[]> {
  const c = { id: 'cluster-a/bench/llm', cluster: 'cluster-a', namespace: 'bench', pool: 'llm', via: 'epp', epp: { address: '127.0.0.1:9002' } } as unknown as Candidate;
  const picked = { type: 'picked', primary: c, reason: 'weighted', policy: 'weighted', group: { ref: { group: 'inference.networking.k8s.io', kind: 'InferencePool', namespace: 'bench', name: 'llm' }, weight: 1, candidates: [c], excluded: [] }, fallbacks: [] } as unknown as Picked;
  const sampled = [{ key: 'traceparent', value: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', raw_value: Buffer.alloc(0) }];
  const out: string[] = ['| tracing layer alone (this process) | CPU µs / stream |', '| --- | --- |'];
  for (const [label, sampler, headers] of [
    ['sampled (always_on)', 'always_on', []],
    ['request with a sampled traceparent (default sampler)', 'parentbased_traceidratio', sampled],
    ['not sampled (default sampler, no traceparent, 5%)', 'parentbased_traceidratio', []],
    ['not sampled (always_off)', 'always_off', []],
  ] as const) {
    const t = await startTracing(tracingSchema.parse({ endpoint: sinkUrl, sampler, scheduledDelayMs: 200 }), pino({ level: 'silent' }), { version: 'bench', env: {} });
    const run = (n: number): void => {
      for (let i = 0; i < n; i++) {
        const s = t!.tracer.open(headers);
        if (s === undefined) continue;
        s.picked('bench/route', picked);
        s.attemptStarted(c);
        s.attemptEnded('answered');
        s.finished({ route: 'bench/route', pool: 'bench/llm', cluster: 'cluster-a', outcome: 'relayed', durationSeconds: 0.01 });
      }
    };
    run(5000); // warm-up
    const before = process.cpuUsage();
    run(streams);
    await t!.shutdown(); // the export of what was queued counts too
    const used = process.cpuUsage(before);
    out.push(`| ${label} | ${((used.user + used.system) / streams).toFixed(2)} |`);
  }
  return out;
}

const SETUPS = ['off', 'always_on', 'default'] as const;
type TraceSetup = (typeof SETUPS)[number];

async function main(): Promise<void> {
  const stops: (() => Promise<void> | void)[] = [];
  try {
    const sink = await otlpSink();
    stops.push(() => sink.close());
    const microLines = await micro(sink.url, Number(values['micro-streams']));
    process.stdout.write(`${microLines.join('\n')}\n\n`);
    const epp = await forkChild('fast-epp', PROCS.epp, ['--ports', String(EPP_PORT_COUNT), '--pools', BENCH_POOLS.join(',')]);
    stops.push(() => epp.stop());
    const ports = epp.info as EppPorts;
    const tracing: Record<TraceSetup, Record<string, unknown>> = {
      off: {},
      always_on: { tracing: { endpoint: sink.url, sampler: 'always_on', scheduledDelayMs: 1000 } },
      default: { tracing: { endpoint: sink.url, scheduledDelayMs: 1000 } },
    };
    const routers = {} as Record<TraceSetup, RouterProcess>;
    for (const s of SETUPS) {
      routers[s] = await spawnRouter(writeTopology('Endpoint', ports, undefined, tracing[s]).configFile);
      stops.push(() => routers[s].stop());
      await waitForSignals(routers[s], EPP_PORT_COUNT, 8000);
    }
    const gen = await forkChild('loadgen', PROCS.loadgen);
    stops.push(() => gen.stop());
    await gen.rpc.call('connect', { targets: Object.fromEntries(SETUPS.map((s) => [s, routers[s].extProc])), connections: 2, maxRequestsPerConnection: 500 });
    for (const s of SETUPS) await gen.rpc.call('preflight', { target: s, variant: '2k' });

    const acc = new Map<TraceSetup, { requests: number; errors: number; cpuMs: number; elapsedMs: number; hist: string[] }>(
      SETUPS.map((s) => [s, { requests: 0, errors: 0, cpuMs: 0, elapsedMs: 0, hist: [] }]),
    );
    for (let round = 0; round < rounds; round++) {
      const order = [...SETUPS.slice(round % SETUPS.length), ...SETUPS.slice(0, round % SETUPS.length)];
      for (const s of order) {
        const args = { target: s, variant: '2k', concurrency };
        if (warmupMs > 0) await gen.rpc.call('closed', { ...args, durationMs: warmupMs });
        const before = procUsage(routers[s].pid).cpuMs;
        const w = await gen.rpc.call<WindowResult>('closed', { ...args, durationMs: measureMs });
        const a = acc.get(s)!;
        a.cpuMs += procUsage(routers[s].pid).cpuMs - before;
        a.requests += w.requests;
        a.errors += w.errors;
        a.elapsedMs += w.elapsedMs;
        a.hist.push(w.histogram);
        log(`round ${round + 1} ${s.padEnd(9)} ${Math.round((w.requests * 1000) / w.elapsedMs)} req/s`);
      }
    }
    const off = acc.get('off')!;
    const offCpu = off.cpuMs / off.requests;
    const lines = [
      `2 KiB exchanges, closed loop c=${concurrency}, ${rounds} x ${measureMs} ms per set-up; OTLP export requests received: ${sink.requests()} (${Math.round(sink.bytes() / 1024)} KiB)`,
      '',
      '| tracing | req/s | p50 ms | p99 ms | router CPU ms / exchange | vs off | errors |',
      '| --- | --- | --- | --- | --- | --- | --- |',
    ];
    for (const s of SETUPS) {
      const a = acc.get(s)!;
      const l = summarize(mergeHistograms(a.hist));
      const cpu = a.cpuMs / a.requests;
      lines.push(`| ${s} | ${Math.round((a.requests * 1000) / a.elapsedMs)} | ${l.p50} | ${l.p99} | ${cpu.toFixed(3)} | ${s === 'off' ? '' : `+${(((cpu - offCpu) / offCpu) * 100).toFixed(1)}% (+${((cpu - offCpu) * 1000).toFixed(0)} µs)`} | ${a.errors} |`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench tracing failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
