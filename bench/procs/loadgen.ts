/**
 * The load generator (its own process). Holds `connections` HTTP/2
 * connection slots per target (Envoy keeps a connection pool per worker
 * thread) and, like Envoy with `max_requests_per_connection` on the
 * mcip_router cluster, replaces a slot's connection after
 * `maxRequestsPerConnection` streams (lib/connections.ts; 0 = never). Runs, on
 * command from the orchestrator:
 * - closed: `concurrency` streams back to back for `durationMs`;
 * - rate: open loop at a fixed offered rate; latency counts from each
 *   request's scheduled start (no coordinated omission);
 * - hold / release: `streams` streams opened and held after the request path
 *   (RSS with many concurrent streams), then completed;
 * - stream: closed loop like `closed`, each response streamed as `chunks` SSE
 *   events (lib/sse.ts), with per-event latency and inter-event gap histograms;
 * - preflight: one fully decoded exchange, checked byte for byte.
 * A target may be a TLS port (`caPem`: the CA its certificate is checked against, `servername`
 * the name checked, as a gateway dials a picker port by its Service's name) and may answer with relay tokens (`verifier`: each exchange then takes
 * the relay hop, lib/relay-exchange.ts, between its request path and its response phase).
 */
import { decodeResponse, type ProcessingResponse } from '../../src/protocol/codec.js';
import { credentials } from '@grpc/grpc-js';
import { RotatingConnections, type Lease } from '../lib/connections.js';
import { relayTokenOf, VerifierClient } from '../lib/relay-exchange.js';
import { Exchange, type CloseMode, type ExchangeCallbacks, type StreamingResponse } from '../lib/exchange.js';
import { encodeHistogram, newHistogram } from '../lib/hist.js';
import { messageSet, type MessageSet } from '../lib/payloads.js';
import { serveRpc } from '../lib/rpc.js';
import { streamSet, type StreamSet } from '../lib/sse.js';
import { VARIANTS, type StreamWindowResult, type Variant, type WindowResult } from '../lib/types.js';
import { EXT_PROC_PROCESS_PATH, RELAY_TOKEN_HEADER } from '../../src/protocol/constants.js';

const MAX = 16 * 1024 * 1024;
const sets = Object.fromEntries(VARIANTS.map((v) => [v, messageSet(v)])) as Record<Variant, MessageSet>;
const targets = new Map<string, RotatingConnections>();
const relayHops = new Map<string, (answer: Buffer) => Promise<string | undefined>>();
const verifiers: VerifierClient[] = [];

/** A target address, or a TLS port and/or a relay verifier to consult after each routing answer. */
export type TargetSpec = string | { readonly address: string; readonly caPem?: string; readonly servername?: string; readonly verifier?: string };

/** The relay's Envoy's step: the token in the routing answer, checked by the verifier. */
function relayHop(verifierAddress: string): (answer: Buffer) => Promise<string | undefined> {
  const verifier = new VerifierClient(verifierAddress);
  verifiers.push(verifier);
  return (answer) => {
    const token = relayTokenOf(answer);
    return token === undefined ? Promise.resolve('the routing answer carries no relay token') : verifier.exchange(token);
  };
}

function lease(target: string): Lease {
  const pool = targets.get(target);
  if (!pool) throw new Error(`unknown target ${target}`);
  return pool.lease();
}

/**
 * Starts one exchange on `target`'s next connection; the connection is
 * released when the exchange is done (or by the returned lease, for one that
 * is abandoned with abort()).
 */
function start(
  target: string,
  set: MessageSet,
  chunking: number,
  cb: ExchangeCallbacks,
  hold = false,
  startedAt = performance.now(),
  close?: CloseMode,
  stream?: StreamingResponse,
): { x: Exchange; lease: Lease } {
  const l = lease(target);
  const x = new Exchange(
    l.client,
    set,
    chunking,
    {
      ...(cb.onDecided ? { onDecided: cb.onDecided } : {}),
      onDone(ex, error) {
        l.release();
        cb.onDone(ex, error);
      },
    },
    hold,
    startedAt,
    close,
    stream,
    relayHops.get(target),
  );
  return { x, lease: l };
}

async function connect(args: { targets: Record<string, TargetSpec>; connections: number; maxRequestsPerConnection: number }): Promise<void> {
  for (const [name, spec] of Object.entries(args.targets)) {
    const t = typeof spec === 'string' ? { address: spec } : spec;
    const creds = t.caPem === undefined ? credentials.createInsecure() : credentials.createSsl(Buffer.from(t.caPem));
    const pool = new RotatingConnections(t.address, args.connections, args.maxRequestsPerConnection, {
      'grpc.max_receive_message_length': MAX,
      'grpc.max_send_message_length': MAX,
      // A gateway dials the router's Service by name (and Node refuses an IP address as TLS server name).
      ...(t.servername === undefined ? {} : { 'grpc.ssl_target_name_override': t.servername, 'grpc.default_authority': t.servername }),
    }, creds);
    await pool.waitForReady(Date.now() + 10_000).catch((err: Error) => {
      pool.close();
      throw new Error(`${name} ${err.message}`);
    });
    targets.get(name)?.close();
    targets.set(name, pool);
    if (t.verifier === undefined) relayHops.delete(name);
    else relayHops.set(name, relayHop(t.verifier));
  }
}

/** Connections opened so far per target (rotation included), and how many are open now. */
function stats(): Record<string, { opened: number; open: number }> {
  return Object.fromEntries([...targets].map(([name, p]) => [name, { opened: p.connectionsOpened, open: p.connectionsOpen }]));
}

type Args = { target: string; variant: Variant; durationMs: number; close?: CloseMode };

function window(started: number, cpu: NodeJS.CpuUsage, h: ReturnType<typeof newHistogram>, requests: number, errors: number, firstError: string | undefined): WindowResult {
  const elapsedMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return {
    requests,
    errors,
    elapsedMs,
    histogram: encodeHistogram(h),
    generatorCpuPct: ((used.user + used.system) / 1000 / elapsedMs) * 100,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

function closed(args: Args & { concurrency: number }, stream?: StreamingResponse): Promise<WindowResult> {
  const set = sets[args.variant];
  const h = newHistogram();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const end = started + args.durationMs;
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  let k = 0;
  return new Promise((resolve) => {
    let active = args.concurrency;
    const next = (): void => {
      if (performance.now() >= end) {
        if (--active === 0) resolve(window(started, cpu, h, requests, errors, firstError));
        return;
      }
      start(
        args.target,
        set,
        k++,
        {
          onDone(x, error) {
            if (error === undefined) {
              requests++;
              h.recordValue(Math.max(1, Math.round((x.completedAt - x.startedAt) * 1000)));
              next();
            } else {
              errors++;
              firstError ??= error;
              setImmediate(next);
            }
          },
        },
        false,
        performance.now(),
        args.close,
        stream,
      );
    };
    for (let i = 0; i < args.concurrency; i++) next();
  });
}

function rate(args: Args & { rps: number; maxInFlight?: number }): Promise<WindowResult> {
  const set = sets[args.variant];
  const h = newHistogram();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const interval = 1000 / args.rps;
  const total = Math.max(1, Math.floor((args.durationMs * args.rps) / 1000));
  const maxInFlight = args.maxInFlight ?? 2048;
  let launched = 0;
  let settled = 0;
  let inFlight = 0;
  let requests = 0;
  let errors = 0;
  let firstError: string | undefined;
  return new Promise((resolve) => {
    let finished = false;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      errors += launched - settled; // still in flight at the deadline
      resolve(window(started, cpu, h, requests, errors, firstError));
    };
    const settle = (): void => {
      settled++;
      inFlight--;
      if (launched === total && settled === total) finish();
    };
    const tick = (): void => {
      const now = performance.now();
      while (launched < total && started + launched * interval <= now) {
        const intended = started + launched * interval;
        launched++;
        if (inFlight >= maxInFlight) {
          errors++;
          firstError ??= `more than ${maxInFlight} requests in flight`;
          settled++;
          continue;
        }
        inFlight++;
        start(
          args.target,
          set,
          launched,
          {
            onDone(x, error) {
              if (error === undefined) {
                requests++;
                h.recordValue(Math.max(1, Math.round((x.completedAt - intended) * 1000)));
              } else {
                errors++;
                firstError ??= error;
              }
              settle();
            },
          },
          false,
          intended,
          args.close,
        );
      }
      if (launched < total) setTimeout(tick, Math.max(0, started + launched * interval - performance.now()));
      else if (settled === total) finish();
      else setTimeout(finish, 10_000).unref();
    };
    tick();
  });
}

const streamSets = new Map<number, StreamSet>();

/** Closed loop of streamed responses: `requests` counts whole responses, the histograms every event. */
async function streamed(args: Args & { concurrency: number; chunks: number }): Promise<StreamWindowResult> {
  let ss = streamSets.get(args.chunks);
  if (ss === undefined) streamSets.set(args.chunks, (ss = streamSet(args.chunks)));
  const latency = newHistogram();
  const gap = newHistogram();
  let chunks = 0;
  const w = await closed(args, {
    set: ss,
    onChunk(latencyUs, gapUs) {
      chunks++;
      latency.recordValue(latencyUs);
      gap.recordValue(gapUs);
    },
  });
  return { ...w, chunks, chunkLatency: encodeHistogram(latency), chunkGap: encodeHistogram(gap) };
}

interface Held {
  readonly list: { x: Exchange; lease: Lease }[];
  decided: number;
  completed: number;
  errors: number;
  firstError?: string;
  /** Set by release(): called whenever a held exchange settles. */
  onSettled?: () => void;
}
let held: Held | undefined;

function hold(args: { target: string; variant: Variant; streams: number; timeoutMs?: number }): Promise<{ held: number; errors: number; openMs: number; firstError?: string }> {
  const set = sets[args.variant];
  const started = performance.now();
  const state: Held = { list: [], decided: 0, completed: 0, errors: 0 };
  held = state;
  return new Promise((resolve) => {
    const report = (): void =>
      resolve({ held: state.decided, errors: args.streams - state.decided, openMs: performance.now() - started, ...(state.firstError ? { firstError: state.firstError } : {}) });
    const check = (): void => {
      if (state.decided + state.errors === args.streams) report();
    };
    for (let i = 0; i < args.streams; i++) {
      state.list.push(
        start(args.target, set, 0, {
          onDecided() {
            state.decided++;
            check();
          },
          onDone(_x, error) {
            if (error === undefined) state.completed++;
            else {
              state.errors++;
              state.firstError ??= error;
            }
            if (state.onSettled) state.onSettled();
            else check();
          },
        }, true),
      );
    }
    setTimeout(() => {
      state.firstError ??= 'timeout';
      report();
    }, args.timeoutMs ?? 30_000).unref();
  });
}

/** Completes every held exchange (response path), then resets any that did not finish in time. */
async function release(args: { timeoutMs?: number } = {}): Promise<{ completed: number; errors: number }> {
  const state = held;
  if (!state) return { completed: 0, errors: 0 };
  held = undefined;
  const total = state.list.length;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, args.timeoutMs ?? 30_000);
    state.onSettled = () => {
      if (state.completed + state.errors >= total) {
        clearTimeout(timer);
        resolve();
      }
    };
    for (const { x } of state.list) x.proceed();
    state.onSettled();
  });
  for (const { x, lease: l } of state.list) {
    x.abort();
    l.release();
  }
  return { completed: state.completed, errors: total - state.completed };
}

/** One exchange, every answer decoded and checked against what was sent. */
async function preflight(args: { target: string; variant: Variant }): Promise<{ destination: string; relayToken: boolean }> {
  const set = sets[args.variant];
  const l = lease(args.target);
  const call = l.client.makeBidiStreamRequest<Buffer, Buffer>(EXT_PROC_PROCESS_PATH, (b: Buffer) => b, (b: Buffer) => b);
  const got: ProcessingResponse[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (b: Buffer) => {
      got.push(decodeResponse(b));
      const last = got.at(-1)!;
      const eos = last.request_body?.response?.body_mutation?.streamed_response?.end_of_stream;
      if (eos) {
        call.write(set.responseHeaders);
        call.write(set.responseBodyMessage);
      }
      if (last.response_body?.response?.body_mutation?.streamed_response?.end_of_stream) resolve();
      if (last.immediate_response) reject(new Error(`immediate_response ${last.immediate_response.status?.code}: ${last.immediate_response.body.toString()}`));
    });
    call.on('error', reject);
    setTimeout(() => reject(new Error('preflight timed out')), 10_000).unref();
  });
  call.write(set.requestHeaders);
  for (const c of set.chunkings[2]!) call.write(c);
  try {
    await done;
  } finally {
    call.end();
    l.release();
  }
  const headers = got.find((r) => r.request_headers);
  const mutation = headers?.request_headers?.response?.header_mutation?.set_headers ?? [];
  const dest = mutation.find((o) => o.header?.key === 'x-gateway-destination-endpoint')?.header?.raw_value.toString();
  if (!dest) throw new Error('preflight: no x-gateway-destination-endpoint in the request_headers response');
  const echoed = Buffer.concat(got.flatMap((r) => (r.request_body ? [r.request_body.response?.body_mutation?.streamed_response?.body ?? Buffer.alloc(0)] : [])));
  if (!echoed.equals(set.body)) throw new Error(`preflight: request body echo differs (${echoed.length} of ${set.body.length} bytes)`);
  const responseEcho = Buffer.concat(got.flatMap((r) => (r.response_body ? [r.response_body.response?.body_mutation?.streamed_response?.body ?? Buffer.alloc(0)] : [])));
  if (!responseEcho.equals(set.responseBody)) throw new Error('preflight: response body echo differs');
  if (got.findIndex((r) => r.request_headers) > got.findIndex((r) => r.request_body)) throw new Error('preflight: body echo before the headers response');
  return { destination: dest, relayToken: mutation.some((o) => o.header?.key === RELAY_TOKEN_HEADER) };
}

serveRpc(
  {
    connect: (a: Parameters<typeof connect>[0]) => connect(a),
    preflight: (a: Parameters<typeof preflight>[0]) => preflight(a),
    closed: (a: Parameters<typeof closed>[0]) => closed(a),
    stream: (a: Parameters<typeof streamed>[0]) => streamed(a),
    rate: (a: Parameters<typeof rate>[0]) => rate(a),
    hold: (a: Parameters<typeof hold>[0]) => hold(a),
    release: (a: Parameters<typeof release>[0]) => release(a),
    stats: () => stats(),
  },
  { pid: process.pid },
);
