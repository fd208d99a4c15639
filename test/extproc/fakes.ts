// Scripted fakes for the processor unit tests: an EnvoySide that records what a
// processor does to Envoy's stream, an EPP call and an EPP client pool.
import { EventEmitter } from 'node:events';
import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { forwardedHeaders, type EppCall, type EppClient, type EppRequestHeaders } from '../../src/extproc/epp-call.js';
import type { RouterError } from '../../src/extproc/errors.js';
import type { StreamOutcome } from '../../src/extproc/observer.js';
import { EnvoyWriter, type EnvoyCall } from '../../src/extproc/envoy-writer.js';
import type { HeldBytes } from '../../src/extproc/held-bytes.js';
import type { EnvoySide, Processor } from '../../src/extproc/processor.js';
import { readEnvoyMessage, type EnvoyMessage } from '../../src/protocol/envoy-message.js';
import { decodeResponse, encodeRequest, type ProcessingResponse, type ProtocolConfiguration } from '../../src/protocol/codec.js';
import type { BodySendMode } from '../../src/protocol/constants.js';
import type { Candidate, EppTarget } from '../../src/snapshot/types.js';

const FD_PROTOCOL: ProtocolConfiguration = { request_body_mode: 4, response_body_mode: 4, send_body_without_waiting_for_header_response: false };

/**
 * The stream's side of a processor: a real EnvoyWriter over a scripted Envoy
 * call that records what is written, answers write() with `sendResult`
 * (backpressure) and keeps the 'drain' listeners for drain().
 */
export class FakeEnvoy implements EnvoySide {
  readonly sent: Buffer[] = [];
  readonly metadata = new Metadata();
  /** What Envoy's call.write() returns next (backpressure). */
  sendResult = true;
  /** Envoy's input is paused. */
  paused = false;
  drainCallbacks: (() => void)[] = [];
  decidedOutcome: StreamOutcome | undefined;
  finished: StreamOutcome | undefined;
  failed: RouterError | undefined;
  routedTo: Candidate[] = [];
  readonly writer: EnvoyWriter;

  forwardedHeaders(): EppRequestHeaders {
    return forwardedHeaders(this.metadata.toHttp2Headers());
  }

  constructor(protocol: ProtocolConfiguration | null = FD_PROTOCOL, held?: HeldBytes) {
    const call = {
      metadata: this.metadata,
      write: (msg: Buffer): boolean => {
        this.sent.push(msg);
        return this.sendResult;
      },
      end: (): void => {},
      pause: (): void => {
        this.paused = true;
      },
      resume: (): void => {
        this.paused = false;
      },
      on: () => call,
      once: (_event: 'drain', cb: () => void) => this.drainCallbacks.push(cb),
      emit: () => true,
    };
    this.writer = new EnvoyWriter(call as EnvoyCall);
    this.writer.open(protocol, held);
  }

  drain(): void {
    const cbs = this.drainCallbacks;
    this.drainCallbacks = [];
    for (const cb of cbs) cb();
  }
  pause(): void {
    this.writer.input.pause();
  }
  resume(): void {
    this.writer.input.resume();
  }
  decided(outcome: StreamOutcome, replace = false): void {
    if (replace) this.decidedOutcome = outcome;
    else this.decidedOutcome ??= outcome;
  }
  routed(candidate: Candidate): void {
    this.routedTo.push(candidate);
  }
  /** As the real stream: the decided outcome wins, and nothing is written after. */
  finish(outcome: StreamOutcome): void {
    this.finished = this.decidedOutcome ?? outcome;
    this.writer.close();
  }
  fail(err: RouterError): void {
    this.failed = err;
    this.writer.close();
  }
  /**
   * `p` as the stream drives it: each of Envoy's messages, and the half-close,
   * booked in the writer's ledger before `p` gets it; nothing once the stream is
   * over (finished or failed).
   */
  drive(p: Processor): DrivenProcessor {
    const writer = this.writer;
    const over = (): boolean => this.finished !== undefined || this.failed !== undefined;
    return {
      message: (m) => {
        if (!over()) p.message(m, writer.record(m));
      },
      endOfInput: () => {
        if (over()) return;
        writer.inputEnded();
        p.endOfInput();
      },
      dispose: () => p.dispose(),
    };
  }
  /** The sent responses, decoded. */
  responses(): ProcessingResponse[] {
    return this.sent.map((b) => decodeResponse(b));
  }
  /** The oneof case of every sent response, in order. */
  kinds(): string[] {
    return this.responses().map((r) => r.response ?? 'none');
  }
}

/** A processor as FakeEnvoy.drive() hands it Envoy's messages. */
export interface DrivenProcessor {
  message(m: EnvoyMessage): void;
  endOfInput(): void;
  dispose(): void;
}

/** One of Envoy's messages as the stream hands it to a processor. */
export function envoyMsg(raw: Buffer): EnvoyMessage {
  return readEnvoyMessage(raw);
}

export class FakeEppCall extends EventEmitter {
  readonly written: Buffer[] = [];
  writeResult = true;
  ended = false;
  cancelled = false;
  paused = false;

  write(b: Buffer): boolean {
    this.written.push(b);
    return this.writeResult;
  }
  end(): this {
    this.ended = true;
    return this;
  }
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.emit('error', Object.assign(new Error('1 CANCELLED: Cancelled on client'), { code: GrpcStatus.CANCELLED, details: 'Cancelled on client' }));
  }
  pause(): this {
    this.paused = true;
    return this;
  }
  resume(): this {
    this.paused = false;
    return this;
  }
  /** The EPP answers a message. */
  reply(b: Buffer): void {
    this.emit('data', b);
  }
  /** The EPP ends with a status. */
  status(code: number, details = ''): void {
    if (code === GrpcStatus.OK) this.emit('end');
    else this.emit('error', Object.assign(new Error(`${code} ${details}`), { code, details }));
  }
}

export class FakePool {
  /** Targets ready() was asked for. */
  readonly readied: EppTarget[] = [];
  /** Calls started, with their request headers. */
  readonly opened: { target: EppTarget; headers: EppRequestHeaders }[] = [];
  private resolvers: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private nextCalls: FakeEppCall[] = [];

  ready(target: EppTarget): Promise<void> {
    this.readied.push(target);
    return new Promise((resolve, reject) => this.resolvers.push({ resolve, reject }));
  }
  call(target: EppTarget, headers: EppRequestHeaders): EppCall {
    this.opened.push({ target, headers });
    const call = this.nextCalls.shift();
    if (!call) throw new Error('FakePool: no call scripted');
    return call as unknown as EppCall;
  }
  /** Completes the oldest pending ready(); the call started next is `call`. */
  async complete(call: FakeEppCall): Promise<void> {
    this.nextCalls.push(call);
    this.resolvers.shift()!.resolve();
    await flush();
  }
  async reject(err: unknown): Promise<void> {
    this.resolvers.shift()!.reject(err);
    await flush();
  }
  asPool(): EppClient {
    return this as unknown as EppClient;
  }
}

export function flush(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

// ---- request builders -----------------------------------------------------------------

const PC_FULL_DUPLEX: ModeConfig = { request_body_mode: 4, response_body_mode: 4 };

type ModeConfig = { request_body_mode: BodySendMode; response_body_mode: BodySendMode };

export function headersMsg(
  opts: { eos?: boolean; protocol?: ModeConfig | null; headers?: Record<string, string> } = {},
): Buffer {
  const headers = Object.entries(opts.headers ?? { ':authority': 'a.example', ':path': '/v1/completions', ':method': 'POST' }).map(
    ([key, v]) => ({ key, raw_value: Buffer.from(v) }),
  );
  return encodeRequest({
    request_headers: { headers: { headers }, end_of_stream: opts.eos ?? false },
    protocol_config: opts.protocol === undefined ? PC_FULL_DUPLEX : opts.protocol,
  });
}

export function bodyMsg(phase: 'request_body' | 'response_body', body: string | Buffer, eos: boolean): Buffer {
  return encodeRequest({ [phase]: { body: Buffer.from(body), end_of_stream: eos } });
}

export function trailersMsg(phase: 'request_trailers' | 'response_trailers'): Buffer {
  return encodeRequest({ [phase]: { trailers: { headers: [{ key: 'x-t', raw_value: Buffer.from('1') }] } } });
}

export function responseHeadersMsg(eos = false): Buffer {
  return encodeRequest({ response_headers: { headers: { headers: [{ key: ':status', raw_value: Buffer.from('200') }] }, end_of_stream: eos } });
}
