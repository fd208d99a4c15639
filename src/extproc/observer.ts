/**
 * The narrow view of metrics the data path reports to. The admin metrics
 * (prom-client) implement it; tests use {@link noopObserver} or a recorder.
 */

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
  /** A bug or a malformed message: gRPC error to Envoy. */
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

export interface DataPathObserver {
  streamStarted(): void;
  /** Called exactly once per started stream. */
  streamFinished(info: StreamInfo): void;
  /** Time spent matching the route and picking a candidate. */
  picked(seconds: number): void;
}

export const noopObserver: DataPathObserver = {
  streamStarted() {},
  streamFinished() {},
  picked() {},
};
