// The per-stream dispatcher with a scripted fake of grpc-js's server call: the exact
// sequence of what reaches Envoy, and one report per stream whatever ends it.
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { EventEmitter } from 'node:events';
import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ExtProcStream, type EnvoyCall, type StreamDeps } from '../../src/extproc/stream.js';
import { decodeResponse, encodeRequest } from '../../src/protocol/codec.js';
import { destinationHeadersResponse } from '../../src/protocol/responses.js';
import { signalView, type CandidateSignals, type SignalView } from '../../src/signals/types.js';
import { scriptedRandom } from '../helpers/random.js';
import { buildScenarioSnapshot, RecordingObserver } from './scenario.js';
import { bodyMsg, FakeEppCall, FakePool, flush, headersMsg } from './fakes.js';

/** What grpc-js's ServerDuplexStream does that the stream relies on, recorded. */
class FakeCall extends EventEmitter {
  readonly metadata = new Metadata();
  readonly out: (Buffer | 'end' | { code: number; details: string })[] = [];
  paused = false;
  constructor() {
    super();
    // grpc-js: an 'error' event on a server stream becomes the call's status.
    this.on('error', (e: { code: number; details: string }) => this.out.push({ code: e.code, details: e.details }));
  }
  write(b: Buffer): boolean {
    this.out.push(b);
    return true;
  }
  end(): this {
    this.out.push('end');
    return this;
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  /** Kinds of what reached Envoy: response cases, 'end', or 'grpc:<code>'. */
  kinds(): string[] {
    return this.out.map((o) => (o === 'end' ? 'end' : Buffer.isBuffer(o) ? (decodeResponse(o).response ?? 'none') : `grpc:${o.code}`));
  }
}

function setup(o: { snapshot?: boolean; mode?: 'Endpoint' | 'Parent'; signals?: SignalView; random?: number[] } = {}) {
  const call = new FakeCall();
  const observer = new RecordingObserver();
  const pool = new FakePool();
  const snapshot = o.snapshot === false ? undefined : buildScenarioSnapshot({ mode: o.mode, eppA: '127.0.0.1:1', eppB: '127.0.0.1:2' });
  const deps: StreamDeps = {
    snapshot: () => snapshot,
    settings: { ...DEFAULT_EXT_PROC, maxMessageBytes: 1 << 24, eppConnectTimeoutMs: 100, drainTimeoutMs: 100 },
    random: scriptedRandom(o.random ?? [0.5]),
    eppClients: pool.asPool(),
    observer,
    logger: pino({ level: 'silent' }),
    ...(o.signals ? { signals: { view: () => o.signals! } } : {}),
  };
  let closed = 0;
  const stream = new ExtProcStream(call as unknown as EnvoyCall, deps, () => closed++);
  return { call, observer, pool, stream, closedCount: () => closed };
}

const host = (authority: string) => headersMsg({ headers: { ':authority': authority, ':path': '/v1/x', ':method': 'POST' } });

describe('ExtProcStream', () => {
  it('no snapshot: immediate 503, then OK', () => {
    const { call, observer } = setup({ snapshot: false });
    call.emit('data', host('local.example'));
    expect(call.kinds()).toEqual(['immediate_response', 'end']);
    const ir = decodeResponse(call.out[0] as Buffer).immediate_response!;
    expect(ir.status!.code).toBe(503);
    expect(JSON.parse(ir.body.toString())).toMatchObject({ error: { type: 'not_ready' } });
    expect(observer.outcomes()).toEqual(['not_ready']);
  });

  it('no route: immediate 404 with the host and path in the JSON body', () => {
    const { call, observer } = setup();
    call.emit('data', host('nowhere.example'));
    call.emit('data', bodyMsg('request_body', '{}', true)); // in flight: ignored
    expect(call.kinds()).toEqual(['immediate_response', 'end']);
    const ir = decodeResponse(call.out[0] as Buffer).immediate_response!;
    expect(ir.status!.code).toBe(404);
    expect(ir.headers!.set_headers[0]!.header!.raw_value.toString()).toBe('application/json');
    expect(JSON.parse(ir.body.toString()).error.message).toBe('no HTTPRoute rule matches host "nowhere.example" path "/v1/x" method POST');
    expect(observer.outcomes()).toEqual(['no_route']);
    expect(observer.picks).toBe(1);
  });

  it('parent mode, remote pool: answered by the router in order', () => {
    const { call, observer } = setup({ mode: 'Parent' });
    call.emit('data', host('remote.example'));
    call.emit('data', bodyMsg('request_body', '{}', true));
    call.emit('end');
    expect(call.kinds()).toEqual(['request_headers', 'request_body', 'end']);
    expect(observer.finished[0]).toMatchObject({ route: 'example/remote', pool: 'example/pool-b', cluster: 'cluster-b', outcome: 'parent' });
  });

  it('first message a request body (request headers skipped): pass-through', () => {
    const { call, observer } = setup();
    call.emit('data', encodeRequest({ request_body: { body: Buffer.from('x'), end_of_stream: true }, protocol_config: { request_body_mode: 4, response_body_mode: 4 } }));
    call.emit('data', encodeRequest({ response_headers: { headers: { headers: [] } } }));
    call.emit('data', bodyMsg('response_body', 'y', true));
    call.emit('end');
    expect(call.kinds()).toEqual(['request_body', 'response_headers', 'response_body', 'end']);
    expect(decodeResponse(call.out[2] as Buffer).response_body!.response!.body_mutation!.streamed_response!.body.toString()).toBe('y');
    expect(observer.outcomes()).toEqual(['passthrough']);
  });

  it('a malformed message ends the stream with INVALID_ARGUMENT', () => {
    const { call, observer } = setup();
    call.emit('data', Buffer.from([0x12, 0x05, 0x01]));
    expect(call.kinds()).toEqual([`grpc:${GrpcStatus.INVALID_ARGUMENT}`]);
    expect(observer.outcomes()).toEqual(['protocol_error']);
  });

  it('a message without a request member is a protocol error tagged with its phase', () => {
    const { call } = setup({ mode: 'Parent' });
    call.emit('data', host('remote.example'));
    call.emit('data', encodeRequest({ observability_mode: true }));
    const last = call.out.at(-1) as { code: number; details: string };
    expect(last.code).toBe(GrpcStatus.INVALID_ARGUMENT);
    expect(last.details).toMatch(/^none: /);
  });

  it('relay: Envoy cancel closes once and cancels the EPP call', async () => {
    const { call, observer, pool, stream, closedCount } = setup();
    call.emit('data', host('local.example'));
    expect(call.paused).toBe(true); // while the EPP call opens
    const epp = new FakeEppCall();
    await pool.complete(epp);
    expect(call.paused).toBe(false);
    expect(epp.written).toHaveLength(1);
    call.emit('cancelled');
    call.emit('cancelled');
    call.emit('error', new Error('after cancel'));
    expect(epp.cancelled).toBe(true);
    expect(stream.closed).toBe(true);
    expect(closedCount()).toBe(1);
    expect(observer.outcomes()).toEqual(['client_cancelled']);
  });

  it('relay: cancel after the routing decision reached Envoy counts as relayed', async () => {
    const { call, observer, pool } = setup();
    call.emit('data', host('local.example'));
    const epp = new FakeEppCall();
    await pool.complete(epp);
    epp.reply(destinationHeadersResponse('request_headers', '10.0.0.1:8000'));
    call.emit('end');
    expect(epp.ended).toBe(true);
    call.emit('cancelled');
    await flush();
    expect(observer.outcomes()).toEqual(['relayed']);
  });

  it('picks with the live signal view: a not-ready pool gets nothing; the reason is observed', async () => {
    const down: CandidateSignals = { ready: 'not-ready', ejected: false, source: 'epp-health', reason: 'health:failing' };
    // random 0.1 would land on pool-a (first backendRef) with no signals.
    const { call, observer, pool } = setup({ signals: signalView([['cluster-a/example/pool-a', down]]), random: [0.1] });
    call.emit('data', host('split.example'));
    await flush();
    expect(pool.readied.map((t) => t.cluster)).toEqual(['cluster-b']);
    expect(observer.reasons).toEqual(['weighted']);
  });
});
