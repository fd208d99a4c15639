/**
 * The failover plan of one request: which candidate comes next (the picker's
 * fallback order, bounded by maxAttempts), the failed attempts so far, and the
 * final answer once no attempt is left:
 * - an EPP that answered 503/429 last made a decision, and it stands whatever
 *   the failureMode (as with a gateway's failure_mode_allow, which opens only on
 *   errors): 503, or 429 so clients back off, keeping the EPP's retry-after;
 * - otherwise the primary pool's failureMode decides: FailOpen routes to a
 *   destination the router knows (fail-open.ts), FailClose, or FailOpen with
 *   nothing known, answers 503.
 * Error answers carry a JSON body giving the reason and every attempt in order.
 */
import type { Picked } from '../picker/types.js';
import { destinationHeadersResponse, parentHeadersResponse } from '../protocol/responses.js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';
import type { RelayContext } from './deps.js';
import { describeFailure, type EppCandidate } from './epp-attempt.js';
import { ErrorCode, RouterError, type AttemptSummary } from './errors.js';

export type FinalAnswer =
  /** Route the request: the request_headers response to send. */
  | { readonly t: 'fail-open'; readonly response: Buffer }
  | { readonly t: 'error'; readonly error: RouterError };

export class FailoverPlan {
  private readonly failures: AttemptSummary[] = [];
  /** The retry-after of the last failure, when it was the EPP's own 503/429 answer. */
  private lastRetryAfter: string | undefined;
  private nextFallback = 0;

  constructor(
    private readonly picked: Picked,
    private readonly ctx: Pick<RelayContext, 'maxAttempts' | 'failOpen' | 'random'>,
  ) {}

  /** Records a failed attempt; `retryAfter`: what the EPP's own 503/429 answer set, if that was the failure. */
  failed(c: EppCandidate, reason: FailureReason, err: unknown, retryAfter?: string): void {
    this.failures.push({
      cluster: c.cluster,
      pool: `${c.namespace}/${c.pool}`,
      reason,
      message: `EPP of pool ${c.id} at ${c.epp.address} is unavailable: ${describeFailure(err)}`,
    });
    this.lastRetryAfter = retryAfter;
  }

  /** The next candidate to try, or undefined when failover is over (`replayable`: the request can still be replayed). */
  next(replayable: boolean): Candidate | undefined {
    if (!replayable || this.failures.length >= this.ctx.maxAttempts) return undefined;
    const fallbacks = this.picked.fallbacks;
    return this.nextFallback < fallbacks.length ? fallbacks[this.nextFallback++] : undefined;
  }

  /** What the client gets once no attempt is left. */
  final(): FinalAnswer {
    const primary = this.picked.primary;
    const last = this.failures[this.failures.length - 1]?.reason;
    let note = '';
    if (last !== 'status-503' && last !== 'status-429' && primary.failureMode === 'FailOpen') {
      const choice = this.ctx.failOpen.choose(primary, this.ctx.random);
      if (choice !== undefined) {
        const response =
          choice.source === 'parent' ? parentHeadersResponse(choice.address) : destinationHeadersResponse('request_headers', choice.address);
        return { t: 'fail-open', response };
      }
      note = ' (failureMode FailOpen, but no endpoint of the pool is known: no parent, no recent EPP answer, no static endpoints)';
    }
    const n = this.failures.length;
    const message = `${n > 1 ? `all ${n} attempts failed: ` : ''}${this.failures.map((f) => f.message).join('; ')}${note}`;
    const attempts = this.failures;
    if (last === 'status-429') {
      const retryAfter = this.lastRetryAfter;
      const headers = retryAfter ? { headers: { 'retry-after': retryAfter } } : {};
      return { t: 'error', error: new RouterError(ErrorCode.EppOverloaded, message, { attempts, ...headers }) };
    }
    return { t: 'error', error: new RouterError(ErrorCode.EppUnavailable, message, { attempts }) };
  }
}
