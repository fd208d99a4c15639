/**
 * The two narrow interfaces between a stream and the processor chosen for it
 * at its first message: EppRelay (relay to an EPP, with failover) or
 * RouterAnswers (the router answers Envoy itself). The stream owns Envoy's
 * call; a processor sees it as an {@link EnvoySide}.
 */
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import type { EppRequestHeaders } from './epp-call.js';
import type { Candidate } from '../snapshot/types.js';
import type { EnvoyWriter } from './envoy-writer.js';
import type { RouterError } from './errors.js';
import type { HeldBound } from './held-bytes.js';
import type { StreamOutcome, StreamTrace } from './observer.js';

/** What a processor may do to Envoy's stream. */
export interface EnvoySide {
  /** Every message to Envoy goes through it. */
  readonly writer: EnvoyWriter;
  /** The stream's trace, when it is traced: processors report attempts, failovers and FailOpen to it. */
  readonly trace?: StreamTrace;
  /** The headers an EPP call carries: Envoy's request metadata without transport and gRPC-reserved keys (built once). */
  forwardedHeaders(): EppRequestHeaders;
  /** Holds Envoy's input (balanced with resume(): several holders may hold it at once). */
  pause(): void;
  resume(): void;
  /**
   * Records that the routing decision reached Envoy: the stream's outcome if it
   * is later cancelled (Envoy half-closes and resets every stream when done).
   * The first call wins unless `replace` (the router finished a stream an EPP abandoned).
   */
  decided(outcome: StreamOutcome, replace?: boolean): void;
  /** An EPP attempt on `candidate` starts: the stream counts it (and traces it). */
  attemptStarted?(candidate: Candidate): void;
  /** The candidate now serving the request (failover): the stream reports its pool and cluster. */
  routed(candidate: Candidate): void;
  /** Ends Envoy's stream with OK (Envoy continues without a processor) and closes the stream. */
  finish(outcome: StreamOutcome): void;
  /** User-facing error: immediate_response then OK; otherwise a gRPC error status. Closes the stream. */
  fail(err: RouterError): void;
}

/**
 * A stream's processor. The stream books each of Envoy's messages (and its
 * half-close) in its writer's ledger before handing it on: a processor reads
 * what Envoy sent and waits for from `writer.waits` and never books anything.
 */
export interface Processor {
  /**
   * One of Envoy's messages, in order, read once and already booked by the
   * stream. `over`: the held-bytes bound its booking passed (a
   * FULL_DUPLEX_STREAMED body chunk Envoy waits to have echoed), if any.
   */
  message(m: EnvoyMessage, over: HeldBound | undefined): void;
  /** Envoy half-closed its side (booked: `writer.waits.inputEnded`): no more messages will come. */
  endOfInput(): void;
  /** Releases everything (cancels an EPP call); called exactly once, by the stream's close(). */
  dispose(): void;
}
