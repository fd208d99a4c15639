/**
 * One error type for the data path. A user-facing error becomes an Envoy
 * ImmediateResponse with a JSON body (`{"error":{"type","message"}}`); any
 * other becomes a gRPC status on the ext_proc stream (Envoy then answers 500).
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { FailureReason } from '../signals/types.js';
import type { StreamOutcome } from './observer.js';

export const ErrorCode = {
  /** No HTTPRoute rule matches the request. */
  NoRoute: 'no_route',
  /** A stream on a picker port that no multi-cluster InferencePool is bound to (counted like a no-route). */
  NoPickerPool: 'no_picker_pool',
  /** No routing snapshot has been built yet. */
  NotReady: 'not_ready',
  /** The pick fell on a backendRef without a usable pool, or nothing can be picked. */
  InvalidBackend: 'invalid_backend',
  /** The EPP cannot be reached, or failed before anything was relayed to Envoy. */
  EppUnavailable: 'epp_unavailable',
  /** The EPP stream failed after something was relayed to Envoy. */
  EppStream: 'epp_stream',
  /** Every attempt failed and the last EPP answered 429 (shed): the client should back off. */
  EppOverloaded: 'epp_overloaded',
  /** Envoy sent something the router cannot process (malformed, out of order). */
  Protocol: 'protocol',
  /** The stream sent no first message within extProc.firstMessageTimeoutMs. */
  FirstMessageTimeout: 'first_message_timeout',
  /** The router is at a bound (extProc.maxStreams, held body bytes): the request is shed. */
  OverCapacity: 'over_capacity',
  /** A bug. */
  Internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

interface CodeInfo {
  /** HTTP status of the ImmediateResponse; undefined = not user-facing (gRPC status instead). */
  readonly http?: number;
  readonly grpc: GrpcStatus;
  readonly outcome: StreamOutcome;
}

const CODES: Readonly<Record<ErrorCode, CodeInfo>> = {
  no_route: { http: 404, grpc: GrpcStatus.NOT_FOUND, outcome: 'no_route' },
  no_picker_pool: { http: 503, grpc: GrpcStatus.UNAVAILABLE, outcome: 'no_route' },
  not_ready: { http: 503, grpc: GrpcStatus.UNAVAILABLE, outcome: 'not_ready' },
  invalid_backend: { http: 500, grpc: GrpcStatus.FAILED_PRECONDITION, outcome: 'invalid_backend' },
  epp_unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE, outcome: 'epp_unavailable' },
  epp_stream: { grpc: GrpcStatus.UNAVAILABLE, outcome: 'epp_error' },
  epp_overloaded: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED, outcome: 'epp_overloaded' },
  protocol: { grpc: GrpcStatus.INVALID_ARGUMENT, outcome: 'protocol_error' },
  first_message_timeout: { grpc: GrpcStatus.DEADLINE_EXCEEDED, outcome: 'protocol_error' },
  over_capacity: { http: 503, grpc: GrpcStatus.RESOURCE_EXHAUSTED, outcome: 'over_capacity' },
  internal: { grpc: GrpcStatus.INTERNAL, outcome: 'internal_error' },
};

/** One failed attempt of a request, as the client's error body lists it. */
export interface AttemptSummary {
  readonly cluster: string;
  /** "namespace/pool". */
  readonly pool: string;
  readonly reason: FailureReason;
  readonly message: string;
}

export interface RouterErrorOptions {
  readonly cause?: unknown;
  /** Listed in the JSON body (failover: every attempt, in order). */
  readonly attempts?: readonly AttemptSummary[];
  /** Extra response headers of the ImmediateResponse (e.g. retry-after). */
  readonly headers?: Readonly<Record<string, string>>;
}

export class RouterError extends Error {
  override readonly name = 'RouterError';
  readonly code: ErrorCode;
  readonly attempts: readonly AttemptSummary[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, message: string, options?: RouterErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.attempts = options?.attempts;
    this.headers = options?.headers;
  }

  /** Wraps anything thrown into a RouterError; a RouterError is returned as is. */
  static from(err: unknown, code: ErrorCode = ErrorCode.Internal): RouterError {
    if (err instanceof RouterError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new RouterError(code, message, { cause: err });
  }

  /** True when Envoy's client gets an ImmediateResponse rather than a gRPC error. */
  get userFacing(): boolean {
    return CODES[this.code].http !== undefined;
  }

  /** HTTP status of the ImmediateResponse (500 for errors that are not user-facing). */
  get httpStatus(): number {
    return CODES[this.code].http ?? 500;
  }

  get grpcCode(): GrpcStatus {
    return CODES[this.code].grpc;
  }

  get outcome(): StreamOutcome {
    return CODES[this.code].outcome;
  }

  /** The body of the ImmediateResponse, sent as JSON. */
  responseBody(): { error: { type: ErrorCode; message: string; attempts?: readonly AttemptSummary[] } } {
    return { error: { type: this.code, message: this.message, ...(this.attempts ? { attempts: this.attempts } : {}) } };
  }

  /** Prefixes the message with where it happened (e.g. the ext_proc phase), keeping code and cause. */
  withContext(context: string): RouterError {
    return new RouterError(this.code, `${context}: ${this.message}`, {
      cause: this.cause ?? this,
      ...(this.attempts ? { attempts: this.attempts } : {}),
      ...(this.headers ? { headers: this.headers } : {}),
    });
  }
}
