/**
 * What Envoy still waits for on one ext_proc stream, so the router can answer
 * it at any point (docs/protocol.md §1, "Body modes"): a count of unanswered messages per
 * phase, and for a FULL_DUPLEX_STREAMED body the bytes not echoed yet.
 */
import { BodySendMode } from '../protocol/constants.js';
import type { BodyPhase, ProtocolConfiguration } from '../protocol/codec.js';
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import type { RelayableAnswer } from '../protocol/epp-answer.js';
import { continueBody, continueHeaders, continueTrailers, streamedBody } from '../protocol/responses.js';
import type { HeldBound, HeldBytes } from './held-bytes.js';

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * One FULL_DUPLEX_STREAMED body direction: Envoy's bytes not echoed yet (views
 * into Envoy's messages, let go as they are echoed). M echoes may answer N
 * chunks; an echo longer than what is pending (an EPP that rewrites the body) is clamped.
 */
export class EchoLedger {
  private chunks: Buffer[] = [];
  private offset = 0;
  private unechoed = 0;
  /** Envoy's body ended with end_of_stream on a body message (not by trailers). */
  private bodyEnded = false;
  /** The echo sent end_of_stream: this direction's body is complete. */
  private echoEnded = false;

  add(chunk: Buffer, endOfStream: boolean): void {
    if (this.echoEnded) return;
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.unechoed += chunk.length;
    }
    if (endOfStream) this.bodyEnded = true;
  }

  /** `bytes` more bytes were echoed (and the echo ended when `endOfStream`). */
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
    return this.echoEnded || (this.unechoed === 0 && !this.bodyEnded);
  }

  /** Appends the rest of the echo to `out`, the last piece with end_of_stream if Envoy's body ended with it. */
  finish(phase: BodyPhase, out: Buffer[]): void {
    if (this.echoEnded) return;
    const eos = this.bodyEnded;
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

export class EnvoyLedger {
  readonly requestDuplex: boolean;
  readonly responseDuplex: boolean;
  /** Unanswered Envoy messages per phase (FULL_DUPLEX_STREAMED bodies: see the echo ledgers). */
  private readonly unanswered = [0, 0, 0, 0, 0, 0];
  private readonly requestEcho: EchoLedger | undefined;
  private readonly responseEcho: EchoLedger | undefined;
  /** Envoy sent the whole request: headers with end_of_stream, the body's end, or trailers. */
  requestComplete = false;
  /** Envoy started the response path. */
  responseStarted = false;
  /** An immediate response reached Envoy: processing is over. */
  immediate = false;
  /** Envoy half-closed: no more messages will come. */
  inputEnded = false;
  /** Unechoed bytes of both directions, as last counted in `held`. */
  private heldNow = 0;

  constructor(
    protocol: ProtocolConfiguration | null,
    private readonly held: HeldBytes | undefined,
  ) {
    this.requestDuplex = protocol?.request_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    this.responseDuplex = protocol?.response_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    if (this.requestDuplex) this.requestEcho = new EchoLedger();
    if (this.responseDuplex) this.responseEcho = new EchoLedger();
  }

  /** Envoy sent `m`. Returns the held-bytes bound a FULL_DUPLEX_STREAMED body chunk passed, if any. */
  fromEnvoy(m: EnvoyMessage): HeldBound | undefined {
    const n = this.unanswered;
    switch (m.case) {
      case 'request_headers':
        n[REQUEST_HEADERS]!++;
        if (m.endOfStream) this.requestComplete = true;
        return;
      case 'request_body':
        if (m.endOfStream) this.requestComplete = true;
        if (!this.requestEcho) {
          n[REQUEST_BODY]!++;
          return;
        }
        this.requestEcho.add(m.body, m.endOfStream);
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
        this.responseEcho.add(m.body, m.endOfStream);
        return this.countHeld();
      case 'response_trailers':
        n[RESPONSE_TRAILERS]!++;
        this.responseStarted = true;
        return;
      case 'none':
        return;
    }
  }

  /** An EPP's answer reached Envoy. */
  answeredBy(a: RelayableAnswer): void {
    switch (a.case) {
      case 'request_headers':
        return this.answered(REQUEST_HEADERS);
      case 'request_body':
        if (!this.requestEcho) return this.answered(REQUEST_BODY);
        if (a.streamed) this.requestEcho.echoed(a.echoedBytes, a.endOfStream);
        this.countHeld();
        return;
      case 'request_trailers':
        return this.answered(REQUEST_TRAILERS);
      case 'response_headers':
        return this.answered(RESPONSE_HEADERS);
      case 'response_body':
        if (!this.responseEcho) return this.answered(RESPONSE_BODY);
        if (a.streamed) this.responseEcho.echoed(a.echoedBytes, a.endOfStream);
        this.countHeld();
        return;
      case 'response_trailers':
        return this.answered(RESPONSE_TRAILERS);
      case 'immediate_response':
      case 'streamed_immediate_response':
        this.immediate = true;
        return;
      case 'override_message_timeout':
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
   * Nothing is left to answer on the request path and the response path has not
   * started: ending the stream with OK (Envoy continues without a processor) loses nothing.
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
   * The answers to everything Envoy waits for, in the order it expects them
   * (request headers, body, trailers, then the response path), marked answered.
   * `requestHeaders` answers pending request headers (default CONTINUE).
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
