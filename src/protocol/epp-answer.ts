/**
 * One EPP ProcessingResponse, read once: what it answers, the bytes to relay
 * (held to the member's rules, answer-guard.ts, and with a destination list
 * rewritten per `destinationHeader`), and what the relay's bookkeeping needs.
 */
import { guardAnswer, type AnswerRules, type GuardFinding } from './answer-guard.js';
import { decodeResponse, peekResponse, type ResponseCase } from './codec.js';
import { rewriteDestination, type DestinationHeaderMode } from './responses.js';
import { lastPathLength, scanFields } from './wire.js';

/** What an answer answers: a response member, or only override_message_timeout (answers nothing, Envoy acts on it). */
export type AnswerCase = Exclude<ResponseCase, 'none'> | 'override_message_timeout';

export interface RelayableAnswer {
  readonly t: 'answer';
  readonly case: AnswerCase;
  /** The bytes to relay: the EPP's own, or a copy without what the rules drop, with the destination rewritten. */
  readonly msg: Buffer;
  /** A body answer whose body_mutation is a streamed_response. */
  readonly streamed: boolean;
  /** That streamed_response's end_of_stream. */
  readonly endOfStream: boolean;
  /** That streamed_response's body length (0 when not streamed). */
  readonly echoedBytes: number;
  /** immediate_response: its HTTP status. */
  readonly status: number | undefined;
  /** immediate_response: the retry-after header it sets (as relayed), if any. */
  readonly retryAfter: string | undefined;
  /** A headers answer: the destination it sets (validated, as the EPP sent it, before any list rewrite). */
  readonly destination: string | undefined;
  /** What the rules dropped from the answer. */
  readonly dropped: readonly GuardFinding[];
}

export type EppAnswer =
  | RelayableAnswer
  /** Not a valid ProcessingResponse. */
  | { readonly t: 'malformed'; readonly cause: unknown }
  /** Answers nothing and carries no override_message_timeout (empty, or only dynamic_metadata / mode_override / request_drain): Envoy takes it as spurious. */
  | { readonly t: 'spurious' }
  /** The member's rules refuse the answer (a destination outside its CIDRs, not ip:port, an unsupported member). */
  | { readonly t: 'refused'; readonly refusal: GuardFinding };

const NOTHING_DROPPED: readonly GuardFinding[] = Object.freeze([]);
/** ProcessingResponse.override_message_timeout. */
const OVERRIDE_MESSAGE_TIMEOUT = 10;
const STREAMED_REQUEST_BODY = [3, 1, 3, 3, 1] as const;
const STREAMED_RESPONSE_BODY = [4, 1, 3, 3, 1] as const;

/** Reads one EPP answer. Never throws: malformed input is an answer of its own. */
export function readEppAnswer(msg: Buffer, rules: AnswerRules, destinationHeader: DestinationHeaderMode): EppAnswer {
  try {
    const peek = peekResponse(msg);
    let out = msg;
    let dropped = NOTHING_DROPPED;
    let destination: string | undefined;
    let refusal: GuardFinding | undefined;
    if (peek.guard) {
      const g = guardAnswer(msg, rules);
      if (g.ok) {
        out = g.msg;
        dropped = g.dropped;
        destination = g.destination;
      } else refusal = g.refusal;
    }
    let c: AnswerCase;
    if (peek.case === 'none') {
      if (!scanFields(msg).some((f) => f.no === OVERRIDE_MESSAGE_TIMEOUT)) return { t: 'spurious' };
      c = 'override_message_timeout';
    } else c = peek.case;
    if (refusal !== undefined) return { t: 'refused', refusal };
    let status: number | undefined;
    let retryAfter: string | undefined;
    if (c === 'immediate_response') {
      const imm = decodeResponse(out).immediate_response;
      status = imm?.status?.code;
      for (const o of imm?.headers?.set_headers ?? []) {
        const h = o.header;
        if (h && h.key.toLowerCase() === 'retry-after') {
          retryAfter = h.raw_value.length > 0 ? h.raw_value.toString('utf8') : h.value;
          break;
        }
      }
    } else if (c === 'request_headers') {
      out = rewriteDestination(out, destinationHeader);
    }
    let echoedBytes = 0;
    if (peek.streamed && (c === 'request_body' || c === 'response_body')) {
      echoedBytes = Math.max(0, lastPathLength(out, c === 'request_body' ? STREAMED_REQUEST_BODY : STREAMED_RESPONSE_BODY));
    }
    return {
      t: 'answer',
      case: c,
      msg: out,
      streamed: peek.streamed,
      endOfStream: peek.endOfStream,
      echoedBytes,
      status,
      retryAfter,
      destination,
      dropped,
    };
  } catch (cause) {
    return { t: 'malformed', cause };
  }
}
