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
import { decodeResponse } from '../protocol/codec.js';
import { destinationHeadersResponse } from '../protocol/responses.js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';
import type { RelayContext } from './deps.js';
import { describeFailure, type EppCandidate } from './epp-attempt.js';
import { ErrorCode, RouterError, type AttemptSummary } from './errors.js';
import { PARENT_KIND_HEADERS } from './responder.js';

export type FinalAnswer =
  /** Route the request: the request_headers response to send. */
  | { readonly t: 'fail-open'; readonly response: Buffer }
  | { readonly t: 'error'; readonly error: RouterError };

export class FailoverPlan {
  private readonly failures: AttemptSummary[] = [];
  /** The last EPP immediate 503/429, as the EPP sent it. */
  private lastRejection: Buffer | undefined;
  private nextFallback = 0;

  constructor(
    private readonly picked: Picked,
    private readonly ctx: Pick<RelayContext, 'maxAttempts' | 'failOpen' | 'random'>,
  ) {}

  /** Records a failed attempt; `rejection` is the EPP's own 503/429 answer, if that was the failure. */
  failed(c: EppCandidate, reason: FailureReason, err: unknown, rejection?: Buffer): void {
    this.failures.push({
      cluster: c.cluster,
      pool: `${c.namespace}/${c.pool}`,
      reason,
      message: `EPP of pool ${c.id} at ${c.epp.address} is unavailable: ${describeFailure(err)}`,
    });
    if (rejection !== undefined) this.lastRejection = rejection;
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
        const extra = choice.source === 'parent' ? { extraHeaders: PARENT_KIND_HEADERS } : {};
        return { t: 'fail-open', response: destinationHeadersResponse('request_headers', choice.address, extra) };
      }
      note = ' (failureMode FailOpen, but no endpoint of the pool is known: no parent, no recent EPP answer, no static endpoints)';
    }
    const n = this.failures.length;
    const message = `${n > 1 ? `all ${n} attempts failed: ` : ''}${this.failures.map((f) => f.message).join('; ')}${note}`;
    const attempts = this.failures;
    if (last === 'status-429') {
      const retryAfter = this.lastRejection && retryAfterOf(this.lastRejection);
      const headers = retryAfter ? { headers: { 'retry-after': retryAfter } } : {};
      return { t: 'error', error: new RouterError(ErrorCode.EppOverloaded, message, { attempts, ...headers }) };
    }
    return { t: 'error', error: new RouterError(ErrorCode.EppUnavailable, message, { attempts }) };
  }
}

/** The HTTP status of an encoded immediate_response. */
export function immediateStatus(msg: Buffer): number | undefined {
  return decodeResponse(msg).immediate_response?.status?.code;
}

/** The retry-after header an encoded immediate_response sets, if any. */
export function retryAfterOf(msg: Buffer): string | undefined {
  const set = decodeResponse(msg).immediate_response?.headers?.set_headers ?? [];
  for (const o of set) {
    const h = o.header;
    if (h && h.key.toLowerCase() === 'retry-after') return h.raw_value.length > 0 ? h.raw_value.toString('utf8') : h.value;
  }
  return undefined;
}
