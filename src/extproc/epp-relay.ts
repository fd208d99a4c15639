/**
 * Relays one ext_proc stream between Envoy and a pool's EPP, with failover
 * across the picked candidates until an EPP answer commits the stream; after
 * the commit a failing EPP is finished for by the router. The rules are in
 * docs/data-path.md.
 */
import type { Picked } from '../picker/types.js';
import type { GuardFinding } from '../protocol/answer-guard.js';
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import { readEppAnswer, type RelayableAnswer } from '../protocol/epp-answer.js';
import { parentHeadersResponse } from '../protocol/responses.js';
import type { FailureReason } from '../signals/types.js';
import type { RelayContext } from './deps.js';
import { describeFailure, EppAttempt, type AttemptOwner, type EppCandidate } from './epp-attempt.js';
import type { EnvoyWriter, Flow } from './envoy-writer.js';
import { ErrorCode, RouterError } from './errors.js';
import { FailoverPlan } from './failover-plan.js';
import type { HeldBound } from './held-bytes.js';
import type { StreamOutcome } from './observer.js';
import type { EnvoySide, Processor } from './processor.js';
import { ReplayLog } from './replay-log.js';
import { RouterAnswers } from './router-answers.js';
import { SilenceWatch } from './silence-watch.js';

export type { RelayContext } from './deps.js';
export type { EppCandidate } from './epp-attempt.js';

type Attempting = { readonly t: 'attempting'; readonly attempt: EppAttempt; replay: ReplayLog | undefined };
type Committed = { readonly t: 'committed'; readonly attempt: EppAttempt; readonly silence: SilenceWatch };
type RelayPhase =
  /** An EPP is being tried; Envoy's messages are kept for a replay while they fit. */
  | Attempting
  /** An answer of this EPP reached Envoy: the stream stays with it. */
  | Committed
  /** The router answers everything from here on. */
  | { readonly t: 'router'; readonly answers: RouterAnswers }
  | { readonly t: 'done' };

const DONE: RelayPhase = { t: 'done' };

export class EppRelay implements Processor, AttemptOwner {
  private phase: RelayPhase;
  private readonly writer: EnvoyWriter;
  private readonly plan: FailoverPlan;

  constructor(
    private readonly envoy: EnvoySide,
    private readonly picked: Picked,
    private readonly ctx: RelayContext,
  ) {
    this.writer = envoy.writer;
    this.plan = new FailoverPlan(picked, ctx);
    const replay = ctx.maxAttempts > 1 && ctx.replayBufferBytes > 0 ? new ReplayLog(ctx.replayBufferBytes) : undefined;
    this.phase = { t: 'attempting', attempt: this.attemptOn(picked.primary as EppCandidate, []), replay };
  }

  // ---- Envoy -> EPP ----------------------------------------------------------------

  message(m: EnvoyMessage, over: HeldBound | undefined): void {
    const p = this.phase;
    if (p.t === 'router') return p.answers.message(m, over);
    if (p.t === 'done') return;
    if (over !== undefined) {
      // Shed this request rather than grow the heap: the stream's close disposes this relay.
      this.envoy.fail(new RouterError(ErrorCode.OverCapacity, this.ctx.held.describe(over)));
      return;
    }
    if (p.t === 'attempting' && p.replay !== undefined && !p.replay.add(m.raw)) p.replay = undefined;
    p.attempt.forward(m.raw);
    if (this.writer.waits.requestComplete) p.attempt.arm();
    if (p.t === 'committed') p.silence.watch();
  }

  endOfInput(): void {
    const p = this.phase;
    if (p.t === 'router') p.answers.endOfInput();
    else if (p.t !== 'done') {
      p.attempt.endInput();
      this.endIfAnswered();
    }
  }

  /**
   * Envoy resets every stream right after its half-close, finished or not. When
   * Envoy half-closed and the EPP answered everything, the EPP is ending its call
   * itself: it is released (no RST_STREAM). Otherwise it is cancelled.
   */
  dispose(): void {
    const p = this.leave(DONE);
    if (p.t !== 'attempting' && p.t !== 'committed') return;
    const waits = this.writer.waits;
    if (waits.inputEnded && (waits.immediate || !waits.pendingWork)) p.attempt.release();
    else p.attempt.dispose();
  }

  // ---- EPP -> Envoy ----------------------------------------------------------------

  onEppMessage(a: EppAttempt, msg: Buffer): boolean {
    const p = this.phase;
    if ((p.t !== 'attempting' && p.t !== 'committed') || p.attempt !== a) return true;
    const c = a.candidate;
    const answer = readEppAnswer(msg, this.ctx.answerRules.of(c.cluster), this.ctx.destinationHeader);
    switch (answer.t) {
      case 'malformed':
        this.dropEpp(a, 'stream', new RouterError(ErrorCode.EppStream, 'malformed message from the EPP', { cause: answer.cause }));
        return true;
      case 'spurious':
        this.refuse(a, { reason: 'spurious_answer', detail: 'a ProcessingResponse that answers nothing' });
        return true;
      case 'refused':
        this.refuse(a, answer.refusal);
        return true;
      case 'answer':
        break;
    }
    const misfit = this.writer.waits.misfit(answer);
    if (misfit !== undefined) {
      this.refuse(a, { reason: 'spurious_answer', detail: misfit });
      return true;
    }
    for (const d of answer.dropped) this.ctx.guardReport.report(c.cluster, c.id, d, false);
    if (p.t === 'committed') {
      p.silence.heard();
      this.writer.relay(answer);
    } else this.firstAnswer(p, answer);
    this.endIfAnswered();
    return answer.case !== 'override_message_timeout';
  }

  onEppEnd(a: EppAttempt): void {
    const p = this.phase;
    if ((p.t !== 'attempting' && p.t !== 'committed') || p.attempt !== a) return;
    if (p.t === 'attempting') {
      this.failedBeforeCommit(p, 'stream', new RouterError(ErrorCode.EppUnavailable, 'the EPP ended its stream without answering'));
      return;
    }
    const waits = this.writer.waits;
    if (waits.immediate || waits.settled) return this.end('relayed'); // nothing is waiting: end OK, as the EPP did
    if (!waits.pendingWork) return this.routerTakesOver(undefined); // done with what it was sent; the stream goes on
    this.ctx.outcomes.reportFailure(a.candidate.id, 'stream');
    this.finishForEpp();
  }

  onEppFailure(a: EppAttempt, reason: FailureReason, err: unknown): void {
    const p = this.phase;
    if ((p.t !== 'attempting' && p.t !== 'committed') || p.attempt !== a) return;
    if (p.t === 'attempting') return this.failedBeforeCommit(p, reason, err);
    this.ctx.outcomes.reportFailure(a.candidate.id, reason);
    this.envoy.trace?.attemptEnded(reason, describeFailure(err));
    if (this.writer.waits.immediate) this.end('epp_immediate');
    else this.finishForEpp();
  }

  /** The first answer of an attempt: commits the stream to this EPP, unless it answers nothing or is a 503/429. */
  private firstAnswer(p: Attempting, answer: RelayableAnswer): void {
    const a = p.attempt;
    const c = a.candidate;
    switch (answer.case) {
      case 'override_message_timeout':
        this.writer.relay(answer); // Envoy acts on it, but it answers nothing: no commit
        return;
      case 'immediate_response':
        if (answer.status === 503 || answer.status === 429) {
          a.dispose();
          const err = new RouterError(ErrorCode.EppUnavailable, `the EPP answered ${answer.status}`);
          this.failedBeforeCommit(p, answer.status === 429 ? 'status-429' : 'status-503', err, answer.retryAfter);
          return;
        }
        this.envoy.decided('epp_immediate');
        break;
      case 'request_headers':
        if (c.failureMode === 'FailOpen') this.ctx.failOpen.remember(c.id, answer.destination);
        this.envoy.decided('relayed');
        break;
      default:
        break;
    }
    this.envoy.trace?.attemptEnded('answered');
    this.ctx.outcomes.reportSuccess(c.id);
    const silence = new SilenceWatch(
      this.ctx.eppStallTimeoutMs,
      () => this.writer.waits.pendingWork,
      () => this.writer.isBackedUp,
      (ms) => this.dropEpp(a, 'timeout', new RouterError(ErrorCode.EppUnavailable, `the EPP sent nothing for eppStallTimeoutMs (${ms} ms) while Envoy waited on it`)),
    );
    this.leave({ t: 'committed', attempt: a, silence });
    this.writer.produceFrom(eppFlow(a, silence));
    this.writer.relay(answer);
    silence.watch();
  }

  // ---- failures ----------------------------------------------------------------------

  /**
   * An answer Envoy must not get (the member's rules refuse it, or it answers
   * nothing Envoy waits for): counted and warned, and the EPP is dropped like a
   * failing one (failover before the commit, the router finishes after it).
   */
  private refuse(a: EppAttempt, finding: GuardFinding): void {
    const c = a.candidate;
    this.ctx.guardReport.report(c.cluster, c.id, finding, true);
    this.dropEpp(a, 'refused', new RouterError(ErrorCode.EppStream, `answer refused: ${finding.detail}`));
  }

  /** Gives up on an EPP the router found at fault: cancels its call and handles it as its failure. */
  private dropEpp(a: EppAttempt, reason: FailureReason, err: RouterError): void {
    a.dispose();
    this.onEppFailure(a, reason, err);
  }

  private failedBeforeCommit(p: Attempting, reason: FailureReason, err: unknown, retryAfter?: string): void {
    const c = p.attempt.candidate;
    this.ctx.outcomes.reportFailure(c.id, reason);
    this.envoy.trace?.attemptEnded(reason, describeFailure(err));
    this.plan.failed(c, reason, err, retryAfter);
    const next = this.plan.next(p.replay !== undefined);
    if (next === undefined) return this.allFailed();
    this.ctx.observer.failover(c.cluster, next.cluster, reason);
    this.ctx.observer.pickedFor('failover');
    this.envoy.trace?.failover(c, next, reason);
    this.envoy.routed(next);
    if (next.via === 'parent') {
      this.envoy.decided('parent');
      this.routerTakesOver(parentHeadersResponse(next.parent.address));
      return;
    }
    this.leave({ t: 'attempting', attempt: this.attemptOn(next, p.replay!.messages), replay: p.replay });
  }

  /** No attempt is left: fail open, or answer the error (failover-plan.ts). */
  private allFailed(): void {
    const answer = this.plan.final();
    if (answer.t === 'error') {
      this.leave(DONE);
      this.envoy.fail(answer.error);
      return;
    }
    this.ctx.observer.pickedFor('fail-open');
    this.envoy.trace?.failOpen(this.picked.primary);
    this.envoy.routed(this.picked.primary);
    this.envoy.decided('fail_open');
    this.routerTakesOver(answer.response);
  }

  /** The committed EPP failed, or ended leaving work: the router finishes the stream. */
  private finishForEpp(): void {
    if (this.writer.waits.awaitingRequestHeaders) {
      // Committed by something other than its headers answer: no destination to finish with.
      this.leave(DONE);
      this.envoy.fail(new RouterError(ErrorCode.EppUnavailable, 'the EPP failed before answering the request headers'));
      return;
    }
    this.envoy.decided('finished_by_router', true);
    this.routerTakesOver(undefined);
  }

  /** The router answers in the EPP's place from here on; `requestHeaders` answers pending request headers. */
  private routerTakesOver(requestHeaders: Buffer | undefined): void {
    const answers = new RouterAnswers(this.envoy, 'passthrough');
    this.leave({ t: 'router', answers });
    this.writer.answerPending(requestHeaders);
    if (this.writer.waits.inputEnded) answers.endOfInput();
  }

  /**
   * Envoy half-closed and everything it sent is answered (or an immediate
   * response ended processing): nothing more can be asked, so the stream ends
   * with OK now rather than when the EPP ends its call. A client that reads
   * until the stream ends (NGINX Gateway Fabric) is not left waiting on an EPP
   * that keeps its call open; the EPP's half-closed call is released.
   */
  private endIfAnswered(): void {
    const p = this.phase;
    const waits = this.writer.waits;
    if (p.t !== 'committed' || !waits.inputEnded || !(waits.immediate || !waits.pendingWork)) return;
    this.leave(DONE);
    p.attempt.release();
    this.envoy.finish('relayed');
  }

  private end(outcome: StreamOutcome): void {
    this.leave(DONE);
    this.envoy.finish(outcome);
  }

  /** The one way the phase changes: the committed phase's silence watch does not outlive it. Returns the phase left. */
  private leave(next: RelayPhase): RelayPhase {
    const p = this.phase;
    if (p.t === 'committed') p.silence.stop();
    this.phase = next;
    return p;
  }

  private attemptOn(candidate: EppCandidate, replay: readonly Buffer[]): EppAttempt {
    this.envoy.attemptStarted?.(candidate);
    const waits = this.writer.waits;
    const a = new EppAttempt(this.envoy, waits, candidate, this.ctx, this, replay);
    // FULL_DUPLEX_STREAMED: EPPs answer once the body is complete; other modes answer at once.
    if (!waits.requestDuplex || waits.requestComplete) a.arm();
    return a;
  }
}

/** The committed EPP as the writer's producer: not read while Envoy's side is backed up. */
function eppFlow(a: EppAttempt, silence: SilenceWatch): Flow {
  return {
    pause: () => a.pauseEpp(),
    resume: () => {
      silence.heard(); // time spent not reading the EPP is not its silence
      a.resumeEpp();
    },
  };
}
