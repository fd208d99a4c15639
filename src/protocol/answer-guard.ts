/**
 * What an EPP's answer may change, enforced on its wire bytes in one walk of the
 * fields that can carry a change:
 * - a destination (x-gateway-destination-endpoint set in a header mutation, and
 *   envoy.lb/x-gateway-destination-endpoint in dynamic_metadata) must be `ip:port`
 *   entries the member's rules allow, else the whole answer is refused;
 * - header mutations (set and remove, in headers, body and trailers answers, and
 *   the headers of an immediate response) outside the allowlist are dropped, the
 *   rest of the answer is kept;
 * - dynamic_metadata keeps only the envoy.lb namespace;
 * - streamed_immediate_response is not part of the EPP protocol: refused.
 * Untouched fields are copied byte for byte (unknown fields survive).
 */
import { BodySendMode, DESTINATION_ENDPOINT_HEADER, LB_METADATA_NAMESPACE } from './constants.js';
import * as F from './response-fields.js';
import {
  cursor, findLast, found, mergedLen, mergedMember, oneofCase, readInt32, readLenEnd, readTag, rewriteFields, skipValue,
  WIRE_FIXED64, WIRE_LEN, WIRE_VARINT, type FieldRewriter, type Rewrite,
} from './wire-walk.js';

/** Why an answer was refused or a part of it dropped (a closed set: a metric label). */
export type GuardReason =
  | 'destination_invalid'
  | 'destination_denied'
  | 'header_not_allowed'
  | 'metadata_namespace'
  | 'unsupported_answer'
  /** A mode_override switching a body to a mode the relay cannot follow: dropped. */
  | 'mode_override'
  /** envoy.lb metadata naming another destination than the header: replaced by the header's (destination-carriers.ts). */
  | 'destination_mismatch'
  /** An answer to nothing Envoy waits for (out of order, a second answer, the wrong kind, empty): refused by the relay. */
  | 'spurious_answer';

export interface GuardFinding {
  readonly reason: GuardReason;
  /** What was refused or dropped, in words (for the log and the client's error body). */
  readonly detail: string;
}

export interface AnswerRules {
  /** Lower-case header names the EPP may set or remove. */
  readonly headers: ReadonlySet<string>;
  /** Why one destination entry is refused, or undefined when it is allowed. */
  destinationRefusal(endpoint: string): GuardFinding | undefined;
}

/** Which message type a field being walked belongs to. */
export const enum Level {
  Answer,
  HeadersOrBody,
  Common,
  Trailers,
  Immediate,
  Mutation,
  HeaderMap,
  Metadata,
  /** Levels the reader adds (epp-answer.ts) start here. */
  Reader,
}

const NO_FINDINGS: readonly GuardFinding[] = Object.freeze([]);

const text = (buf: Buffer, from: number, to: number): string => buf.toString('utf8', from, to);

/** The last LEN occurrence of field `no` in `hv` as text ('' when absent). */
function lastText(hv: Buffer, no: number): string {
  return findLast(hv, 0, hv.length, no) ? text(hv, found.start, found.end) : '';
}

/**
 * Where a refusal comes from, in the order they are reported: a split answer puts
 * them on the wire in any order, so the first one met would be the sender's choice.
 */
const enum Source {
  /** The member itself, or a header its header mutation sets. */
  Member,
  /** A header added as a trailer (CommonResponse.trailers). */
  AddedTrailers,
  Metadata,
}

/** google.protobuf.Value's kind: which tags set it. */
function isValueKind(tag: number): boolean {
  const no = tag >>> 3;
  const wt = tag & 7;
  if (no === F.STRING_VALUE || no === F.STRUCT_VALUE || no === F.LIST_VALUE) return wt === WIRE_LEN;
  if (no === F.NUMBER_VALUE) return wt === WIRE_FIXED64;
  return (no === F.NULL_VALUE || no === F.BOOL_VALUE) && wt === WIRE_VARINT;
}

/** A Value's string, as Envoy parses it: '' when another kind was set after it. */
function valueString(v: Buffer): string {
  return oneofCase(v, 0, v.length, isValueKind) === F.STRING_VALUE ? lastText(v, F.STRING_VALUE) : '';
}

/**
 * The rules walk over one answer. A reader keeps one and resets it per answer;
 * the walk is synchronous, so state lives in fields and nothing is allocated
 * for an answer that carries nothing to judge. What a member was judged for
 * (its findings and destination) counts until another member replaces it, as
 * in Envoy's parse of the response oneof; dynamic_metadata's counts throughout.
 */
export class GuardWalk implements FieldRewriter {
  rules!: AnswerRules;
  dropped: GuardFinding[] | undefined;
  /** Per dropped finding: whether the member (not dynamic_metadata) made it. */
  private droppedByMember: boolean[] | undefined;
  /** The first refusal from each Source. */
  private readonly refusals: (GuardFinding | undefined)[] = [undefined, undefined, undefined];
  destination: string | undefined;
  /** The ProcessingResponse member being walked (0 at the top level). */
  member = 0;
  /** Key (lower case) of the header value judged last. */
  protected key = '';
  /** The last envoy.lb entry of dynamic_metadata: its Struct (merged), and whether it sets the destination. */
  lbStruct: Buffer | undefined;
  lbHasDestination = false;
  /** That entry's string (as Envoy parses it: '' for another kind). */
  lbDestination = '';

  reset(rules: AnswerRules): void {
    this.rules = rules;
    this.dropped = undefined;
    this.droppedByMember = undefined;
    this.refusals.fill(undefined);
    this.destination = undefined;
    this.member = 0;
    this.lbStruct = undefined;
    this.lbHasDestination = false;
    this.lbDestination = '';
  }

  findings(): readonly GuardFinding[] {
    return this.dropped ?? NO_FINDINGS;
  }

  /** Why the answer is refused: the first refusal of the first Source that has one. */
  get refusal(): GuardFinding | undefined {
    return this.refusals[Source.Member] ?? this.refusals[Source.AddedTrailers] ?? this.refusals[Source.Metadata];
  }

  /** A member of ProcessingResponse.response begins; another one than before clears what the earlier one was judged for. */
  protected enterMember(no: number): void {
    if (no !== this.member) this.forgetMember();
    this.member = no;
  }

  private forgetMember(): void {
    this.refusals[Source.Member] = this.refusals[Source.AddedTrailers] = undefined;
    this.destination = undefined;
    const byMember = this.droppedByMember;
    if (this.dropped === undefined || byMember === undefined || !byMember.includes(true)) return;
    this.dropped = this.dropped.filter((_, i) => !byMember[i]);
    this.droppedByMember = byMember.filter((m) => !m);
  }

  private drop(finding: GuardFinding, byMember: boolean): void {
    (this.dropped ??= []).push(finding);
    (this.droppedByMember ??= []).push(byMember);
  }

  /** CommonResponse.body_mutation of a body answer (read by the reader). */
  protected bodyMutation(_buf: Buffer, _start: number, _end: number): void {}

  /** ImmediateResponse.status (read by the reader). */
  protected immediateStatus(_buf: Buffer, _start: number, _end: number): void {}

  /** A set header the rules keep (HeaderValueOption at [start, end), its merged HeaderValue `hv`): the reader may rewrite it. */
  protected keptSetHeader(_buf: Buffer, _start: number, _end: number, _hv: Buffer): Rewrite {
    return undefined;
  }

  scalar(_level: number, _no: number): void {}

  field(level: number, buf: Buffer, no: number, start: number, end: number): Rewrite {
    switch (level) {
      case Level.Answer:
        return this.answerField(buf, no, start, end);
      case Level.HeadersOrBody:
        return no === F.COMMON_RESPONSE ? rewriteFields(buf, start, end, this, Level.Common) : undefined;
      case Level.Common:
        return this.commonField(buf, no, start, end);
      case Level.Trailers:
        return no === F.TRAILERS_HEADER_MUTATION ? rewriteFields(buf, start, end, this, Level.Mutation) : undefined;
      case Level.Immediate:
        if (no === F.IMMEDIATE_STATUS) this.immediateStatus(buf, start, end);
        return no === F.IMMEDIATE_HEADERS ? rewriteFields(buf, start, end, this, Level.Mutation) : undefined;
      case Level.Mutation:
        return this.mutationField(buf, no, start, end);
      case Level.HeaderMap:
        return no !== F.MAP_HEADERS || this.headerValue(buf.subarray(start, end), 'add trailer', Source.AddedTrailers) ? undefined : null;
      case Level.Metadata:
        return no === F.STRUCT_FIELDS ? this.metadataEntry(buf, start, end) : undefined;
    }
    return undefined;
  }

  private answerField(buf: Buffer, no: number, start: number, end: number): Rewrite {
    if (no === F.DYNAMIC_METADATA) return rewriteFields(buf, start, end, this, Level.Metadata);
    if (no === F.MODE_OVERRIDE) return this.modeOverride(buf, start, end);
    if (no < F.REQUEST_HEADERS || (no > F.IMMEDIATE_RESPONSE && no !== F.STREAMED_IMMEDIATE_RESPONSE)) return undefined;
    this.enterMember(no);
    if (no <= F.RESPONSE_BODY) return rewriteFields(buf, start, end, this, Level.HeadersOrBody);
    if (no <= F.RESPONSE_TRAILERS) return rewriteFields(buf, start, end, this, Level.Trailers);
    if (no === F.IMMEDIATE_RESPONSE) return rewriteFields(buf, start, end, this, Level.Immediate);
    this.refusals[Source.Member] ??= { reason: 'unsupported_answer', detail: 'streamed_immediate_response is not part of the EPP protocol' };
    return undefined;
  }

  /**
   * ProcessingResponse.mode_override (Envoy applies it only with allow_mode_override,
   * on a headers answer, never in FULL_DUPLEX_STREAMED): an occurrence that would switch
   * a body to FULL_DUPLEX_STREAMED or GRPC is dropped. Envoy would then expect echoes of
   * a body the relay does not hold; every other mode only changes which messages Envoy
   * sends, and the relay answers what it is sent.
   */
  private modeOverride(buf: Buffer, start: number, end: number): Rewrite {
    cursor.at = start;
    while (cursor.at < end) {
      const tag = readTag(buf, end);
      const no = tag >>> 3;
      if ((no === F.MODE_REQUEST_BODY || no === F.MODE_RESPONSE_BODY) && (tag & 7) === WIRE_VARINT) {
        const mode = readInt32(buf, end);
        if (mode === BodySendMode.FULL_DUPLEX_STREAMED || mode === BodySendMode.GRPC) {
          this.drop({ reason: 'mode_override', detail: `mode_override ${no === F.MODE_REQUEST_BODY ? 'request' : 'response'}_body_mode ${mode}` }, false);
          return null;
        }
      } else skipValue(buf, tag & 7, end);
    }
    return undefined;
  }

  private commonField(buf: Buffer, no: number, start: number, end: number): Rewrite {
    if (no === F.HEADER_MUTATION) return rewriteFields(buf, start, end, this, Level.Mutation);
    if (no === F.ADDED_TRAILERS) return rewriteFields(buf, start, end, this, Level.HeaderMap);
    if (no === F.BODY_MUTATION && (this.member === F.REQUEST_BODY || this.member === F.RESPONSE_BODY)) {
      this.bodyMutation(buf, start, end);
    }
    return undefined;
  }

  /** HeaderMutation: set/remove of headers outside the allowlist are dropped; a destination it sets is checked. */
  private mutationField(buf: Buffer, no: number, start: number, end: number): Rewrite {
    if (no === F.REMOVE_HEADERS) return this.allowed(text(buf, start, end).toLowerCase(), 'remove header') ? undefined : null;
    if (no !== F.SET_HEADERS) return undefined;
    const hv = mergedLen(buf, start, end, F.OPTION_HEADER);
    if (hv === undefined) return undefined;
    return this.headerValue(hv, 'set header', Source.Member) ? this.keptSetHeader(buf, start, end, hv) : null;
  }

  private allowed(key: string, what: string): boolean {
    if (this.rules.headers.has(key)) return true;
    this.drop({ reason: 'header_not_allowed', detail: `${what} "${key}"` }, true);
    return false;
  }

  /** One HeaderValue an answer sets: allowed or not; a destination is checked. */
  private headerValue(hv: Buffer, what: string, source: Source): boolean {
    const key = lastText(hv, F.HEADER_KEY).toLowerCase();
    this.key = key;
    if (!this.allowed(key, what)) return false;
    if (key === DESTINATION_ENDPOINT_HEADER) {
      const raw = lastText(hv, F.HEADER_RAW_VALUE);
      const value = lastText(hv, F.HEADER_VALUE);
      // Envoy reads raw_value; check whichever is set, both when both are.
      if (raw !== '') this.checkDestination(raw, `header ${key}`, source);
      if (value !== '') this.checkDestination(value, `header ${key}`, source);
      if (raw === '' && value === '') this.checkDestination('', `header ${key}`, source);
      this.destination ??= raw !== '' ? raw : value;
    }
    return true;
  }

  /** A comma-separated destination: every entry must be allowed. */
  private checkDestination(value: string, where: string, source: Source): void {
    if (this.refusals[source] !== undefined) return;
    for (const raw of value.split(',')) {
      const entry = raw.trim();
      const why =
        entry === ''
          ? { reason: 'destination_invalid' as const, detail: `empty entry in ${where} "${value}"` }
          : this.rules.destinationRefusal(entry);
      if (why !== undefined) {
        this.refusals[source] = { reason: why.reason, detail: `${where}: ${why.detail}` };
        return;
      }
    }
  }

  /** dynamic_metadata: only envoy.lb is kept, and a destination in it is checked. */
  private metadataEntry(buf: Buffer, start: number, end: number): Rewrite {
    const ns = findLast(buf, start, end, F.ENTRY_KEY) ? text(buf, found.start, found.end) : '';
    if (ns !== LB_METADATA_NAMESPACE) {
      this.drop({ reason: 'metadata_namespace', detail: `dynamic_metadata namespace "${ns}"` }, false);
      return null;
    }
    const value = mergedLen(buf, start, end, F.ENTRY_VALUE);
    const struct = value === undefined ? undefined : mergedMember(value, 0, value.length, F.STRUCT_VALUE, isValueKind);
    this.lbStruct = struct;
    this.lbHasDestination = false;
    if (struct === undefined) return undefined;
    cursor.at = 0;
    while (cursor.at < struct.length) {
      const tag = readTag(struct, struct.length);
      if (tag >>> 3 !== F.STRUCT_FIELDS || (tag & 7) !== WIRE_LEN) {
        skipValue(struct, tag & 7, struct.length);
        continue;
      }
      const entryEnd = readLenEnd(struct, struct.length);
      const inner = struct.subarray(cursor.at, entryEnd);
      if (lastText(inner, F.ENTRY_KEY) === DESTINATION_ENDPOINT_HEADER) {
        this.lbHasDestination = true;
        const v = mergedLen(inner, 0, inner.length, F.ENTRY_VALUE);
        this.lbDestination = v === undefined ? '' : valueString(v);
        this.checkDestination(this.lbDestination, `dynamic_metadata ${LB_METADATA_NAMESPACE}/${DESTINATION_ENDPOINT_HEADER}`, Source.Metadata);
      }
      cursor.at = entryEnd;
    }
    return undefined;
  }
}
