/**
 * The one owner of an ext_proc stream's order, both ways (docs/protocol.md §1):
 * the order in which Envoy sends its messages, what Envoy still waits for (a
 * count of unanswered messages per phase, and for a FULL_DUPLEX_STREAMED body
 * the bytes not echoed yet), and whether an answer fits what Envoy waits for,
 * so the router can answer Envoy at any point and relays nothing Envoy would
 * take as spurious.
 *
 * Envoy's order: per direction, headers once, then body chunks, then trailers,
 * nothing after the direction ended (end_of_stream on headers or a body chunk,
 * or trailers); the response path only after the request path began. A stream
 * may begin without request headers (request_header_mode SKIP): the request
 * body and the response path keep their order rules except that response
 * headers need not come first. A message out of that order is a protocol
 * violation (INVALID_ARGUMENT naming it).
 *
 * A stream whose first message announces no processing mode (no
 * protocol_config: Envoy before 1.34, or NGINX Gateway Fabric's one-shot
 * client, which sends the whole body in one message) is not full duplex, and a
 * body message there may be answered in either form: a plain body answer, or a
 * streamed_response echo (stock EPPs echo every body so), whose piece with
 * end_of_stream answers the message.
 */
import { BodySendMode } from '../protocol/constants.js';
import type { ProtocolConfiguration } from '../protocol/codec.js';
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import type { RelayableAnswer } from '../protocol/epp-answer.js';
import { PHASES, REQUEST_BODY, REQUEST_HEADERS, REQUEST_TRAILERS, RESPONSE_BODY, RESPONSE_HEADERS, RESPONSE_TRAILERS } from '../protocol/phases.js';
import { continueBody, continueHeaders, continueTrailers } from '../protocol/responses.js';
import { EchoLedger } from './echo-ledger.js';
import { ErrorCode, RouterError } from './errors.js';
import type { HeldBound, HeldBytes } from './held-bytes.js';

export { EchoLedger } from './echo-ledger.js';

// What Envoy sent so far, for its order rules.
const SEEN_ANY = 1;
const SEEN_REQUEST_HEADERS = 2;
const REQUEST_ENDED = 4;
const SEEN_RESPONSE_HEADERS = 8;
const SEEN_RESPONSE_ANY = 16;
const RESPONSE_ENDED = 32;

export class EnvoyLedger {
  readonly requestDuplex: boolean;
  readonly responseDuplex: boolean;
  /** No protocol_config came: a body answer may be plain or a streamed_response echo. */
  private readonly unannounced: boolean;
  /** Unanswered Envoy messages per phase (FULL_DUPLEX_STREAMED bodies: see the echo ledgers). */
  private readonly unanswered = [0, 0, 0, 0, 0, 0];
  private readonly requestEcho: EchoLedger | undefined;
  private readonly responseEcho: EchoLedger | undefined;
  /** Per direction (by its headers phase): Envoy sends body messages without waiting for the headers answer. */
  private readonly bodyAhead = [false, false, false, false];
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
  /** What Envoy sent so far (SEEN_* and *_ENDED bits). */
  private seen = 0;

  constructor(
    protocol: ProtocolConfiguration | null,
    private readonly held: HeldBytes | undefined,
  ) {
    this.unannounced = protocol === null || protocol === undefined;
    this.requestDuplex = protocol?.request_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    this.responseDuplex = protocol?.response_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    if (this.requestDuplex) this.requestEcho = new EchoLedger();
    if (this.responseDuplex) this.responseEcho = new EchoLedger();
    const ahead = (mode: BodySendMode | undefined): boolean =>
      mode === BodySendMode.FULL_DUPLEX_STREAMED || (mode === BodySendMode.STREAMED && protocol?.send_body_without_waiting_for_header_response === true);
    this.bodyAhead[REQUEST_HEADERS] = ahead(protocol?.request_body_mode);
    this.bodyAhead[RESPONSE_HEADERS] = ahead(protocol?.response_body_mode);
  }

  /**
   * Envoy sent `m`. Returns the held-bytes bound a FULL_DUPLEX_STREAMED body
   * chunk passed, if any; throws a protocol error when `m` is out of order.
   */
  fromEnvoy(m: EnvoyMessage): HeldBound | undefined {
    if (m.case !== 'none') this.checkOrder(m.case, m.endOfStream);
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

  /**
   * Why `a` is not an answer Envoy waits for (Envoy would take it as spurious
   * and fail the request), or undefined when it fits: an answer to nothing
   * pending, a second answer to one message, an answer ahead of an earlier
   * message's of its direction, a body answer that is not a streamed_response in
   * FULL_DUPLEX_STREAMED (or is one in another mode), anything after an
   * immediate response, a CONTINUE_AND_REPLACE headers answer while its
   * direction's body may be under way. immediate_response
   * fits at any time; override_message_timeout answers nothing and always fits.
   */
  misfit(a: RelayableAnswer): string | undefined {
    if (this.immediate) return `${a.case} answer after an immediate_response ended processing`;
    switch (a.case) {
      case 'request_headers':
      case 'response_headers':
        return this.headersMisfit(PHASE_OF[a.case], a.replaces);
      case 'request_body':
        return this.bodyMisfit(REQUEST_BODY, this.requestEcho, a.streamed);
      case 'response_body':
        return this.bodyMisfit(RESPONSE_BODY, this.responseEcho, a.streamed);
      case 'request_trailers':
        return this.trailersMisfit(REQUEST_TRAILERS);
      case 'response_trailers':
        return this.trailersMisfit(RESPONSE_TRAILERS);
      case 'immediate_response':
      case 'streamed_immediate_response':
      case 'override_message_timeout':
        return undefined;
    }
  }

  /** An EPP's answer reached Envoy. */
  answeredBy(a: RelayableAnswer): void {
    switch (a.case) {
      case 'request_headers':
        return this.answered(REQUEST_HEADERS);
      case 'request_body':
        if (!this.requestEcho) return this.answeredBody(REQUEST_BODY, a);
        if (a.streamed) this.requestEcho.echoed(a.echoedBytes, a.endOfStream);
        this.countHeld();
        return;
      case 'request_trailers':
        return this.answered(REQUEST_TRAILERS);
      case 'response_headers':
        return this.answered(RESPONSE_HEADERS);
      case 'response_body':
        if (!this.responseEcho) return this.answeredBody(RESPONSE_BODY, a);
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

  /** A body answer outside full duplex: a streamed_response piece (no mode announced) answers its message with end_of_stream. */
  private answeredBody(i: number, a: RelayableAnswer): void {
    if (!a.streamed || a.endOfStream) this.answered(i);
  }

  /**
   * A headers answer (phase `i`) with nothing to answer, or with CONTINUE_AND_REPLACE (`replaces`)
   * while body or trailers messages of its direction may be under way: Envoy then drops them and
   * awaits no answer to them, so the EPP's answers to them, or the router's, would be spurious.
   */
  private headersMisfit(i: number, replaces: boolean): string | undefined {
    const name = PHASES[i]!.name;
    if (this.unanswered[i]! === 0) return `${name} answer with no ${name} message unanswered`;
    if (!replaces) return undefined;
    const n = this.unanswered;
    const echo = i === REQUEST_HEADERS ? this.requestEcho : this.responseEcho;
    // A direction that ended with its headers (end_of_stream) sends nothing more either way.
    const endedAtHeaders = (this.seen & (i === REQUEST_HEADERS ? REQUEST_ENDED : RESPONSE_ENDED)) !== 0 && !(echo?.open ?? false);
    if ((this.bodyAhead[i] && !endedAtHeaders) || n[i + 1]! > 0 || n[i + 2]! > 0) {
      return `${name} answer with CONTINUE_AND_REPLACE while Envoy streams its direction's body to the processor (Envoy would await no answer to it)`;
    }
    return undefined;
  }

  /** A body answer (phase `i`) before its direction's headers answer, or with nothing to answer. */
  private bodyMisfit(i: number, echo: EchoLedger | undefined, streamed: boolean): string | undefined {
    const name = PHASES[i]!.name;
    if (this.unanswered[i - 1]! > 0) return `${name} answer before the ${PHASES[i - 1]!.name} answer`;
    if (echo === undefined) {
      if (streamed && !this.unannounced) return `${name} streamed_response outside FULL_DUPLEX_STREAMED`;
      return this.unanswered[i]! > 0 ? undefined : `${name} answer with no ${name} message unanswered`;
    }
    if (!streamed) return `${name} answer that is not a streamed_response in FULL_DUPLEX_STREAMED`;
    return echo.open ? undefined : `${name} streamed_response with no ${name} to echo (none sent, or its echo ended)`;
  }

  /** A trailers answer (phase `i`) ahead of its direction's headers or body answers, or with nothing to answer. */
  private trailersMisfit(i: number): string | undefined {
    const name = PHASES[i]!.name;
    const n = this.unanswered;
    if (n[i - 2]! > 0) return `${name} answer before the ${PHASES[i - 2]!.name} answer`;
    if (n[i - 1]! > 0) return `${name} answer before the ${PHASES[i - 1]!.name} answers`;
    return n[i]! > 0 ? undefined : `${name} answer with no ${name} message unanswered`;
  }

  /** Envoy's order rules (see the top of this file). */
  private checkOrder(phase: EnvoyMessage['case'], endOfStream: boolean): void {
    const s = this.seen;
    let v: string | undefined;
    switch (phase) {
      case 'request_headers':
        if (s & SEEN_REQUEST_HEADERS) v = 'request_headers sent twice';
        else if (s !== 0) v = 'request_headers after other messages of the stream';
        else this.seen = SEEN_ANY | SEEN_REQUEST_HEADERS | (endOfStream ? REQUEST_ENDED : 0);
        break;
      case 'request_body':
      case 'request_trailers':
        if (s & REQUEST_ENDED) v = `${phase} after the request ended (end_of_stream or trailers)`;
        else if (s & SEEN_RESPONSE_ANY && !(s & SEEN_REQUEST_HEADERS)) v = `${phase} after the response path began`;
        else this.seen = s | SEEN_ANY | (endOfStream ? REQUEST_ENDED : 0);
        break;
      case 'response_headers':
        if (s === 0) v = 'response_headers before any request message';
        else if (s & SEEN_RESPONSE_HEADERS) v = 'response_headers sent twice';
        else if (s & SEEN_RESPONSE_ANY) v = 'response_headers after a response body or trailers';
        else this.seen = s | SEEN_RESPONSE_HEADERS | SEEN_RESPONSE_ANY | (endOfStream ? RESPONSE_ENDED : 0);
        break;
      case 'response_body':
      case 'response_trailers':
        if (s === 0) v = `${phase} before any request message`;
        else if (s & SEEN_REQUEST_HEADERS && !(s & SEEN_RESPONSE_HEADERS)) v = `${phase} before response_headers`;
        else if (s & RESPONSE_ENDED) v = `${phase} after the response ended (end_of_stream or trailers)`;
        else this.seen = s | SEEN_RESPONSE_ANY | (endOfStream ? RESPONSE_ENDED : 0);
        break;
      case 'none':
        break;
    }
    if (v !== undefined) throw new RouterError(ErrorCode.Protocol, `out of order: ${v}`);
  }
}

const PHASE_OF = { request_headers: REQUEST_HEADERS, response_headers: RESPONSE_HEADERS } as const;
