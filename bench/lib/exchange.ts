/**
 * One inference request's ext_proc stream, driven the way Envoy drives it in
 * FULL_DUPLEX_STREAMED mode:
 *  1. request headers (with protocol_config), then every body chunk at once,
 *     the last with end_of_stream, without waiting for the headers response;
 *  2. wait for the request_headers response and the streamed body echo up to
 *     its end_of_stream (a body response before the headers response is
 *     spurious: Envoy would 500);
 *  3. response headers and the response body (end_of_stream), then wait for
 *     the response_headers response and the echoed body; or, for a streamed
 *     response (`stream`), the SSE events one by one: each is sent when the
 *     echo of the one before has arrived, and its latency (sent to echoed) and
 *     the gap since the previous echo are reported;
 *     With a relay hop (`relayHop`, a picker port's relay answer) the response phase starts
 *     once the hop is done: the relay's Envoy asks the router's verifier about the token
 *     in the request-headers answer before the request reaches the model server;
 *  4. done: half-close and reset the stream, as Envoy does when its filter is
 *     destroyed (ExternalProcessorStreamImpl::close: closeStream() then
 *     resetStream(); it does not wait for the processor's status). With
 *     close mode 'graceful' the stream is half-closed and the processor's OK
 *     status awaited instead (no RST_STREAM).
 * Any other answer (immediate_response, a gRPC error, an early end) fails it.
 */
import { Metadata, type Client, type ClientDuplexStream } from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import type { StreamSet } from './sse.js';
import { peekAnswer, type AnswerPeek } from './wire-lite.js';
import type { MessageSet } from './payloads.js';

const identity = (b: Buffer): Buffer => b;
const NO_METADATA = new Metadata();

/** ProcessingResponse members the exchange expects (docs/protocol.md §1). */
const MEMBER = { requestHeaders: 1, responseHeaders: 2, requestBody: 3, responseBody: 4 } as const;

const enum Stage {
  Request,
  Held,
  Response,
  /** graceful close: half-closed, waiting for the processor's status. */
  Closing,
  Done,
}

/** How a finished stream is closed: as Envoy does (half-close + RST_STREAM), or half-close and wait for the status. */
export type CloseMode = 'reset' | 'graceful';

export interface ExchangeCallbacks {
  /** The request path completed (routing decision and body echo received). */
  onDecided?(x: Exchange): void;
  /**
   * Finished and the stream released: `error` undefined on success, and then
   * `completedAt` is when the last answer arrived (the latency end point).
   */
  onDone(x: Exchange, error: string | undefined): void;
}

/** A streamed response instead of the single response body message. */
export interface StreamingResponse {
  readonly set: StreamSet;
  /** Event `index` came back whole: µs from its send, and from the previous event's echo (from the response headers' send for the first). */
  onChunk(latencyUs: number, gapUs: number): void;
}

export class Exchange {
  private readonly call: ClientDuplexStream<Buffer, Buffer>;
  private stage = Stage.Request;
  private headers = false;
  private body = false;
  readonly startedAt: number;
  completedAt = NaN;
  /** Streamed response: the event in flight, echoed bytes so far, and when the event was sent / the last one echoed. */
  private chunk = 0;
  private echoed = 0;
  private chunkSentAt = 0;
  private lastEchoAt = 0;
  /** The request-headers answer, kept for `relayHop`. */
  private headersAnswer: Buffer | undefined;

  constructor(
    client: Client,
    private readonly set: MessageSet,
    chunking: number,
    private readonly cb: ExchangeCallbacks,
    /** Stop after the request path until proceed() (open-stream RSS check). */
    private readonly hold = false,
    startedAt = performance.now(),
    private readonly close: CloseMode = 'reset',
    private readonly stream?: StreamingResponse,
    /** Between the request path and the response phase, with the request-headers answer: undefined when done, else why it failed. */
    private readonly relayHop?: (requestHeadersAnswer: Buffer) => Promise<string | undefined>,
  ) {
    this.startedAt = startedAt;
    this.call = client.makeBidiStreamRequest<Buffer, Buffer>(EXT_PROC_PROCESS_PATH, identity, identity, NO_METADATA);
    this.call.on('data', this.onData);
    this.call.on('error', (err: Error) => this.fail(`gRPC error: ${err.message}`));
    this.call.on('end', () => this.fail('the server ended the stream early'));
    this.call.on('status', (st: { code: number; details: string }) => {
      if (this.stage !== Stage.Closing) return;
      this.stage = Stage.Done;
      this.cb.onDone(this, st.code === 0 ? undefined : `status ${st.code} after the exchange: ${st.details}`);
    });
    this.call.write(set.requestHeaders);
    for (const chunk of set.chunkings[chunking % set.chunkings.length]!) this.call.write(chunk);
  }

  /** Sends the response phase of a held exchange. */
  proceed(): void {
    if (this.stage !== Stage.Held) return;
    this.respond();
  }

  /** Resets the stream (e.g. a held exchange that is abandoned). */
  abort(): void {
    if (this.stage === Stage.Done) return;
    this.stage = Stage.Done;
    this.call.cancel();
  }

  private respond(): void {
    this.stage = Stage.Response;
    this.headers = false;
    this.body = false;
    if (this.stream === undefined) {
      this.call.write(this.set.responseHeaders);
      this.call.write(this.set.responseBodyMessage);
      return;
    }
    this.chunk = 0;
    this.echoed = 0;
    this.lastEchoAt = performance.now();
    this.call.write(this.stream.set.responseHeaders);
    this.sendChunk();
  }

  private sendChunk(): void {
    this.chunkSentAt = performance.now();
    this.call.write(this.stream!.set.messages[this.chunk]!);
  }

  /** A streamed response's echo: report every event it completes and send the next one. */
  private onStreamEcho(bodyBytes: number): void {
    const s = this.stream!;
    this.echoed += bodyBytes;
    const ends = s.set.ends;
    if (this.chunk >= ends.length || this.echoed < ends[this.chunk]!) return;
    const now = performance.now();
    s.onChunk(Math.max(1, Math.round((now - this.chunkSentAt) * 1000)), Math.max(1, Math.round((now - this.lastEchoAt) * 1000)));
    this.lastEchoAt = now;
    while (this.chunk < ends.length && this.echoed >= ends[this.chunk]!) this.chunk++;
    if (this.chunk < ends.length) this.sendChunk();
  }

  private readonly onData = (msg: Buffer): void => {
    if (this.stage !== Stage.Request && this.stage !== Stage.Response) return;
    let p: AnswerPeek;
    try {
      p = peekAnswer(msg);
    } catch {
      this.fail('malformed ProcessingResponse');
      return;
    }
    const request = this.stage === Stage.Request;
    const headersCase = request ? 'request_headers' : 'response_headers';
    const bodyCase = request ? 'request_body' : 'response_body';
    if (p.member === (request ? MEMBER.requestHeaders : MEMBER.responseHeaders)) {
      this.headers = true;
      if (request && this.relayHop !== undefined) this.headersAnswer = msg;
    } else if (p.member === (request ? MEMBER.requestBody : MEMBER.responseBody) && p.streamed) {
      if (!this.headers) {
        this.fail(`${bodyCase} response before the ${headersCase} response (spurious)`);
        return;
      }
      if (!request && this.stream !== undefined) this.onStreamEcho(p.bodyBytes);
      if (p.endOfStream) this.body = true;
    } else {
      this.fail(`unexpected ProcessingResponse member ${p.member} during the ${request ? 'request' : 'response'} path`);
      return;
    }
    if (!this.headers || !this.body) return;
    if (request) {
      if (this.hold) {
        this.stage = Stage.Held;
        this.cb.onDecided?.(this);
      } else {
        this.cb.onDecided?.(this);
        if (this.relayHop === undefined) this.respond();
        else void this.relayHop(this.headersAnswer!).then((error) => this.afterHop(error), (err: Error) => this.afterHop(err.message));
      }
      return;
    }
    this.completedAt = performance.now();
    if (this.close === 'graceful') {
      this.stage = Stage.Closing;
      this.call.end();
      return;
    }
    this.stage = Stage.Done;
    // Envoy: closeStream() then resetStream() once the filter is done.
    this.call.end();
    this.call.cancel();
    this.cb.onDone(this, undefined);
  };

  private afterHop(error: string | undefined): void {
    if (this.stage !== Stage.Request) return;
    if (error === undefined) this.respond();
    else this.fail(`relay hop: ${error}`);
  }

  private fail(reason: string): void {
    if (this.stage === Stage.Done || this.stage === Stage.Closing) return;
    this.stage = Stage.Done;
    this.call.cancel();
    this.cb.onDone(this, reason);
  }
}
