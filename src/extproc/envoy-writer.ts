/**
 * The one writer to Envoy on an ext_proc stream: every message to Envoy goes
 * through it, relayed EPP answers and the router's own answers alike. It keeps
 * the ledger of what Envoy still waits for, and it owns backpressure: while
 * Envoy's side is backed up, the current producer (the EPP's call, or Envoy's
 * own input while the router answers) is paused.
 */
import type { IncomingHttpHeaders } from 'node:http2';
import type { Metadata } from '@grpc/grpc-js';
import type { ProtocolConfiguration } from '../protocol/codec.js';
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import type { RelayableAnswer } from '../protocol/epp-answer.js';
import { withRequestHeaderMutation } from '../protocol/header-mutation.js';
import { continueHeaders, immediateResponse } from '../protocol/responses.js';
import { withRouterDecision, type RouterDecision } from '../protocol/router-metadata.js';
import { EnvoyLedger } from './envoy-ledger.js';
import type { RouterError } from './errors.js';
import type { HeldBound, HeldBytes } from './held-bytes.js';
import type { StreamOutcome } from './observer.js';

/** The routing decision as it stands when its answer goes to Envoy; `outcome`: the error ending the stream, if it ends so. */
export type DecisionSource = (outcome?: StreamOutcome) => RouterDecision | undefined;

/**
 * Rewrites the request headers answer on its way to Envoy (the Endpoint Picker role's
 * answers): `eppDestination` is the destination an EPP's answer set (as the guard read
 * it); `fromEpp` false for an answer the router built itself.
 */
export type RequestHeadersShaper = (answer: Buffer, eppDestination: string | undefined, fromEpp: boolean) => Buffer;

/** Envoy's call as the stream uses it: a grpc-js server call, or the node:http2 transport's (src/transport/). */
export interface EnvoyCall {
  readonly metadata: Metadata;
  /** The HTTP/2 request headers as received, when the transport has them (node:http2): read instead of building `metadata`. */
  readonly requestHeaders?: IncomingHttpHeaders;
  write(msg: Buffer): boolean;
  end(): void;
  pause(): unknown;
  resume(): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: 'data' | 'end' | 'cancelled' | 'error', listener: (...args: any[]) => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
  emit(event: 'error', err: Error): boolean;
}

/** Something that produces messages for Envoy and can be held back. */
export interface Flow {
  pause(): void;
  resume(): void;
}

export class EnvoyWriter {
  private ledger: EnvoyLedger | undefined;
  /** No more answers are written (the stream is over). */
  private closed = false;
  /** Envoy's call was ended by the router. */
  private ended = false;
  /** The route's request header mutation, merged into the request headers answer, whoever writes it. */
  private requestHeaderMutation: Buffer | undefined;
  private shaper: RequestHeadersShaper | undefined;
  private backedUp = false;
  /** Holds on Envoy's input: each holder pauses and resumes it once. */
  private inputHolds = 0;
  /** What is paused while Envoy's side is backed up. */
  private producer: Flow;
  /** Envoy's input as a producer: the router's own answers follow Envoy's messages. */
  readonly input: Flow = {
    pause: () => this.holdInput(),
    resume: () => this.releaseInput(),
  };

  /** `decision`: what the answer to Envoy's request headers carries as the router's dynamic metadata (absent: nothing). */
  constructor(
    private readonly call: EnvoyCall,
    private readonly decision?: DecisionSource,
  ) {
    this.producer = this.input;
  }

  /** The stream's processing mode is known (first message): starts the ledger. */
  open(protocol: ProtocolConfiguration | null, held?: HeldBytes): EnvoyLedger {
    this.ledger = new EnvoyLedger(protocol, held);
    return this.ledger;
  }

  /** What Envoy waits for (after open()). */
  get waits(): EnvoyLedger {
    return this.ledger!;
  }

  /** Envoy's side cannot take more right now. */
  get isBackedUp(): boolean {
    return this.backedUp;
  }

  /** Books one of Envoy's messages (the stream does, before its processor sees it). Returns the held-bytes bound it passed, if any. */
  record(m: EnvoyMessage): HeldBound | undefined {
    return this.ledger!.fromEnvoy(m);
  }

  /** Books Envoy's half-close (the stream does, before its processor hears of it). */
  inputEnded(): void {
    if (this.ledger !== undefined) this.ledger.inputEnded = true;
  }

  /** The matched rule's request header mutation fragment (src/protocol/header-mutation.ts): added to the request headers answer. */
  mutateRequestHeaders(fragment: Buffer | undefined): void {
    this.requestHeaderMutation = fragment;
  }

  /** Every request headers answer, the EPP's or the router's, goes through `shaper` from now on. */
  shapeRequestHeaders(shaper: RequestHeadersShaper): void {
    this.shaper = shaper;
  }

  /** Relays an EPP's answer. */
  relay(a: RelayableAnswer): void {
    const decides = this.ledger!.awaitingRequestHeaders && (a.case === 'request_headers' || a.case === 'immediate_response');
    this.ledger!.answeredBy(a);
    const shaped = a.case === 'request_headers' && this.shaper !== undefined ? this.shaper(a.msg, a.destination, true) : a.msg;
    const msg = a.case === 'request_headers' ? this.requestHeadersAnswer(shaped) : a.msg;
    this.write(decides ? this.decided(msg) : msg);
  }

  /** The router answers everything Envoy waits for; `requestHeaders` answers pending request headers (default CONTINUE). */
  answerPending(requestHeaders?: Buffer): void {
    const decides = this.ledger!.awaitingRequestHeaders;
    const shaped = decides && this.shaper !== undefined ? this.shaper(requestHeaders ?? continueHeaders('request_headers'), undefined, false) : requestHeaders;
    const answer = this.requestHeaderMutation !== undefined && decides
      ? this.requestHeadersAnswer(shaped ?? continueHeaders('request_headers'))
      : shaped;
    const out = this.ledger!.takeOver(answer);
    if (decides) out[0] = this.decided(out[0]!);
    for (let i = 0; i < out.length; i++) this.write(out[i]!);
  }

  /** The request headers answer with the route's mutation merged in (once). */
  private requestHeadersAnswer(answer: Buffer): Buffer {
    const fragment = this.requestHeaderMutation;
    if (fragment === undefined) return answer;
    this.requestHeaderMutation = undefined;
    return withRequestHeaderMutation(answer, fragment);
  }

  /** From now on `flow` is held back while Envoy's side is backed up (the previous producer is let go). */
  produceFrom(flow: Flow): void {
    if (flow === this.producer) return;
    if (this.backedUp) {
      this.producer.resume();
      flow.pause();
    }
    this.producer = flow;
  }

  /** Ends Envoy's stream with OK: Envoy continues without a processor. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.close();
    this.call.end();
  }

  /** Ends Envoy's stream with `err`: an immediate response then OK when user-facing, else a gRPC status. */
  endWith(err: RouterError): void {
    if (this.ended) return;
    this.ended = true;
    this.close();
    if (!err.userFacing) {
      // grpc-js and our transport turn an 'error' event on a server stream into the call's status.
      this.call.emit('error', Object.assign(new Error(err.message), { code: err.grpcCode, details: err.message }));
      return;
    }
    const answer = immediateResponse({
      status: err.httpStatus,
      body: err.responseBody(),
      details: `mcip_router_${err.code}`,
      ...(err.headers ? { headers: err.headers } : {}),
    });
    this.call.write(this.decided(answer, err.outcome));
    this.call.end();
  }

  /** The stream is over (ended, or reset by Envoy): nothing more is written, held bytes no longer count. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.ledger?.releaseHeld();
  }

  /** The answer that carries the routing decision to Envoy, with the decision attached (router-metadata.ts). */
  private decided(answer: Buffer, outcome?: StreamOutcome): Buffer {
    const d = this.decision?.(outcome);
    return d === undefined ? answer : withRouterDecision(answer, d);
  }

  private write(msg: Buffer): void {
    if (this.closed || this.call.write(msg) || this.backedUp) return;
    this.backedUp = true;
    this.producer.pause();
    this.call.once('drain', this.drained);
  }

  private readonly drained = (): void => {
    this.backedUp = false;
    if (!this.closed) this.producer.resume();
  };

  private holdInput(): void {
    if (this.inputHolds++ === 0) this.call.pause();
  }

  private releaseInput(): void {
    if (this.inputHolds === 0) return;
    if (--this.inputHolds === 0 && !this.closed) this.call.resume();
  }
}
