// Tracing end to end: the router's ext_proc server over real sockets, a real OTLP receiver
// (HTTP/protobuf and gRPC) decoding the SDK's export requests, requests carrying a W3C
// traceparent. split.example routes to pool-a (cluster-a) and pool-b (cluster-b); with
// eppA down, a request picked for pool-a fails over to pool-b.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { tracingSchema } from '../../src/config/tracing-schema.js';
import { SPAN_ATTEMPT, SPAN_STREAM } from '../../src/telemetry/stream-trace.js';
import { startTracing, type Tracing } from '../../src/telemetry/tracing.js';
import { startOtlpGrpcReceiver, startOtlpHttpReceiver, type OtlpReceiver, type ReceivedSpan } from '../harness/otlp-receiver.js';
import { eventually } from '../helpers/eventually.js';
import { blackHole, frames, jsonBody, POOL_B_ENDPOINTS, startScenario, type Scenario } from '../extproc/scenario.js';
import { loadConfig } from '../../src/config/load.js';
import { buildInfo } from '../../src/build-info.js';
import { createLogger } from '../../src/log.js';
import { startRouter } from '../../src/runtime/router.js';
import { createEnvoyStandin } from '../harness/envoy-standin.js';
import { poolYaml, routeYaml, startEpps, writeClusterSet } from '../e2e/clusterset.js';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

let sc: Scenario | undefined;
let tracing: Tracing | undefined;
let receiver: OtlpReceiver | undefined;
afterEach(async () => {
  await sc?.stop();
  await tracing?.shutdown();
  await receiver?.close();
  sc = undefined;
  tracing = undefined;
  receiver = undefined;
});

const silent = pino({ level: 'silent' });

function traceparent(): { header: string; traceId: string; parentId: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${parentId}-01`, traceId, parentId };
}

async function tracedRequests(n: number): Promise<{ traceId: string; parentId: string; destination: string | undefined }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const tp = traceparent();
    const r = await sc!.envoy.run({
      authority: 'split.example',
      path: '/v1/completions',
      headers: { traceparent: tp.header, tracestate: 'vendor=abc' },
      body: frames(jsonBody(2048), 1024),
    });
    expect(r.status).toBe(200);
    out.push({ traceId: tp.traceId, parentId: tp.parentId, destination: r.destination });
  }
  return out;
}

/**
 * Ends a black-hole test: closes the hole (the exports hanging on it fail) and starts a collector that
 * answers on its port, where the exporter's retries land. Tracing's shutdown in afterEach then drains in
 * about one retry back-off instead of retrying against a closed port for about 12 s.
 */
async function collectorInPlaceOf(hole: { address: string; close(): void }): Promise<void> {
  hole.close();
  receiver = await startOtlpHttpReceiver(Number(hole.address.split(':').at(-1)));
}

function inTrace(spans: readonly ReceivedSpan[], traceId: string): ReceivedSpan[] {
  return spans.filter((s) => s.traceId === traceId);
}

/** Checks the router's spans of one request that failed over from cluster-a to cluster-b. */
function expectFailoverTrace(spans: readonly ReceivedSpan[], req: { traceId: string; parentId: string }): void {
  const stream = spans.find((s) => s.name === SPAN_STREAM)!;
  expect(stream).toBeDefined();
  expect(stream.kind).toBe(SERVER);
  expect(stream.parentSpanId).toBe(req.parentId); // a child of the request's own span
  expect(stream.attributes['mcip.route']).toBe('example/split');
  expect(stream.attributes['mcip.pick.cluster']).toBe('cluster-a');
  expect(stream.attributes['mcip.pick.pool']).toBe('example/pool-a');
  expect(stream.attributes['mcip.pick.reason']).toBe('weighted');
  expect(stream.attributes['mcip.pick.candidate_count']).toBe(1);
  expect(stream.attributes['mcip.outcome']).toBe('relayed');
  expect(stream.attributes['mcip.cluster']).toBe('cluster-b');
  expect(stream.attributes['mcip.attempts']).toBe(2);
  const failover = stream.events.find((e) => e.name === 'failover')!;
  expect(failover.attributes).toEqual({
    'mcip.failover.from.cluster': 'cluster-a',
    'mcip.failover.from.pool': 'example/pool-a',
    'mcip.failover.to.cluster': 'cluster-b',
    'mcip.failover.to.pool': 'example/pool-b',
    'mcip.failover.reason': 'connect',
  });
  const attempts = spans.filter((s) => s.name === SPAN_ATTEMPT).sort((a, b) => Number(a.attributes['mcip.attempt']) - Number(b.attributes['mcip.attempt']));
  expect(attempts.map((a) => [a.kind, a.parentSpanId, a.attributes['mcip.cluster'], a.attributes['mcip.attempt.outcome']])).toEqual([
    [CLIENT, stream.spanId, 'cluster-a', 'connect'],
    [CLIENT, stream.spanId, 'cluster-b', 'answered'],
  ]);
  expect(attempts[0]!.status.code).toBe(ERROR);
  expect(attempts[0]!.attributes['error.type']).toBe('connect');
  expect(attempts[1]!.status.code).not.toBe(ERROR);
}

describe('tracing over OTLP', () => {
  it('OTLP/HTTP: a request with a traceparent gets the router span in its trace, the pick, each EPP attempt, the failover as an event', async () => {
    receiver = await startOtlpHttpReceiver();
    tracing = await startTracing(tracingSchema.parse({ endpoint: receiver.url, scheduledDelayMs: 20 }), silent, { version: '9.9.9', env: {} });
    expect(tracing).toBeDefined();
    sc = await startScenario({ tracer: tracing!.tracer });
    await sc.eppA.kill();
    const reqs = await tracedRequests(8);
    for (const r of reqs) expect(POOL_B_ENDPOINTS).toContain(r.destination);
    await sc.settled();
    // Each request's router span is exported into the request's own trace.
    const spans = await eventually(() => {
      for (const r of reqs) expect(inTrace(receiver!.spans, r.traceId).some((s) => s.name === SPAN_STREAM)).toBe(true);
      return receiver!.spans;
    }, 10_000);
    const failedOver = reqs.filter((r) => inTrace(spans, r.traceId).some((s) => s.name === SPAN_ATTEMPT && s.attributes['mcip.cluster'] === 'cluster-a'));
    expect(failedOver.length).toBeGreaterThan(0);
    for (const r of failedOver) expectFailoverTrace(inTrace(spans, r.traceId), r);
    // Requests picked for pool-b directly: one attempt, no failover event.
    const direct = reqs.filter((r) => !failedOver.includes(r));
    for (const r of direct) {
      const own = inTrace(spans, r.traceId);
      expect(own.filter((s) => s.name === SPAN_ATTEMPT)).toHaveLength(1);
      expect(own.find((s) => s.name === SPAN_STREAM)!.events.map((e) => e.name)).not.toContain('failover');
    }
    const resource = spans[0]!.resource;
    expect(resource['service.name']).toBe('mcip-router');
    expect(resource['service.version']).toBe('9.9.9');
  });

  it('OTLP/gRPC chosen by OTEL_EXPORTER_OTLP_PROTOCOL, endpoint and service name from the OTEL_* variables alone', async () => {
    receiver = await startOtlpGrpcReceiver();
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_SERVICE_NAME: 'router-west',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging',
    };
    // The process's own environment, as a deployment sets it (resource detection reads it too).
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    Object.assign(process.env, env);
    try {
      tracing = await startTracing(tracingSchema.parse({ scheduledDelayMs: 20 }), silent, { version: '1.2.3' });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    sc = await startScenario({ tracer: tracing!.tracer });
    await sc.eppA.kill();
    const reqs = await tracedRequests(6);
    await sc.settled();
    const spans = await eventually(() => {
      for (const r of reqs) expect(inTrace(receiver!.spans, r.traceId).some((s) => s.name === SPAN_STREAM)).toBe(true);
      return receiver!.spans;
    }, 10_000);
    expect(receiver.requests).toBeGreaterThan(0);
    const failedOver = reqs.filter((r) => inTrace(spans, r.traceId).some((s) => s.name === SPAN_ATTEMPT && s.attributes['mcip.cluster'] === 'cluster-a'));
    expect(failedOver.length).toBeGreaterThan(0);
    for (const r of failedOver) expectFailoverTrace(inTrace(spans, r.traceId), r);
    expect(spans[0]!.resource['service.name']).toBe('router-west');
    expect(spans[0]!.resource['deployment.environment.name']).toBe('staging');
  });

  it('a request without a traceparent starts its own trace (parentbased root: sampled at the ratio)', async () => {
    receiver = await startOtlpHttpReceiver();
    tracing = await startTracing(tracingSchema.parse({ endpoint: receiver.url, scheduledDelayMs: 20, samplerRatio: 1 }), silent, { version: '1', env: {} });
    sc = await startScenario({ tracer: tracing!.tracer });
    const r = await sc.envoy.run({ authority: 'local.example', path: '/v1/completions', body: frames(jsonBody(512)) });
    expect(r.status).toBe(200);
    const spans = await eventually(() => {
      expect(receiver!.spans.some((s) => s.name === SPAN_STREAM)).toBe(true);
      return receiver!.spans;
    }, 10_000);
    const stream = spans.find((s) => s.name === SPAN_STREAM)!;
    expect(stream.parentSpanId).toBe('');
    expect(stream.attributes['mcip.outcome']).toBe('relayed');
    expect(stream.attributes['mcip.pool']).toBe('example/pool-a');
  });

  it('a traceparent whose sampled flag is off: no span (the caller decided)', async () => {
    receiver = await startOtlpHttpReceiver();
    tracing = await startTracing(tracingSchema.parse({ endpoint: receiver.url, scheduledDelayMs: 20, samplerRatio: 1 }), silent, { version: '1', env: {} });
    sc = await startScenario({ tracer: tracing!.tracer });
    const unsampled = `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`;
    await sc.envoy.run({ authority: 'local.example', path: '/v1/completions', headers: { traceparent: unsampled }, body: frames(jsonBody(512)) });
    const sampled = traceparent();
    await sc.envoy.run({ authority: 'local.example', path: '/v1/completions', headers: { traceparent: sampled.header }, body: frames(jsonBody(512)) });
    await eventually(() => expect(inTrace(receiver!.spans, sampled.traceId).length).toBeGreaterThan(0), 10_000);
    expect(receiver.spans.filter((s) => s.traceId === unsampled.slice(3, 35))).toEqual([]);
  });
});

describe('an EPP that fails after its answer', () => {
  it('its attempt span ends with the failure; the stream span says the router finished the exchange', async () => {
    receiver = await startOtlpHttpReceiver();
    tracing = await startTracing(tracingSchema.parse({ endpoint: receiver.url, scheduledDelayMs: 20 }), silent, { version: '1', env: {} });
    sc = await startScenario({ tracer: tracing!.tracer, eppA: { crash: 'mid-echo' } });
    const tp = traceparent();
    await sc.envoy.run({ authority: 'local.example', path: '/v1/completions', headers: { traceparent: tp.header }, body: frames(jsonBody(8192), 1024) });
    await sc.settled();
    const spans = await eventually(() => {
      const own = inTrace(receiver!.spans, tp.traceId);
      expect(own.some((s) => s.name === SPAN_STREAM)).toBe(true);
      return own;
    }, 10_000);
    const stream = spans.find((s) => s.name === SPAN_STREAM)!;
    expect(stream.attributes['mcip.outcome']).toBe('finished_by_router');
    const attempts = spans.filter((s) => s.name === SPAN_ATTEMPT);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.events.map((e) => e.name)).toContain('epp_answered');
    expect(attempts[0]!.attributes['mcip.attempt.outcome']).toBe('stream');
    expect(attempts[0]!.status.code).toBe(ERROR);
  });
});

describe('an exporter that is down or slow', () => {
  it('a black-holed collector (accepts, never answers): requests are served as fast, the span queue stays bounded', async () => {
    const hole = await blackHole();
    try {
      tracing = await startTracing(
        tracingSchema.parse({ endpoint: `http://${hole.address}`, scheduledDelayMs: 10, maxQueueSize: 64, maxExportBatchSize: 16, exportTimeoutMs: 60_000 }),
        silent,
        { version: '1', env: { OTEL_TRACES_SAMPLER: 'always_on' } },
      );
      sc = await startScenario({ tracer: tracing!.tracer });
      const timed = async (): Promise<number> => {
        const started = performance.now();
        for (let i = 0; i < 40; i++) {
          const r = await sc!.envoy.run({ authority: 'local.example', path: '/v1/completions', headers: { traceparent: traceparent().header }, body: frames(jsonBody(512)) });
          expect(r.status).toBe(200);
        }
        return performance.now() - started;
      };
      await timed(); // warm-up: connections, JIT
      const withHole = await timed();
      await sc.stop();
      sc = await startScenario({});
      await timed();
      const without = await timed();
      // The exports hang for a minute; requests do not wait on them (loose factor for a loaded CI machine).
      expect(withHole).toBeLessThan(without * 3 + 500);
    } finally {
      await collectorInPlaceOf(hole);
    }
  });

  it('memory: 20,000 traced streams against a black hole keep at most maxQueueSize spans', async () => {
    const hole = await blackHole();
    const { setFlagsFromString } = await import('node:v8');
    const { runInNewContext } = await import('node:vm');
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    try {
      tracing = await startTracing(
        tracingSchema.parse({ endpoint: `http://${hole.address}`, scheduledDelayMs: 10, maxQueueSize: 256, maxExportBatchSize: 64, exportTimeoutMs: 60_000 }),
        silent,
        { version: '1', env: { OTEL_TRACES_SAMPLER: 'always_on' } },
      );
      const tracer = tracing!.tracer;
      const run = (n: number): void => {
        for (let i = 0; i < n; i++) {
          const t = tracer.open([{ key: 'traceparent', value: traceparent().header, raw_value: Buffer.alloc(0) }])!;
          t.finished({ route: 'default/r', pool: 'default/p', cluster: 'c', outcome: 'relayed', durationSeconds: 0.001 });
        }
      };
      run(2_000);
      await new Promise((r) => setTimeout(r, 50)); // the first export is now hanging on the black hole
      gc();
      const before = process.memoryUsage().heapUsed;
      run(20_000);
      gc();
      const grown = process.memoryUsage().heapUsed - before;
      // Kept, 20,000 spans would be tens of MB; bounded, the queue holds 256.
      expect(grown).toBeLessThan(8 * 1024 * 1024);
    } finally {
      await collectorInPlaceOf(hole);
    }
  });
});

describe('shutdown', () => {
  it('exports every queued span, however many batches the queue holds (SIGTERM loses none)', async () => {
    receiver = await startOtlpHttpReceiver();
    // The periodic export never runs: only shutdown's flush can deliver the spans, in 8 batches of 4.
    const t = await startTracing(
      tracingSchema.parse({ endpoint: receiver.url, sampler: 'always_on', maxQueueSize: 32, maxExportBatchSize: 4, scheduledDelayMs: 600_000 }),
      silent,
      { version: '1', env: {} },
    );
    for (let i = 0; i < 30; i++) t!.tracer.open([])!.finished({ outcome: 'passthrough', durationSeconds: 0 });
    expect(receiver.spans).toHaveLength(0);
    await t!.shutdown();
    expect(receiver.spans.filter((s) => s.name === SPAN_STREAM)).toHaveLength(30);
  });
});

describe('the start-up line', () => {
  it('names the endpoint without the credentials of its URL', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
    tracing = await startTracing(tracingSchema.parse({ endpoint: 'https://tenant:s3cret-token@collector.example:4318' }), logger, { version: '1', env: {} });
    const on = lines.map((l) => JSON.parse(l) as { msg: string; endpoint?: string }).find((l) => l.msg === 'tracing on')!;
    expect(on.endpoint).toBe('https://***@collector.example:4318/v1/traces');
    expect(lines.join('')).not.toContain('s3cret-token');
  });
});

describe('off', () => {
  it('without an endpoint, with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none: no tracer (the data path calls nothing)', async () => {
    expect(await startTracing(tracingSchema.parse({}), silent, { version: '1', env: {} })).toBeUndefined();
    const cfg = tracingSchema.parse({ endpoint: 'http://127.0.0.1:4318' });
    expect(await startTracing(cfg, silent, { version: '1', env: { OTEL_SDK_DISABLED: 'true' } })).toBeUndefined();
    expect(await startTracing(cfg, silent, { version: '1', env: { OTEL_TRACES_EXPORTER: 'none' } })).toBeUndefined();
  });
});

describe('the router started from its config file', () => {
  it('tracing.endpoint in the config: the request\'s trace gets the router\'s span, with the router\'s version', async () => {
    receiver = await startOtlpHttpReceiver();
    const epps = await startEpps({ llm: '10.9.0.1:8000' });
    const set = writeClusterSet(
      [{ name: 'west', files: { 'pools.yaml': poolYaml('llm'), 'routes.yaml': routeYaml('chat', 'chat.example', [{ kind: 'InferencePool', name: 'llm' }]) }, epps: { 'llm-epp': epps.llm!.address } }],
      { extra: { tracing: { endpoint: receiver.url, scheduledDelayMs: 20 } } },
    );
    const router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('silent'), processMetrics: false });
    const envoy = createEnvoyStandin(router.extProcAddress);
    try {
      const tp = traceparent();
      const r = await envoy.run({ authority: 'chat.example', path: '/v1/completions', headers: { traceparent: tp.header }, body: frames(jsonBody(512)) });
      expect(r.destination).toBe('10.9.0.1:8000');
      const stream = await eventually(() => {
        const s = inTrace(receiver!.spans, tp.traceId).find((x) => x.name === SPAN_STREAM);
        expect(s).toBeDefined();
        return s!;
      }, 10_000);
      expect(stream.parentSpanId).toBe(tp.parentId);
      expect(stream.attributes).toMatchObject({ 'mcip.route': 'default/chat', 'mcip.cluster': 'west', 'mcip.outcome': 'relayed', 'mcip.attempts': 1 });
      expect(stream.resource['service.version']).toBe(buildInfo().version);
    } finally {
      envoy.close();
      await router.shutdown();
      await epps.llm!.stop();
    }
  });
});
