/**
 * The two narrow interfaces between a stream and the processor chosen for it
 * at its first message: EppRelay (relay to an EPP, with failover), ModeResponder
 * (the router answers: a remote parent's address in Parent mode, or pass-through
 * when request headers were not sent). The stream owns Envoy's call; a processor
 * sees it only as an {@link EnvoySide}.
 */
import type { Metadata } from '@grpc/grpc-js';
import type { RequestPhase } from '../protocol/codec.js';
import type { Candidate } from '../snapshot/types.js';
import type { RouterError } from './errors.js';
import type { StreamOutcome } from './observer.js';

/** What a processor may do to Envoy's stream. */
export interface EnvoySide {
  /** Sends one encoded ProcessingResponse. Returns false when Envoy's side is backed up (wait for onDrain). */
  send(msg: Buffer): boolean;
  /** Calls `cb` once when Envoy's side can take more after send() returned false. */
  onDrain(cb: () => void): void;
  /** Stops delivering Envoy's messages (backpressure) until resume(). */
  pause(): void;
  resume(): void;
  /**
   * Records that the routing decision reached Envoy: the stream's outcome if it
   * is later cancelled (Envoy half-closes and resets every stream when done).
   * The first call wins unless `replace` (e.g. the router finished a stream an EPP abandoned).
   */
  decided(outcome: StreamOutcome, replace?: boolean): void;
  /** The candidate now serving the request (failover): the stream reports its pool and cluster. */
  routed(candidate: Candidate): void;
  /** Ends Envoy's stream with OK (Envoy continues without a processor) and closes the stream. */
  finish(outcome: StreamOutcome): void;
  /** User-facing error: immediate_response then OK; otherwise a gRPC error status. Closes the stream. */
  fail(err: RouterError): void;
  /** Envoy's gRPC request metadata. */
  readonly metadata: Metadata;
}

/** One method per ext_proc request phase; each gets the raw message and its peeked end_of_stream. */
export interface Processor {
  requestHeaders(msg: Buffer, endOfStream: boolean): void;
  requestBody(msg: Buffer, endOfStream: boolean): void;
  requestTrailers(msg: Buffer): void;
  responseHeaders(msg: Buffer, endOfStream: boolean): void;
  responseBody(msg: Buffer, endOfStream: boolean): void;
  responseTrailers(msg: Buffer): void;
  /** Envoy half-closed its side: no more messages will come. */
  endOfInput(): void;
  /** Releases everything (cancels an EPP call); called exactly once, by the stream's close(). */
  dispose(): void;
}

/** Hands one of Envoy's messages to the processor method of its phase. */
export function dispatchPhase(p: Processor, phase: RequestPhase, msg: Buffer, endOfStream: boolean): void {
  switch (phase) {
    case 'request_headers':
      return p.requestHeaders(msg, endOfStream);
    case 'request_body':
      return p.requestBody(msg, endOfStream);
    case 'request_trailers':
      return p.requestTrailers(msg);
    case 'response_headers':
      return p.responseHeaders(msg, endOfStream);
    case 'response_body':
      return p.responseBody(msg, endOfStream);
    case 'response_trailers':
      return p.responseTrailers(msg);
  }
}
