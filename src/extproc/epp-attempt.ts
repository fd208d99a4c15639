/**
 * One attempt at relaying a stream to one candidate's EPP: opens the call
 * (Envoy's messages wait, and Envoy is paused, until it is open), writes the
 * replayed messages and then Envoy's messages as they come, hands every EPP
 * message to its owner, and reports how the attempt ended: OK, or a failure
 * classified for the outlier detector ('connect', 'stream', 'timeout').
 *
 * The per-attempt timer runs from arm() until the EPP's first message. The
 * owner arms it at the start in modes where the EPP answers the request headers
 * at once, and only once the request body is complete in FULL_DUPLEX_STREAMED,
 * where EPPs legitimately hold their answer until they have read the body. An
 * EPP that stops reading before it answers (hung, or a partition after connect)
 * keeps the body from completing (Envoy is paused): so, until its first
 * message, the same timeout also applies to every wait for the call to drain.
 *
 * Backpressure: Envoy is paused while the EPP call cannot take more
 * (write() false) and resumed on 'drain'; the owner pauses the EPP side with
 * pauseEpp() while Envoy's side is backed up. Whatever this attempt paused it
 * resumes when it ends, so the next attempt or the router's own answers start
 * from a flowing stream.
 *
 * Ending it: dispose() cancels the call (RST_STREAM to the EPP). release() is
 * for a finished exchange that both sides half-closed (Envoy resets every
 * stream right after its half-close, see EppRelay.dispose()): the EPP is
 * ending the call itself, so it is left to, and cancelled only if it has not
 * ended within the grace period. Cancelling it would cost CPU and send the EPP
 * an RST_STREAM per request, which trips Node's HTTP/2 rapid-reset limit
 * (1,000 per connection, then GOAWAY) on any Node-based EPP.
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';
import { forwardedMetadata, type EppCall, type EppClientPool } from './epp-client.js';
import { ErrorCode, RouterError } from './errors.js';
import type { DataPathObserver } from './observer.js';
import type { EnvoySide } from './processor.js';

export type EppCandidate = Extract<Candidate, { via: 'epp' }>;

export interface AttemptOwner {
  onEppMessage(attempt: EppAttempt, msg: Buffer): void;
  /** The EPP ended its stream with OK (after every message it sent was delivered). */
  onEppEnd(attempt: EppAttempt): void;
  onEppFailure(attempt: EppAttempt, reason: FailureReason, err: unknown): void;
}

export interface AttemptSettings {
  readonly pool: EppClientPool;
  readonly observer: DataPathObserver;
  /** 0 = no per-attempt timeout. */
  readonly attemptTimeoutMs: number;
  /** release(): how long a half-closed call is left to end on its own before it is cancelled (default 5000). */
  readonly releaseGraceMs?: number;
}

export const DEFAULT_RELEASE_GRACE_MS = 5000;

export class EppAttempt {
  private call: EppCall | undefined;
  /** Messages waiting for the call to open. */
  private pending: Buffer[] | undefined;
  private inputEnded = false;
  private done = false;
  private envoyPaused = false;
  private waitingDrain = false;
  private timer: NodeJS.Timeout | undefined;
  /** Runs while the call does not drain, until the EPP's first message. */
  private stallTimer: NodeJS.Timeout | undefined;
  /** After release(): cancels the call if the EPP has not ended it by then. */
  private graceTimer: NodeJS.Timeout | undefined;
  private armed = false;
  private answered = false;
  private readonly startedAt = performance.now();

  constructor(
    private readonly envoy: EnvoySide,
    readonly candidate: EppCandidate,
    private readonly settings: AttemptSettings,
    private readonly owner: AttemptOwner,
    replay: readonly Buffer[],
  ) {
    this.pending = replay.slice();
    this.pauseEnvoy();
    settings.pool.ready(candidate.epp).then(
      () => this.opened(),
      (err: unknown) => this.failed('connect', err),
    );
  }

  /** Sends one of Envoy's messages (after the replayed ones). */
  forward(msg: Buffer): void {
    if (this.done) return;
    if (this.pending) this.pending.push(msg);
    else this.write(msg);
  }

  /** Envoy half-closed: so does the EPP call, once open. */
  endInput(): void {
    this.inputEnded = true;
    if (this.call && !this.done) this.call.end();
  }

  /** Starts the per-attempt timer (idempotent; a no-op once the EPP answered). */
  arm(): void {
    if (this.armed || this.done || this.answered || this.settings.attemptTimeoutMs <= 0) return;
    this.armed = true;
    const ms = this.settings.attemptTimeoutMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.failed('timeout', new RouterError(ErrorCode.EppUnavailable, `no answer within attemptTimeoutMs (${ms} ms)`));
    }, ms);
  }

  /** Envoy's side is backed up: stop reading the EPP. */
  pauseEpp(): void {
    if (!this.done) this.call?.pause();
  }

  resumeEpp(): void {
    if (!this.done) this.call?.resume();
  }

  /** Ends the attempt without a report (the stream closed, or the owner gave up on it): cancels the call. */
  dispose(): void {
    if (this.done) return;
    this.finish();
    this.call?.cancel();
  }

  /**
   * Ends the attempt without a report, like dispose(), but when the call is open
   * and already half-closed (endInput()) it is not cancelled: it is read to its
   * end (nothing more reaches the owner), so the EPP ends it with its status and
   * no RST_STREAM is sent. Cancelled after `releaseGraceMs` if the EPP has not
   * ended it by then. A call not half-closed (or not open) is cancelled at once.
   */
  release(): void {
    if (this.done) return;
    const call = this.call;
    if (call === undefined || !this.inputEnded) {
      this.dispose();
      return;
    }
    this.finish();
    call.resume(); // read to the end even if the owner had paused it
    const ms = this.settings.releaseGraceMs ?? DEFAULT_RELEASE_GRACE_MS;
    this.graceTimer = setTimeout(() => {
      this.graceTimer = undefined;
      call.cancel();
    }, ms);
    this.graceTimer.unref();
  }

  private opened(): void {
    if (this.done) return;
    let call: EppCall;
    try {
      call = this.settings.pool.call(this.candidate.epp, forwardedMetadata(this.envoy.metadata));
    } catch (err) {
      this.failed('connect', err);
      return;
    }
    this.call = call;
    // Listeners go on in the same tick: grpc-js may fail the call on the next one.
    call.on('data', this.onData);
    call.on('end', this.onEnd);
    call.on('error', this.onError);
    const pending = this.pending ?? [];
    this.pending = undefined;
    for (const msg of pending) this.write(msg);
    if (this.inputEnded) call.end();
    if (!this.waitingDrain) this.resumeEnvoy();
  }

  private write(msg: Buffer): void {
    if (this.call!.write(msg) || this.waitingDrain) return;
    // The EPP is not keeping up: stop reading Envoy until the call drains.
    this.waitingDrain = true;
    this.pauseEnvoy();
    this.call!.once('drain', this.onDrain);
    const ms = this.settings.attemptTimeoutMs;
    if (this.answered || ms <= 0) return;
    this.stallTimer = setTimeout(() => {
      this.stallTimer = undefined;
      this.failed('timeout', new RouterError(ErrorCode.EppUnavailable, `the EPP read nothing for attemptTimeoutMs (${ms} ms)`));
    }, ms);
  }

  private readonly onDrain = (): void => {
    this.waitingDrain = false;
    this.clearStallTimer();
    if (!this.done) this.resumeEnvoy();
  };

  private readonly onData = (msg: Buffer): void => {
    if (this.done) return;
    if (!this.answered) {
      this.answered = true;
      this.clearTimer();
      this.clearStallTimer();
      this.settings.observer.eppFirstResponse(this.candidate.cluster, (performance.now() - this.startedAt) / 1000);
    }
    this.owner.onEppMessage(this, msg);
  };

  private readonly onEnd = (): void => {
    this.clearGraceTimer();
    if (this.done) return;
    this.finish();
    this.owner.onEppEnd(this);
  };

  private readonly onError = (err: ServiceError): void => {
    this.clearGraceTimer();
    this.failed(classify(err, this.answered), err);
  };

  private failed(reason: FailureReason, err: unknown): void {
    if (this.done) return;
    this.finish();
    this.call?.cancel();
    this.owner.onEppFailure(this, reason, err);
  }

  private finish(): void {
    this.done = true;
    this.pending = undefined;
    this.clearTimer();
    this.clearStallTimer();
    this.resumeEnvoy();
    this.settings.observer.eppStreamFinished(this.candidate.cluster, (performance.now() - this.startedAt) / 1000);
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private clearGraceTimer(): void {
    if (this.graceTimer === undefined) return;
    clearTimeout(this.graceTimer);
    this.graceTimer = undefined;
  }

  private clearStallTimer(): void {
    if (this.stallTimer === undefined) return;
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  private pauseEnvoy(): void {
    if (this.envoyPaused) return;
    this.envoyPaused = true;
    this.envoy.pause();
  }

  private resumeEnvoy(): void {
    if (!this.envoyPaused) return;
    this.envoyPaused = false;
    this.envoy.resume();
  }
}

/** A call that never reached the EPP (refused, unreachable) is a connect failure; anything else a stream failure. */
export function classify(err: unknown, answered: boolean): FailureReason {
  const e = err as Partial<ServiceError> | undefined;
  if (!answered && e?.code === GrpcStatus.UNAVAILABLE && /No connection established|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/i.test(e.details ?? '')) {
    return 'connect';
  }
  return 'stream';
}

/** A failure's reason in words, for the client's error body and logs. */
export function describeFailure(err: unknown): string {
  if (err instanceof RouterError) return err.message;
  const e = err as Partial<ServiceError> | undefined;
  if (e && typeof e.code === 'number') {
    const name = GrpcStatus[e.code] ?? String(e.code);
    return `gRPC ${name}: ${e.details ?? e.message ?? ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
