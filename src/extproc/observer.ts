/**
 * The narrow view of metrics the data path reports to. The admin metrics
 * (prom-client) implement it; tests use {@link noopObserver} or a recorder.
 */

import type { Picked, PickReason } from '../picker/types.js';
import type { HeaderValue } from '../protocol/codec.js';
import type { PeerCutReason } from '../transport/peer-guard.js';
import type { GuardReason } from '../protocol/answer-guard.js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';

/** How an ext_proc stream ended. A closed set: it is a metric label. */
export type StreamOutcome =
  /** Relayed to an EPP and ended normally. */
  | 'relayed'
  /** Answered by the router with a remote parent's address (Parent mode). */
  | 'parent'
  /** No HTTPRoute rule matched: 404. */
  | 'no_route'
  /** The weighted pick fell on a backendRef with no usable pool, or nothing could be picked: 500. */
  | 'invalid_backend'
  /** No routing snapshot yet: 503. */
  | 'not_ready'
  /** The EPP could not be reached or failed before anything was relayed: 503. */
  | 'epp_unavailable'
  /** The EPP stream failed after something was relayed: gRPC error to Envoy. */
  | 'epp_error'
  /** The EPP answered with an immediate response (e.g. 503 / 429). */
  | 'epp_immediate'
  /** Envoy cancelled or reset the stream. */
  | 'client_cancelled'
  /** Request headers were not sent to the router: answered per mode without routing. */
  | 'passthrough'
  /** Every EPP attempt failed; the pool is FailOpen and the router routed the request itself. */
  | 'fail_open'
  /** Every EPP attempt failed and the last EPP answered 429: 429 so the client backs off. */
  | 'epp_overloaded'
  /** The EPP failed after its answer reached Envoy: the router finished the stream itself. */
  | 'finished_by_router'
  /** Envoy's messages broke the ext_proc protocol (malformed, out of order, no first message in time): gRPC error to Envoy. */
  | 'protocol_error'
  /** The router was at a bound (extProc.maxStreams, held body bytes): immediate 503. */
  | 'over_capacity'
  /** A bug: gRPC error to Envoy. */
  | 'internal_error';

export interface StreamInfo {
  /** "namespace/name" of the matched HTTPRoute. */
  readonly route?: string;
  /** Picked pool, "namespace/name". */
  readonly pool?: string;
  /** Cluster of the picked pool. */
  readonly cluster?: string;
  readonly outcome: StreamOutcome;
  readonly durationSeconds: number;
}

/**
 * Why a candidate was chosen (a closed set, a metric label): the picker's reason for the
 * primary, 'failover' for each further candidate tried after a failure, 'fail-open' when
 * the router routed the request itself.
 */
export type PickCountReason = PickReason | 'failover' | 'fail-open';

export interface DataPathObserver {
  streamStarted(): void;
  /** Called exactly once per started stream. */
  streamFinished(info: StreamInfo): void;
  /** Time spent matching the route and picking a candidate. */
  picked(seconds: number): void;
  /** One per candidate chosen: the primary, each failover, a fail-open destination. */
  pickedFor(reason: PickCountReason): void;
  /** The data path moved a request from one candidate to the next. */
  failover(fromCluster: string, toCluster: string, reason: FailureReason): void;
  /** Time from the start of an EPP attempt to the EPP's first message. */
  eppFirstResponse(cluster: string, seconds: number): void;
  /** Lifetime of one EPP attempt's stream, however it ended. */
  eppStreamFinished(cluster: string, seconds: number): void;
  /** An EPP answer was refused, or part of it dropped, by the member's answer rules. */
  eppAnswerGuarded(cluster: string, reason: GuardReason): void;
  /** A connection to the ext_proc server was cut by the hostile-peer defence (extProc.peerLimits). */
  peerCut?(reason: PeerCutReason): void;
}

export const noopObserver: DataPathObserver = {
  streamStarted() {},
  streamFinished() {},
  picked() {},
  pickedFor() {},
  failover() {},
  eppFirstResponse() {},
  eppStreamFinished() {},
  eppAnswerGuarded() {},
};

/**
 * How one EPP attempt ended, for its trace span: 'answered' (its answer committed the
 * stream), a failure reason (the attempt failed before the commit, or the committed EPP
 * failed), or 'abandoned' (the stream closed while it was still being tried).
 */
export type AttemptEnd = 'answered' | FailureReason | 'abandoned';

/**
 * One stream's trace (src/telemetry/). The stream opens it at its first message; the relay
 * reports attempts, failovers and FailOpen to it; the stream's close ends it. Absent when
 * tracing is off or the stream is not sampled: the data path calls nothing then.
 */
export interface StreamTrace {
  /** The route matched and the pick made (candidates of the chosen backendRef, reason, the primary). */
  picked(route: string, picked: Picked): void;
  /** An EPP attempt on `candidate` starts (the primary, then each failover). */
  attemptStarted(candidate: Candidate): void;
  /** The current attempt ended; `detail` is the failure in words. */
  attemptEnded(end: AttemptEnd, detail?: string): void;
  /** The request moves from one candidate to the next. */
  failover(from: Candidate, to: Candidate, reason: FailureReason): void;
  /** Every attempt failed and the router routed the request itself. */
  failOpen(candidate: Candidate): void;
  /** The stream closed: called once, last. */
  finished(info: StreamInfo): void;
}

/** Opens a trace per stream; undefined for a stream that is not traced. */
export interface StreamTracer {
  /** `headers`: Envoy's request headers (traceparent / tracestate are read from them), empty when none were sent. */
  open(headers: readonly HeaderValue[]): StreamTrace | undefined;
}
