/**
 * What Envoy is still waiting for on one ext_proc stream, tracked while an EPP
 * answers it, so the router can answer in the EPP's place at any point: before
 * anything was relayed (FailOpen, failover to a parent) or after (the EPP failed
 * mid-stream). Envoy then never waits forever, never gets a spurious message,
 * and in FULL_DUPLEX_STREAMED never gets a truncated body.
 *
 * - Headers and trailers, and bodies outside FULL_DUPLEX_STREAMED, are answered
 *   one response per message: a count of unanswered messages per phase.
 * - A FULL_DUPLEX_STREAMED body is a byte stream: only the bytes echoed back as
 *   streamed_response reach the other side, and M responses may answer N
 *   chunks. {@link EchoLedger} keeps Envoy's body bytes not yet echoed (views
 *   into Envoy's messages, released as the EPP echoes them) and whether the echo
 *   reached end_of_stream. It assumes the EPP echoes the body unchanged, as GIE
 *   EPPs do; an EPP that rewrites the body has its byte count clamped.
 */
import { BodySendMode } from '../protocol/constants.js';
import type { BodyPhase, ProtocolConfiguration, RequestPhase, ResponsePeek } from '../protocol/codec.js';
import { continueBody, continueHeaders, continueTrailers, streamedBody } from '../protocol/responses.js';
import { lastPathLength, lastPathPayload } from '../protocol/wire.js';
import type { HeldBound, HeldBytes } from './held-bytes.js';

const EMPTY: Buffer = Buffer.alloc(0);
/** Field paths (numbers) of the body bytes, kept as constants: these run for every body message. */
const REQUEST_BODY_BYTES = [4, 1] as const;
const RESPONSE_BODY_BYTES = [5, 1] as const;
const STREAMED_REQUEST_BODY = [3, 1, 3, 3, 1] as const;
const STREAMED_RESPONSE_BODY = [4, 1, 3, 3, 1] as const;

/** The body bytes of an Envoy body message: ProcessingRequest.request_body(4) / response_body(5) -> HttpBody.body(1). A view, no copy. */
export function envoyBody(msg: Buffer, member: 4 | 5): Buffer {
  return lastPathPayload(msg, member === 4 ? REQUEST_BODY_BYTES : RESPONSE_BODY_BYTES) ?? EMPTY;
}

/**
 * Bytes of the streamed_response in a body response: ProcessingResponse.request_body(3) /
 * response_body(4) -> BodyResponse.response(1) -> CommonResponse.body_mutation(3) ->
 * BodyMutation.streamed_response(3) -> StreamedBodyResponse.body(1).
 */
export function streamedLength(msg: Buffer, member: 3 | 4): number {
  return Math.max(0, lastPathLength(msg, member === 3 ? STREAMED_REQUEST_BODY : STREAMED_RESPONSE_BODY));
}

/** One FULL_DUPLEX_STREAMED body direction: Envoy's bytes not yet echoed back. */
export class EchoLedger {
  private chunks: Buffer[] = [];
  private offset = 0;
  private unechoed = 0;
  /** Envoy's body ended with end_of_stream on a body message (not by trailers). */
  private bodyEos = false;
  /** The echo sent end_of_stream: this direction's body is complete. */
  private echoEnded = false;

  add(chunk: Buffer, endOfStream: boolean): void {
    if (this.echoEnded) return;
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.unechoed += chunk.length;
    }
    if (endOfStream) this.bodyEos = true;
  }

  /** The EPP echoed `bytes` more bytes (and ended the echo when `endOfStream`). */
  echoed(bytes: number, endOfStream: boolean): void {
    let left = Math.min(bytes, this.unechoed);
    this.unechoed -= left;
    while (left > 0) {
      const head = this.chunks[0]!;
      const avail = head.length - this.offset;
      if (left < avail) {
        this.offset += left;
        left = 0;
      } else {
        left -= avail;
        this.chunks.shift();
        this.offset = 0;
      }
    }
    if (endOfStream) this.close();
  }

  /** Bytes Envoy sent that were not echoed yet. */
  get pending(): number {
    return this.unechoed;
  }

  /** Nothing left to echo: every byte echoed, and the echo ended if Envoy's body did. */
  get complete(): boolean {
    return this.echoEnded || (this.unechoed === 0 && !this.bodyEos);
  }

  /** Appends the rest of the echo to `out`: every unechoed byte, the last piece with end_of_stream if Envoy's body ended with it. */
  finish(phase: BodyPhase, out: Buffer[]): void {
    if (this.echoEnded) return;
    const eos = this.bodyEos;
    const pieces = this.chunks;
    if (pieces.length > 0 && this.offset > 0) pieces[0] = pieces[0]!.subarray(this.offset);
    if (pieces.length === 0 && eos) out.push(streamedBody(phase, EMPTY, true));
    for (let i = 0; i < pieces.length; i++) out.push(streamedBody(phase, pieces[i]!, eos && i === pieces.length - 1));
    this.chunks = [];
    this.offset = 0;
    this.unechoed = 0;
    if (eos) this.close();
  }

  private close(): void {
    this.echoEnded = true;
    this.chunks = [];
    this.offset = 0;
    this.unechoed = 0;
  }
}

const REQUEST_HEADERS = 0;
const REQUEST_BODY = 1;
const REQUEST_TRAILERS = 2;
const RESPONSE_HEADERS = 3;
const RESPONSE_BODY = 4;
const RESPONSE_TRAILERS = 5;

export class Exchange {
  readonly requestDuplex: boolean;
  readonly responseDuplex: boolean;
  /** Unanswered Envoy messages per phase (FULL_DUPLEX_STREAMED bodies: see the ledgers). */
  private readonly unanswered = [0, 0, 0, 0, 0, 0];
  private readonly requestEcho: EchoLedger | undefined;
  private readonly responseEcho: EchoLedger | undefined;
  /** Envoy sent the whole request: headers with end_of_stream, the body's end, or trailers. */
  requestComplete = false;
  /** Envoy started the response path. */
  responseStarted = false;
  /** An immediate response reached Envoy: processing is over. */
  immediate = false;
  /** Unechoed bytes of both ledgers, as last counted in `held`. */
  private heldNow = 0;

  constructor(
    protocol: ProtocolConfiguration | null,
    private readonly held?: HeldBytes,
  ) {
    this.requestDuplex = protocol?.request_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    this.responseDuplex = protocol?.response_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    if (this.requestDuplex) this.requestEcho = new EchoLedger();
    if (this.responseDuplex) this.responseEcho = new EchoLedger();
  }

  /** Envoy sent `msg`. Returns the held-bytes bound a FULL_DUPLEX_STREAMED body chunk passed, if any. */
  fromEnvoy(phase: RequestPhase, msg: Buffer, endOfStream: boolean): HeldBound | undefined {
    const n = this.unanswered;
    switch (phase) {
      case 'request_headers':
        n[REQUEST_HEADERS]!++;
        if (endOfStream) this.requestComplete = true;
        return;
      case 'request_body':
        if (endOfStream) this.requestComplete = true;
        if (!this.requestEcho) {
          n[REQUEST_BODY]!++;
          return;
        }
        this.requestEcho.add(envoyBody(msg, 4), endOfStream);
        return this.countHeld();
      case 'request_trailers':
        n[REQUEST_TRAILERS]!++;
        this.requestComplete = true;
        return;
      case 'response_headers':
        n[RESPONSE_HEADERS]!++;
        this.responseStarted = true;
        return;
      case 'response_body':
        this.responseStarted = true;
        if (!this.responseEcho) {
          n[RESPONSE_BODY]!++;
          return;
        }
        this.responseEcho.add(envoyBody(msg, 5), endOfStream);
        return this.countHeld();
      case 'response_trailers':
        n[RESPONSE_TRAILERS]!++;
        this.responseStarted = true;
        return;
    }
  }

  /** `msg` (peeked as `peek`) from the processor reached Envoy. */
  fromProcessor(peek: ResponsePeek, msg: Buffer): void {
    switch (peek.case) {
      case 'request_headers':
        return this.answered(REQUEST_HEADERS);
      case 'request_body':
        if (this.requestEcho) {
          if (peek.streamed) this.requestEcho.echoed(streamedLength(msg, 3), peek.endOfStream);
          this.countHeld();
          return;
        }
        return this.answered(REQUEST_BODY);
      case 'request_trailers':
        return this.answered(REQUEST_TRAILERS);
      case 'response_headers':
        return this.answered(RESPONSE_HEADERS);
      case 'response_body':
        if (this.responseEcho) {
          if (peek.streamed) this.responseEcho.echoed(streamedLength(msg, 4), peek.endOfStream);
          this.countHeld();
          return;
        }
        return this.answered(RESPONSE_BODY);
      case 'response_trailers':
        return this.answered(RESPONSE_TRAILERS);
      case 'immediate_response':
      case 'streamed_immediate_response':
        this.immediate = true;
        return;
      case 'none':
        return;
    }
  }

  /** Envoy still waits for the request headers response. */
  get awaitingRequestHeaders(): boolean {
    return this.unanswered[REQUEST_HEADERS]! > 0;
  }

  /** Envoy waits for something: an unanswered message, or echo bytes (or an echo's end) not sent. */
  get pendingWork(): boolean {
    return (
      this.unanswered.some((x) => x > 0) ||
      !(this.requestEcho?.complete ?? true) ||
      !(this.responseEcho?.complete ?? true)
    );
  }

  /**
   * Nothing is left for a processor to do on the request path and the response
   * path has not started: ending the stream with OK (Envoy continues without a
   * processor) loses nothing.
   */
  get settled(): boolean {
    return (
      this.requestComplete &&
      !this.responseStarted &&
      this.unanswered.every((x) => x === 0) &&
      (this.requestEcho?.complete ?? true)
    );
  }

  /**
   * The responses that answer everything Envoy waits for, in the order it
   * expects them (request headers, body, trailers, then the response path),
   * and marks it all answered. `requestHeaders` answers unanswered request
   * headers (default CONTINUE), e.g. a destination chosen by the router.
   */
  takeOver(requestHeaders?: Buffer): Buffer[] {
    const n = this.unanswered;
    const out: Buffer[] = [];
    if (n[REQUEST_HEADERS]! > 0) out.push(requestHeaders ?? continueHeaders('request_headers'));
    this.requestEcho?.finish('request_body', out);
    for (let i = 0; i < n[REQUEST_BODY]!; i++) out.push(continueBody('request_body'));
    if (n[REQUEST_TRAILERS]! > 0) out.push(continueTrailers('request_trailers'));
    if (n[RESPONSE_HEADERS]! > 0) out.push(continueHeaders('response_headers'));
    this.responseEcho?.finish('response_body', out);
    for (let i = 0; i < n[RESPONSE_BODY]!; i++) out.push(continueBody('response_body'));
    if (n[RESPONSE_TRAILERS]! > 0) out.push(continueTrailers('response_trailers'));
    n.fill(0);
    this.countHeld();
    return out;
  }

  /** The stream is gone: whatever it held no longer counts. */
  releaseHeld(): void {
    this.held?.change(this.heldNow, 0);
    this.heldNow = 0;
  }

  private countHeld(): HeldBound | undefined {
    const now = (this.requestEcho?.pending ?? 0) + (this.responseEcho?.pending ?? 0);
    const before = this.heldNow;
    if (now === before || this.held === undefined) return undefined;
    this.heldNow = now;
    return this.held.change(before, now);
  }

  private answered(i: number): void {
    if (this.unanswered[i]! > 0) this.unanswered[i]!--;
  }
}
