/**
 * One attempt at relaying a stream to one candidate's EPP: opens the call,
 * writes the replayed messages and then Envoy's as they come, hands every EPP
 * message to its owner, and reports how the attempt ended (OK, or a failure
 * classified for the outlier detector: 'connect', 'stream', 'timeout').
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';
import type { EppCall, EppClient, EppRequestHeaders } from './epp-call.js';
import type { EnvoyLedger } from './envoy-ledger.js';
import { ErrorCode, RouterError } from './errors.js';
import type { DataPathObserver } from './observer.js';

export type EppCandidate = Extract<Candidate, { via: 'epp' }>;

/** What an attempt needs of Envoy's side: the headers its metadata gives the EPP call, and holding back its messages (each pause() this attempt makes, it resumes once). */
export interface EnvoyInput {
  forwardedHeaders(): EppRequestHeaders;
  pause(): void;
  resume(): void;
}

/** What an attempt asks the stream's ledger, the owner of what Envoy sent: whether Envoy half-closed. */
export type EnvoySent = Pick<EnvoyLedger, 'inputEnded'>;

export interface AttemptOwner {
  /**
   * A message of the EPP. Returns whether it answered something: one that did not (an
   * override_message_timeout) leaves the attempt's answer deadline running.
   */
  onEppMessage(attempt: EppAttempt, msg: Buffer): boolean;
  /** The EPP ended its stream with OK (after every message it sent was delivered). */
  onEppEnd(attempt: EppAttempt): void;
  onEppFailure(attempt: EppAttempt, reason: FailureReason, err: unknown): void;
}

export interface AttemptSettings {
  readonly pool: EppClient;
  readonly observer: DataPathObserver;
  /** The answer deadline and the read deadline (see EppAttempt.arm() and write()); 0 = none. */
  readonly attemptTimeoutMs: number;
  /** release(): how long a half-closed call is left to end on its own before it is cancelled (extProc.releaseGraceMs). */
  readonly releaseGraceMs: number;
}

type Timer = NodeJS.Timeout;

/** Waiting for the EPP's channel; Envoy's messages queue in `pending`. */
type Connecting = { readonly t: 'connecting'; readonly pending: Buffer[]; answerDeadline: Timer | undefined };
/** The call is open and the EPP has not answered yet; `backlog` is set while the call cannot take more. */
type Open = { readonly t: 'open'; readonly call: EppCall; answerDeadline: Timer | undefined; backlog: { readonly readDeadline: Timer | undefined } | undefined };
/** The EPP sent its first message: no deadline of this attempt applies any more. */
type Answered = { readonly t: 'answered'; readonly call: EppCall; backedUp: boolean };
/** Over without a report; the half-closed call is left for the EPP to end, and cancelled when `grace` fires. */
type Released = { readonly t: 'released'; readonly call: EppCall; readonly grace: Timer };
type Live = Connecting | Open | Answered;
type Phase = Live | Released | { readonly t: 'ended' };

/** Whether this attempt holds Envoy paused: while connecting, and while the open call is backed up. */
function holdsEnvoy(p: Live): boolean {
  return p.t === 'connecting' || (p.t === 'open' ? p.backlog !== undefined : p.backedUp);
}

const ENDED: Phase = { t: 'ended' };

export class EppAttempt {
  private phase: Phase;
  private readonly startedAt = performance.now();

  constructor(
    private readonly envoy: EnvoyInput,
    /** Envoy half-closed (`inputEnded`): the call is half-closed too once open. */
    private readonly sent: EnvoySent,
    readonly candidate: EppCandidate,
    private readonly settings: AttemptSettings,
    private readonly owner: AttemptOwner,
    replay: readonly Buffer[],
  ) {
    this.phase = { t: 'connecting', pending: replay.slice(), answerDeadline: undefined };
    envoy.pause();
    settings.pool.ready(candidate.epp).then(
      () => this.open(),
      (err: unknown) => this.failed('connect', err),
    );
  }

  /** Sends one of Envoy's messages (after the replayed ones). */
  forward(msg: Buffer): void {
    const p = this.phase;
    if (p.t === 'connecting') p.pending.push(msg);
    else if (p.t === 'open' || p.t === 'answered') this.write(p, msg);
  }

  /** Envoy half-closed (the ledger says so now): so does the EPP call, if open; a call opened later is half-closed when it opens. */
  endInput(): void {
    const p = this.phase;
    if (p.t === 'open' || p.t === 'answered') p.call.end();
  }

  /**
   * Starts the answer deadline: the EPP's first message must come within
   * attemptTimeoutMs. The owner arms it at once where EPPs answer the request
   * headers at once, and when the request body is complete in
   * FULL_DUPLEX_STREAMED (EPPs hold their answer until they read the body).
   * Idempotent; a no-op once the EPP answered.
   */
  arm(): void {
    const p = this.phase;
    const ms = this.settings.attemptTimeoutMs;
    if ((p.t !== 'connecting' && p.t !== 'open') || p.answerDeadline !== undefined || ms <= 0) return;
    p.answerDeadline = setTimeout(() => {
      this.failed('timeout', new RouterError(ErrorCode.EppUnavailable, `the EPP sent no answer within attemptTimeoutMs (${ms} ms)`));
    }, ms);
  }

  /** Envoy's side is backed up: stop reading the EPP. */
  pauseEpp(): void {
    const p = this.phase;
    if (p.t === 'open' || p.t === 'answered') p.call.pause();
  }

  resumeEpp(): void {
    const p = this.phase;
    if (p.t === 'open' || p.t === 'answered') p.call.resume();
  }

  /** Ends the attempt without a report (the stream closed, or the owner gave up on it): cancels the call. */
  dispose(): void {
    const call = this.end();
    call?.cancel();
  }

  /**
   * Ends the attempt without a report, like dispose(), except for a call that is
   * open and half-closed (Envoy half-closed, as the ledger says): Envoy resets
   * every stream right after its half-close, finished or not, and the EPP is
   * ending this call itself. It is read to its end (nothing more reaches the
   * owner) and cancelled only if the EPP has not ended it within
   * `releaseGraceMs`: an RST_STREAM per request would cost CPU and trip the
   * HTTP/2 rapid-reset limit of Node-based EPPs (1,000 per connection, then
   * GOAWAY).
   */
  release(): void {
    const p = this.phase;
    if ((p.t !== 'open' && p.t !== 'answered') || !this.sent.inputEnded) {
      this.dispose();
      return;
    }
    const call = this.end()!;
    call.resume(); // read to the end even if the owner had paused it
    const grace = setTimeout(() => {
      this.enter(ENDED);
      call.cancel();
    }, this.settings.releaseGraceMs);
    grace.unref();
    this.enter({ t: 'released', call, grace });
  }

  private open(): void {
    const p = this.phase;
    if (p.t !== 'connecting') return;
    let call: EppCall;
    try {
      call = this.settings.pool.call(this.candidate.epp, this.envoy.forwardedHeaders());
    } catch (err) {
      this.failed('connect', err);
      return;
    }
    // Listeners go on in the same tick: grpc-js may fail the call on the next one.
    call.on('data', this.onData);
    call.on('end', this.onEnd);
    call.on('error', this.onError);
    // Envoy stays held while the replay is written: a call failing meanwhile resumes it.
    const open: Open = { t: 'open', call, answerDeadline: p.answerDeadline, backlog: { readDeadline: undefined } };
    this.enter(open);
    let full = false;
    for (const msg of p.pending) full = !call.write(msg) || full;
    if (this.phase !== open) return;
    open.backlog = undefined;
    if (full) this.backUp(open, true);
    else this.envoy.resume();
    if (this.sent.inputEnded) call.end();
  }

  /**
   * Writes to the call, else holds Envoy until it drains. Before the EPP's
   * answer a read deadline runs while it does not: an EPP that stops reading
   * (hung, or partitioned after connect) keeps the request body from completing,
   * so the answer deadline may never be armed. Each drain restarts the clock.
   * After the answer the stream is committed: the relay's silence watch applies.
   */
  private write(p: Open | Answered, msg: Buffer): void {
    if (!p.call.write(msg)) this.backUp(p);
  }

  /** Holds Envoy (each hold is paused and resumed once) until the call drains. */
  private backUp(p: Open | Answered, envoyHeld = false): void {
    if (p.t === 'answered') {
      if (p.backedUp) return;
      p.backedUp = true;
    } else {
      if (p.backlog !== undefined) return;
      p.backlog = { readDeadline: this.startReadDeadline() };
    }
    if (!envoyHeld) this.envoy.pause();
    p.call.once('drain', this.onDrain);
  }

  private startReadDeadline(): Timer | undefined {
    const ms = this.settings.attemptTimeoutMs;
    if (ms <= 0) return undefined;
    return setTimeout(() => {
      this.failed('timeout', new RouterError(ErrorCode.EppUnavailable, `the EPP stopped reading the request before it answered: nothing read within attemptTimeoutMs (${ms} ms)`));
    }, ms);
  }

  private readonly onDrain = (): void => {
    const p = this.phase;
    if (p.t === 'open' && p.backlog !== undefined) {
      clearTimeout(p.backlog.readDeadline);
      p.backlog = undefined;
    } else if (p.t === 'answered' && p.backedUp) {
      p.backedUp = false;
    } else {
      return;
    }
    this.envoy.resume();
  };

  private readonly onData = (msg: Buffer): void => {
    const p = this.phase;
    if (p.t !== 'open' && p.t !== 'answered') return;
    const answered = this.owner.onEppMessage(this, msg);
    // Leaving 'open' stops its answer and read deadlines (enter()); a message that answered nothing leaves them running.
    if (p.t === 'open' && this.phase === p && answered) {
      this.enter({ t: 'answered', call: p.call, backedUp: p.backlog !== undefined });
      this.settings.observer.eppFirstResponse(this.candidate.cluster, (performance.now() - this.startedAt) / 1000);
    }
  };

  private readonly onEnd = (): void => {
    if (this.settled()) return;
    this.end();
    this.owner.onEppEnd(this);
  };

  private readonly onError = (err: ServiceError): void => {
    if (this.settled()) return;
    this.failed(classify(err, this.phase.t === 'answered'), err);
  };

  /** True when no report is due any more; a released call's end or failure just ends it. */
  private settled(): boolean {
    const p = this.phase;
    if (p.t === 'released') this.enter(ENDED);
    return this.phase.t === 'ended';
  }

  private failed(reason: FailureReason, err: unknown): void {
    if (this.phase.t === 'released' || this.phase.t === 'ended') return;
    this.end()?.cancel();
    this.owner.onEppFailure(this, reason, err);
  }

  /**
   * The one way the phase changes (after the constructor's first). A phase's
   * timers are its own: those of the phase left stop here, except the answer
   * deadline an opening call carries over from `connecting` to `open`.
   */
  private enter(next: Phase): void {
    const p = this.phase;
    this.phase = next;
    if (p.t === 'open') {
      clearTimeout(p.answerDeadline);
      clearTimeout(p.backlog?.readDeadline);
    } else if (p.t === 'connecting' && next.t !== 'open') clearTimeout(p.answerDeadline);
    else if (p.t === 'released') clearTimeout(p.grace);
  }

  /**
   * Leaves a live phase for `ended` (its deadlines stop), resumes Envoy if this
   * attempt held it (the next attempt or the router's own answers start from a
   * flowing stream). Returns the call, if one was open; undefined when already over.
   */
  private end(): EppCall | undefined {
    const p = this.phase;
    if (p.t === 'released' || p.t === 'ended') return undefined;
    this.enter(ENDED);
    if (holdsEnvoy(p)) this.envoy.resume();
    this.settings.observer.eppStreamFinished(this.candidate.cluster, (performance.now() - this.startedAt) / 1000);
    return p.t === 'connecting' ? undefined : p.call;
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
