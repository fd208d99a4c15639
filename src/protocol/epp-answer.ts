/**
 * One EPP ProcessingResponse, read once: what it answers, the bytes to relay
 * (held to the member's rules, answer-guard.ts, with a destination list
 * rewritten per `destinationHeader`, and a request headers answer's destination
 * on both carriers, destination-carriers.ts), and what the relay's bookkeeping needs.
 */
import { GuardWalk, Level, type AnswerRules, type GuardFinding } from './answer-guard.js';
import type { ResponseCase } from './codec.js';
import { DESTINATION_ENDPOINT_HEADER, LB_METADATA_NAMESPACE, ResponseStatus } from './constants.js';
import { PHASE_BY_RESPONSE_FIELD } from './phases.js';
import * as F from './response-fields.js';
import { carryDestination } from './destination-carriers.js';
import { primaryEndpoint, type DestinationHeaderMode } from './responses.js';
import { cursor, findLast, found, readBool, readInt32, readLenEnd, readTag, rewriteFields, skipValue, WIRE_LEN, WIRE_VARINT, type Rewrite } from './wire-walk.js';

/** What an answer answers: a response member, or override_message_timeout (answers nothing, Envoy acts on it and reads nothing else of that message). */
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
  /** A headers answer whose CommonResponse.status is CONTINUE_AND_REPLACE: Envoy sends and awaits nothing more in its direction. */
  readonly replaces: boolean;
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
/** What the member numbered `no` of ProcessingResponse.response answers. */
function answerCase(no: number): AnswerCase | undefined {
  if (no === F.IMMEDIATE_RESPONSE) return 'immediate_response';
  if (no === F.STREAMED_IMMEDIATE_RESPONSE) return 'streamed_immediate_response';
  return PHASE_BY_RESPONSE_FIELD[no]?.name;
}

const enum ReaderLevel {
  /** A HeaderValueOption whose destination list is cut to its first entry. */
  DestinationOption = Level.Reader,
  /** That option's HeaderValue: raw_value and value replaced. */
  DestinationValue,
}

const isBody = (no: number): boolean => no === F.REQUEST_BODY || no === F.RESPONSE_BODY;
const isHeaders = (no: number): boolean => no === F.REQUEST_HEADERS || no === F.RESPONSE_HEADERS;

/**
 * Walks one answer once: the rules (GuardWalk), and on the way the streamed
 * body, the immediate status and retry-after, and the destination list.
 * Repeated occurrences of the member merge; another member replaces it.
 */
class AnswerReader extends GuardWalk {
  primaryOnly = false;
  /** The last member seen (0: none). */
  last = 0;
  /** A body member's header mutation or added trailers (it is then judged like a headers answer). */
  bodyChanges = false;
  streamed = false;
  endOfStream = false;
  echoedBytes = 0;
  /** A headers member's CommonResponse.status (last occurrence), when set. */
  commonStatus: number | undefined;
  status: number | undefined;
  retryAfter: string | undefined;
  metadata = false;
  overridesTimeout = false;
  /** A mode_override was seen: the rules' verdict on it counts whatever the member. */
  overridesMode = false;
  /** A request headers destination option that Envoy or a gateway would misread (only `value`, another key case) was dropped: written again (destination-carriers.ts). */
  headerDropped = false;
  private primary: Buffer | undefined;
  private cutRaw = false;
  private cutValue = false;

  start(rules: AnswerRules, destinationHeader: DestinationHeaderMode): void {
    this.reset(rules);
    this.primaryOnly = destinationHeader === 'primary';
    this.last = 0;
    this.metadata = false;
    this.overridesTimeout = false;
    this.overridesMode = false;
    this.clearMember();
  }

  private clearMember(): void {
    this.bodyChanges = false;
    this.clearStreamed();
    this.commonStatus = undefined;
    this.status = undefined;
    this.retryAfter = undefined;
    this.headerDropped = false;
  }

  private clearStreamed(): void {
    this.streamed = false;
    this.endOfStream = false;
    this.echoedBytes = 0;
  }

  /** Whether the rules' verdict counts: an answer that can change something besides body bytes. */
  judged(): boolean {
    return this.metadata || this.overridesMode || (this.last !== 0 && (!isBody(this.last) || this.bodyChanges));
  }

  protected override enterMember(no: number): void {
    super.enterMember(no);
    if (no !== this.last) this.clearMember();
    this.last = no;
  }

  override scalar(level: number, no: number): void {
    if (level !== Level.Answer) return;
    if (no === F.DYNAMIC_METADATA) this.metadata = true;
    else if (no === F.OVERRIDE_MESSAGE_TIMEOUT) this.overridesTimeout = true;
    else if (no === F.MODE_OVERRIDE) this.overridesMode = true;
  }

  override field(level: number, buf: Buffer, no: number, start: number, end: number): Rewrite {
    if (level === Level.Answer) this.scalar(level, no);
    else if (level === Level.HeadersOrBody && no === F.COMMON_RESPONSE && isHeaders(this.member)) this.readCommonStatus(buf, start, end);
    else if (level === Level.Common && isBody(this.member) && (no === F.HEADER_MUTATION || no === F.ADDED_TRAILERS)) {
      this.bodyChanges = true;
    } else if (level === ReaderLevel.DestinationOption) {
      return no === F.OPTION_HEADER ? rewriteFields(buf, start, end, this, ReaderLevel.DestinationValue) : undefined;
    } else if (level === ReaderLevel.DestinationValue) {
      return (no === F.HEADER_RAW_VALUE && this.cutRaw) || (no === F.HEADER_VALUE && this.cutValue) ? this.primary : undefined;
    }
    return super.field(level, buf, no, start, end);
  }

  /**
   * BodyMutation: a streamed_response's end_of_stream and body length (last
   * occurrence of each). body or clear_body, the other members of its oneof, clear it.
   */
  protected override bodyMutation(buf: Buffer, start: number, end: number): void {
    cursor.at = start;
    while (cursor.at < end) {
      const tag = readTag(buf, end);
      const no = tag >>> 3;
      if (no !== F.STREAMED_RESPONSE || (tag & 7) !== WIRE_LEN) {
        if ((no === F.MUTATION_BODY && (tag & 7) === WIRE_LEN) || (no === F.CLEAR_BODY && (tag & 7) === WIRE_VARINT)) this.clearStreamed();
        skipValue(buf, tag & 7, end);
        continue;
      }
      const streamedEnd = readLenEnd(buf, end);
      this.streamed = true;
      while (cursor.at < streamedEnd) {
        const t = readTag(buf, streamedEnd);
        const n = t >>> 3;
        const wt = t & 7;
        if (n === F.STREAMED_END_OF_STREAM && wt === WIRE_VARINT) this.endOfStream = readBool(buf, streamedEnd);
        else if (n === F.STREAMED_BODY && wt === WIRE_LEN) {
          const bodyEnd = readLenEnd(buf, streamedEnd);
          this.echoedBytes = bodyEnd - cursor.at;
          cursor.at = bodyEnd;
        } else skipValue(buf, wt, streamedEnd);
      }
    }
  }

  /** CommonResponse.status of a headers answer (occurrences merge: the last one set counts). */
  private readCommonStatus(buf: Buffer, start: number, end: number): void {
    cursor.at = start;
    while (cursor.at < end) {
      const tag = readTag(buf, end);
      if (tag >>> 3 === F.COMMON_STATUS && (tag & 7) === WIRE_VARINT) this.commonStatus = readInt32(buf, end);
      else skipValue(buf, tag & 7, end);
    }
  }

  /** HttpStatus.code (an HttpStatus without one reads as 0). */
  protected override immediateStatus(buf: Buffer, start: number, end: number): void {
    this.status ??= 0;
    cursor.at = start;
    while (cursor.at < end) {
      const tag = readTag(buf, end);
      if (tag >>> 3 === F.STATUS_CODE && (tag & 7) === WIRE_VARINT) this.status = readInt32(buf, end);
      else skipValue(buf, tag & 7, end);
    }
  }

  protected override keptSetHeader(buf: Buffer, start: number, end: number, hv: Buffer): Rewrite {
    if (this.member === F.IMMEDIATE_RESPONSE && this.key === 'retry-after') {
      this.retryAfter ??= headerText(hv);
    } else if (this.member === F.REQUEST_HEADERS && this.key === DESTINATION_ENDPOINT_HEADER) {
      if (!canonicalDestination(hv)) {
        this.headerDropped = true;
        return null;
      }
      if (this.primaryOnly) return this.cutDestination(buf, start, end, hv);
    }
    return undefined;
  }

  /**
   * A kept destination option whose value is a list keeps only its first entry.
   * The value is the merged HeaderValue `hv` (every header occurrence of the
   * option, as Envoy merges them: the value the rules checked), and every
   * occurrence of raw_value and value that the merge keeps non-empty is rewritten,
   * so the header and the envoy.lb list both carry exactly what was checked.
   */
  private cutDestination(buf: Buffer, start: number, end: number, hv: Buffer): Rewrite {
    const sent = headerText(hv);
    const primary = primaryEndpoint(sent);
    if (primary === undefined) return undefined;
    this.cutRaw = findLast(hv, 0, hv.length, F.HEADER_RAW_VALUE) && found.end > found.start;
    this.cutValue = findLast(hv, 0, hv.length, F.HEADER_VALUE) && found.end > found.start;
    this.primary = Buffer.from(primary, 'utf8');
    return rewriteFields(buf, start, end, this, ReaderLevel.DestinationOption);
  }
}

/** A HeaderValue's text: raw_value when set (what Envoy reads), else value. */
function headerText(hv: Buffer): string {
  if (findLast(hv, 0, hv.length, F.HEADER_RAW_VALUE) && found.end > found.start) return hv.toString('utf8', found.start, found.end);
  return findLast(hv, 0, hv.length, F.HEADER_VALUE) ? hv.toString('utf8', found.start, found.end) : '';
}

const DESTINATION_KEY = Buffer.from(DESTINATION_ENDPOINT_HEADER, 'latin1');

/** A destination option as every gateway reads it: the exact lower-case key, the value in raw_value (compared in place, no copy). */
function canonicalDestination(hv: Buffer): boolean {
  if (!findLast(hv, 0, hv.length, F.HEADER_KEY) || DESTINATION_KEY.compare(hv, found.start, found.end) !== 0) return false;
  return findLast(hv, 0, hv.length, F.HEADER_RAW_VALUE) && found.end > found.start;
}

const reader = new AnswerReader();

/** Reads one EPP answer. Never throws: malformed input is an answer of its own. */
export function readEppAnswer(msg: Buffer, rules: AnswerRules, destinationHeader: DestinationHeaderMode): EppAnswer {
  let rewritten: Buffer | undefined;
  try {
    reader.start(rules, destinationHeader);
    rewritten = rewriteFields(msg, 0, msg.length, reader, Level.Answer);
  } catch (cause) {
    return { t: 'malformed', cause };
  }
  // Envoy reads a message with override_message_timeout as that only: a member beside it answers nothing.
  const c = reader.overridesTimeout ? 'override_message_timeout' : reader.last === 0 ? undefined : answerCase(reader.last);
  if (c === undefined) return { t: 'spurious' };
  const judged = reader.judged();
  if (judged && reader.refusal !== undefined) return { t: 'refused', refusal: reader.refusal };
  let out = msg;
  let destination: string | undefined;
  let dropped = judged ? reader.findings() : NOTHING_DROPPED;
  if (judged) {
    out = rewritten ?? msg;
    destination = reader.destination;
    if (c === 'request_headers') {
      const metadata = reader.lbHasDestination ? reader.lbDestination : undefined;
      const carried = carryDestination(out, { header: reader.destination, headerDropped: reader.headerDropped, metadata, lbStruct: reader.lbStruct, headerAllowed: rules.headers.has(DESTINATION_ENDPOINT_HEADER) }, destinationHeader);
      out = carried.msg;
      destination = carried.destination;
      if (carried.mismatch !== undefined) dropped = [...dropped, carried.mismatch];
    }
  }
  const member = c === 'override_message_timeout' ? 0 : reader.last;
  const streamed = isBody(member) && reader.streamed;
  return {
    t: 'answer',
    case: c,
    msg: out,
    streamed,
    endOfStream: streamed && reader.endOfStream,
    echoedBytes: streamed ? reader.echoedBytes : 0,
    replaces: isHeaders(member) && reader.commonStatus === ResponseStatus.CONTINUE_AND_REPLACE,
    status: c === 'immediate_response' ? reader.status : undefined,
    retryAfter: c === 'immediate_response' ? reader.retryAfter : undefined,
    destination,
    dropped,
  };
}
