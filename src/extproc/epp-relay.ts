/**
 * Relays one ext_proc stream between Envoy and a pool's EPP, byte for byte,
 * with failover across the picked candidates.
 *
 * Every EPP message goes to Envoy unchanged, except a request_headers response
 * whose destination header is a list (rewritten per `destinationHeader`). The
 * first EPP answer that reaches Envoy (request headers, or an immediate
 * response other than 503/429) commits the stream to that EPP; a message that
 * answers nothing but that Envoy acts on (override_message_timeout) is relayed
 * without commit. An EPP message Envoy would take as spurious (empty, or only
 * dynamic_metadata, mode_override or request_drain) or that cannot be parsed is
 * never relayed: it is a failure of the EPP, like its stream failing. So is an
 * answer the member's rules refuse (protocol/answer-guard.ts: a destination
 * outside its CIDRs or not ip:port); header mutations and metadata the rules do
 * not allow are dropped from the answer. Plain body echoes are not inspected.
 *
 * Before the commit, an attempt fails when the EPP cannot be reached, its
 * stream fails or ends without an answer, it answers 503/429, or it does not
 * answer within attemptTimeoutMs (see epp-attempt.ts for when that counts
 * from): the next candidate in the picker's order is tried with Envoy's
 * request messages replayed (an EPP), or the router answers with its parent
 * (a 'parent' candidate). No failover once the replay buffer overflowed or
 * maxAttempts is reached. When every attempt failed, the primary's failureMode
 * decides (see allFailed()).
 *
 * After the commit the stream never moves to another pool. If the EPP fails
 * (or ends leaving work), the router answers everything Envoy still waits for
 * (exchange.ts: the rest of a FULL_DUPLEX_STREAMED echo from its own copy of
 * the body, CONTINUE for pending messages) and answers the rest of the stream
 * itself (pass-through ModeResponder), so a request already being served is
 * never failed or truncated. An EPP that wedges instead (stream open, nothing
 * sent while Envoy waits on it) is failed the same way after eppStallTimeoutMs
 * (Envoy applies no message timeout in FULL_DUPLEX_STREAMED, so nothing else
 * would end the wait).
 */
import type { Picked } from '../picker/types.js';
import { peekResponse, type ProtocolConfiguration, type RequestPhase, type ResponsePeek } from '../protocol/codec.js';
import { guardAnswer, type GuardResult } from '../protocol/answer-guard.js';
import { destinationHeadersResponse, rewriteDestination } from '../protocol/responses.js';
import { scanFields } from '../protocol/wire.js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';
import type { RelayContext } from './deps.js';
import { EppAttempt, type AttemptOwner, type EppCandidate } from './epp-attempt.js';
import { ErrorCode, RouterError } from './errors.js';
import { Exchange } from './exchange.js';
import { FailoverPlan, immediateStatus } from './failover-plan.js';
import { dispatchPhase, type EnvoySide, type Processor } from './processor.js';
import { ReplayLog } from './replay-log.js';
import { ModeResponder, PARENT_KIND_HEADERS } from './responder.js';

export type { RelayContext } from './deps.js';
export type { EppCandidate } from './epp-attempt.js';

export class EppRelay implements Processor, AttemptOwner {
  private readonly exchange: Exchange;
  private replay: ReplayLog | undefined;
  private attempt: EppAttempt | undefined;
  /** Once the router took the stream over: answers everything that follows. */
  private responder: Processor | undefined;
  private readonly plan: FailoverPlan;
  private committed = false;
  private envoyEnded = false;
  private done = false;
  private eppPaused = false;
  private envoyPaused = false;
  /** Stall watch after the commit: when the EPP last sent something (or began to owe Envoy something). */
  private progressAt = 0;
  private stallTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly envoy: EnvoySide,
    private readonly picked: Picked,
    private readonly protocol: ProtocolConfiguration | null,
    private readonly ctx: RelayContext,
  ) {
    this.exchange = new Exchange(protocol, ctx.held);
    this.plan = new FailoverPlan(picked, ctx);
    if (ctx.maxAttempts > 1 && ctx.replayBufferBytes > 0) this.replay = new ReplayLog(ctx.replayBufferBytes);
    this.start(picked.primary as EppCandidate, []);
  }

  requestHeaders(msg: Buffer, endOfStream: boolean): void {
    this.fromEnvoy('request_headers', msg, endOfStream);
  }
  requestBody(msg: Buffer, endOfStream: boolean): void {
    this.fromEnvoy('request_body', msg, endOfStream);
  }
  requestTrailers(msg: Buffer): void {
    this.fromEnvoy('request_trailers', msg, true);
  }
  responseHeaders(msg: Buffer, endOfStream: boolean): void {
    this.fromEnvoy('response_headers', msg, endOfStream);
  }
  responseBody(msg: Buffer, endOfStream: boolean): void {
    this.fromEnvoy('response_body', msg, endOfStream);
  }
  responseTrailers(msg: Buffer): void {
    this.fromEnvoy('response_trailers', msg, true);
  }

  endOfInput(): void {
    this.envoyEnded = true;
    if (this.done) return;
    if (this.responder) this.responder.endOfInput();
    else this.attempt?.endInput();
  }

  /**
   * Envoy ends every stream with a half-close immediately followed by a reset,
   * finished or not, so the stream is disposed on that reset. If Envoy
   * half-closed first and the EPP had answered everything (or ended processing
   * with an immediate response), the EPP call was half-closed too and the EPP
   * is ending it: it is released (left to end, cancelled only after a grace
   * period). Otherwise (a reset before the half-close, or work still pending:
   * the client really went away) the call is cancelled at once.
   */
  dispose(): void {
    if (this.done) return;
    this.done = true;
    this.replay = undefined;
    this.exchange.releaseHeld();
    this.stopStallWatch();
    const a = this.attempt;
    if (a !== undefined) {
      if (this.envoyEnded && (this.exchange.immediate || !this.exchange.pendingWork)) a.release();
      else a.dispose();
    }
    this.responder?.dispose();
  }

  // ---- Envoy -> EPP ----------------------------------------------------------------

  private fromEnvoy(phase: RequestPhase, msg: Buffer, endOfStream: boolean): void {
    if (this.done) return;
    if (this.responder) return dispatchPhase(this.responder, phase, msg, endOfStream);
    const over = this.exchange.fromEnvoy(phase, msg, endOfStream);
    if (over !== undefined) {
      // Shed this request rather than grow the heap: the stream's close disposes this relay (EPP call, bytes).
      this.envoy.fail(new RouterError(ErrorCode.OverCapacity, this.ctx.held.describe(over)));
      return;
    }
    if (this.replay && !this.replay.add(msg)) this.replay = undefined; // past the bound: no failover
    const a = this.attempt;
    if (a === undefined) return;
    a.forward(msg);
    if (this.exchange.requestComplete) a.arm();
    if (this.committed) this.watchStall();
  }

  private start(candidate: EppCandidate, replay: readonly Buffer[]): void {
    this.eppPaused = false;
    const a = new EppAttempt(this.envoy, candidate, this.ctx, this, replay);
    this.attempt = a;
    if (this.envoyEnded) a.endInput();
    // FULL_DUPLEX_STREAMED: EPPs answer once the body is complete; other modes answer at once.
    if (!this.exchange.requestDuplex || this.exchange.requestComplete) a.arm();
  }

  // ---- EPP -> Envoy ----------------------------------------------------------------

  onEppMessage(a: EppAttempt, msg: Buffer): void {
    if (a !== this.attempt || this.done) return;
    let peek: ResponsePeek;
    let status: number | undefined;
    let control = false;
    let guarded: GuardResult | undefined;
    try {
      // Everything read from the EPP's bytes is read here: nothing may throw out of the call's event.
      peek = peekResponse(msg);
      if (peek.guard) guarded = guardAnswer(msg, this.ctx.answerRules.of(a.candidate.cluster));
      if (peek.case === 'immediate_response' && !this.committed) status = immediateStatus(msg);
      else if (peek.case === 'none') control = isTimeoutOverride(msg);
    } catch (err) {
      a.dispose();
      this.onEppFailure(a, 'stream', new RouterError(ErrorCode.EppStream, 'malformed message from the EPP', { cause: err }));
      return;
    }
    if (peek.case === 'none' && !control) {
      // Empty, or only dynamic_metadata / mode_override / request_drain: Envoy would take it as spurious (500).
      a.dispose();
      this.onEppFailure(a, 'stream', new RouterError(ErrorCode.EppStream, 'the EPP sent a ProcessingResponse that answers nothing'));
      return;
    }
    let out = msg;
    if (guarded !== undefined) {
      const c = a.candidate;
      if (!guarded.ok) {
        this.ctx.guardReport.report(c.cluster, c.id, guarded.refusal, true);
        a.dispose();
        this.onEppFailure(a, 'refused', new RouterError(ErrorCode.EppStream, `answer refused: ${guarded.refusal.detail}`));
        return;
      }
      for (const d of guarded.dropped) this.ctx.guardReport.report(c.cluster, c.id, d, false);
      out = guarded.msg;
    }
    if (this.committed) {
      if (this.stallTimer !== undefined) this.progressAt = performance.now();
      this.exchange.fromProcessor(peek, out);
      this.relay(out);
      return;
    }
    if (peek.case === 'none') {
      this.relay(out); // answers nothing: no commit
      return;
    }
    const c = a.candidate;
    if (peek.case === 'immediate_response') {
      if (status === 503 || status === 429) {
        a.dispose();
        const err = new RouterError(ErrorCode.EppUnavailable, `the EPP answered ${status}`);
        this.failedBeforeCommit(a, status === 429 ? 'status-429' : 'status-503', err, out);
        return;
      }
      this.envoy.decided('epp_immediate');
    } else if (peek.case === 'request_headers') {
      if (this.ctx.destinationHeader === 'primary') {
        try {
          out = rewriteDestination(out, 'primary');
        } catch (err) {
          a.dispose();
          this.onEppFailure(a, 'stream', new RouterError(ErrorCode.EppStream, 'malformed request_headers response from the EPP', { cause: err }));
          return;
        }
      }
      // Only a validated destination (the guard ran: a headers answer) is remembered.
      if (c.failureMode === 'FailOpen') this.ctx.failOpen.remember(c.id, guarded?.ok ? guarded.destination : undefined);
      this.envoy.decided('relayed');
    }
    this.ctx.outcomes.reportSuccess(c.id);
    this.committed = true;
    this.replay = undefined;
    this.exchange.fromProcessor(peek, out);
    this.relay(out);
    this.watchStall();
  }

  onEppEnd(a: EppAttempt): void {
    if (a !== this.attempt || this.done) return;
    if (!this.committed) {
      this.failedBeforeCommit(a, 'stream', new RouterError(ErrorCode.EppUnavailable, 'the EPP ended its stream without answering'));
      return;
    }
    if (this.exchange.immediate || this.exchange.settled) {
      // Nothing is waiting: end with OK, as the EPP did (Envoy continues without a processor).
      this.done = true;
      this.envoy.finish('relayed');
      return;
    }
    if (!this.exchange.pendingWork) {
      // Done with what it was sent, but the stream goes on (Envoy may have more in flight): answer the rest.
      this.attempt = undefined;
      this.takeOver(undefined);
      return;
    }
    this.ctx.outcomes.reportFailure(a.candidate.id, 'stream');
    this.finishForEpp();
  }

  onEppFailure(a: EppAttempt, reason: FailureReason, err: unknown): void {
    if (a !== this.attempt || this.done) return;
    if (!this.committed) {
      this.failedBeforeCommit(a, reason, err);
      return;
    }
    this.ctx.outcomes.reportFailure(a.candidate.id, reason);
    if (this.exchange.immediate) {
      this.done = true;
      this.envoy.finish('epp_immediate');
      return;
    }
    this.finishForEpp();
  }

  private relay(out: Buffer): void {
    if (this.envoy.send(out) || this.eppPaused) return;
    // Envoy is not keeping up: stop reading the EPP until Envoy's side drains.
    const a = this.attempt!;
    this.eppPaused = true;
    a.pauseEpp();
    this.envoy.onDrain(() => {
      if (this.attempt !== a) return;
      this.eppPaused = false;
      // Time spent not reading the EPP because Envoy was slow is not the EPP's.
      this.progressAt = performance.now();
      a.resumeEpp();
    });
  }

  // ---- stall watch (after the commit) --------------------------------------------------

  /**
   * Starts watching the committed EPP if it owes Envoy something (an answer, or
   * body bytes to echo) and no watch runs. One timer per stream at a time, re-armed
   * for the remainder when the EPP made progress meanwhile: nothing per message
   * but a clock read while a watch runs.
   */
  private watchStall(): void {
    const limit = this.ctx.eppStallTimeoutMs;
    if (this.stallTimer !== undefined || limit <= 0 || this.done || !this.exchange.pendingWork) return;
    this.progressAt = performance.now();
    this.stallTimer = setTimeout(this.checkStall, limit);
  }

  private readonly checkStall = (): void => {
    this.stallTimer = undefined;
    const a = this.attempt;
    if (this.done || a === undefined || this.responder !== undefined || !this.exchange.pendingWork) return;
    const limit = this.ctx.eppStallTimeoutMs;
    const now = performance.now();
    if (this.eppPaused) this.progressAt = now; // Envoy is the slow side: not the EPP's stall
    const idle = now - this.progressAt;
    if (idle < limit) {
      this.stallTimer = setTimeout(this.checkStall, limit - idle);
      return;
    }
    a.dispose();
    this.onEppFailure(a, 'timeout', new RouterError(ErrorCode.EppUnavailable, `the EPP sent nothing for eppStallTimeoutMs (${limit} ms) while Envoy waited on it`));
  };

  private stopStallWatch(): void {
    if (this.stallTimer === undefined) return;
    clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  // ---- failures ----------------------------------------------------------------------

  private failedBeforeCommit(a: EppAttempt, reason: FailureReason, err: unknown, rejection?: Buffer): void {
    const c = a.candidate;
    this.attempt = undefined;
    this.ctx.outcomes.reportFailure(c.id, reason);
    this.plan.failed(c, reason, err, rejection);
    const next = this.plan.next(this.replay !== undefined);
    if (next === undefined) {
      this.allFailed();
      return;
    }
    this.ctx.observer.failover(c.cluster, next.cluster, reason);
    this.ctx.observer.pickedFor('failover');
    this.envoy.routed(next);
    if (next.via === 'parent') {
      this.envoy.decided('parent');
      this.takeOver(destinationHeadersResponse('request_headers', next.parent.address, { extraHeaders: PARENT_KIND_HEADERS }));
      return;
    }
    this.start(next, this.replay!.messages);
  }

  /** No attempt is left: fail open, or answer the error (failover-plan.ts). */
  private allFailed(): void {
    const answer = this.plan.final();
    if (answer.t === 'fail-open') {
      this.ctx.observer.pickedFor('fail-open');
      this.envoy.routed(this.picked.primary);
      this.envoy.decided('fail_open');
      this.takeOver(answer.response);
      return;
    }
    this.done = true;
    this.replay = undefined;
    this.envoy.fail(answer.error);
  }

  /** The committed EPP failed (or ended leaving work): the router finishes the stream. */
  private finishForEpp(): void {
    this.attempt = undefined;
    if (this.exchange.awaitingRequestHeaders) {
      // Committed by something other than its headers answer: no destination to finish with.
      this.done = true;
      this.envoy.fail(new RouterError(ErrorCode.EppUnavailable, 'the EPP failed before answering the request headers'));
      return;
    }
    this.envoy.decided('finished_by_router', true);
    this.takeOver(undefined);
  }

  /**
   * The router answers in the EPP's place from here on: first everything Envoy
   * waits for (`requestHeaders` answers pending request headers), then every
   * later message, per mode.
   */
  private takeOver(requestHeaders: Buffer | undefined): void {
    this.committed = true;
    this.replay = undefined;
    this.stopStallWatch();
    for (const m of this.exchange.takeOver(requestHeaders)) this.sendOwn(m);
    this.responder = new ModeResponder(this.envoy, this.protocol);
    if (this.envoyEnded) this.responder.endOfInput();
  }

  private sendOwn(msg: Buffer): void {
    if (this.envoy.send(msg) || this.envoyPaused) return;
    this.envoyPaused = true;
    this.envoy.pause();
    this.envoy.onDrain(() => {
      this.envoyPaused = false;
      this.envoy.resume();
    });
  }
}

/** ProcessingResponse.override_message_timeout. */
const OVERRIDE_MESSAGE_TIMEOUT = 10;

/**
 * A message without a response member is one Envoy acts on only when it carries
 * override_message_timeout; any other (empty, only dynamic_metadata, mode_override
 * or request_drain) Envoy takes as spurious and answers the client 500.
 */
function isTimeoutOverride(msg: Buffer): boolean {
  return scanFields(msg).some((f) => f.no === OVERRIDE_MESSAGE_TIMEOUT);
}
