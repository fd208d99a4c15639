// The readers as they were before the single-pass walk, kept as the oracle of the
// differential fuzz: the rules walk over scanFields and the reader composed from
// peekResponse, guardAnswer, decodeResponse, rewriteDestination and lastPathLength.
import type { AnswerRules, GuardFinding } from '../../src/protocol/answer-guard.js';
import { DESTINATION_ENDPOINT_HEADER, LB_METADATA_NAMESPACE } from '../../src/protocol/constants.js';
import { decodeResponse, encodeResponse } from '../../src/protocol/codec.js';
import { primaryEndpoint } from '../../src/protocol/responses.js';
import { canonicalResponse } from './wire-canonical.js';
import { peekResponse } from './epp-answer-oracle-peek.js';
import type { AnswerCase, EppAnswer } from '../../src/protocol/epp-answer.js';
import type { DestinationHeaderMode } from '../../src/protocol/responses.js';
import { lastPathLength, lenField, payloadOf, rewriteDestination, scanFields, WIRE_LEN } from './epp-answer-oracle-wire.js';
type GuardResult =
  | { readonly ok: true; readonly msg: Buffer; readonly destination: string | undefined; readonly dropped: readonly GuardFinding[] }
  | { readonly ok: false; readonly refusal: GuardFinding };

// ProcessingResponse
const REQUEST_HEADERS = 1;
const RESPONSE_BODY = 4;
const REQUEST_TRAILERS = 5;
const RESPONSE_TRAILERS = 6;
const IMMEDIATE_RESPONSE = 7;
const DYNAMIC_METADATA = 8;
const STREAMED_IMMEDIATE_RESPONSE = 11;
// HeadersResponse.response / BodyResponse.response
const COMMON_RESPONSE = 1;
// CommonResponse
const HEADER_MUTATION = 2;
const ADDED_TRAILERS = 4;
// TrailersResponse.header_mutation
const TRAILERS_HEADER_MUTATION = 1;
// ImmediateResponse.headers
const IMMEDIATE_HEADERS = 2;
// HeaderMutation
const SET_HEADERS = 1;
const REMOVE_HEADERS = 2;
// HeaderValueOption.header; HeaderMap.headers
const OPTION_HEADER = 1;
const MAP_HEADERS = 1;
// HeaderValue
const KEY = 1;
const VALUE = 2;
const RAW_VALUE = 3;
// google.protobuf.Struct.fields (map entry key=1, value=2); Value
const STRUCT_FIELDS = 1;
const ENTRY_KEY = 1;
const ENTRY_VALUE = 2;
const STRING_VALUE = 3;
const STRUCT_VALUE = 5;

type Rewrite = Buffer | null | undefined;

/**
 * Rewrites the LEN fields of `buf`: `fn` returns a new payload, null to drop the
 * field, or undefined to keep it. Returns `buf` itself when nothing changed.
 */
function rewriteFields(buf: Buffer, fn: (no: number, payload: Buffer) => Rewrite): Buffer {
  const fields = scanFields(buf);
  let parts: Buffer[] | undefined;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    let out: Rewrite;
    if (f.wireType === WIRE_LEN) {
      const payload = payloadOf(buf, f);
      out = fn(f.no, payload);
      if (out === payload) out = undefined;
    }
    if (out === undefined && parts === undefined) continue;
    if (parts === undefined) parts = fields.slice(0, i).map((g) => buf.subarray(g.start, g.end));
    if (out === undefined) parts.push(buf.subarray(f.start, f.end));
    else if (out !== null) parts.push(lenField(f.no, out));
  }
  return parts === undefined ? buf : Buffer.concat(parts);
}

/** The payload of the last LEN occurrence of field `no`, or undefined: what a parser keeps of a string field. */
function lastLen(buf: Buffer, no: number): Buffer | undefined {
  let found: Buffer | undefined;
  for (const f of scanFields(buf)) if (f.no === no && f.wireType === WIRE_LEN) found = payloadOf(buf, f);
  return found;
}

/**
 * A singular message field as Envoy's (C++) parser sees it: every occurrence merged,
 * which is their payloads concatenated. Judging only the last occurrence (protobufjs'
 * reading) would let an answer hide a value in an earlier one.
 */
function mergedLen(buf: Buffer, no: number): Buffer | undefined {
  const parts: Buffer[] = [];
  for (const f of scanFields(buf)) if (f.no === no && f.wireType === WIRE_LEN) parts.push(payloadOf(buf, f));
  return parts.length <= 1 ? parts[0] : Buffer.concat(parts);
}

const text = (b: Buffer | undefined): string => (b === undefined ? '' : b.toString('utf8'));

class Walk {
  readonly dropped: GuardFinding[] = [];
  refusal: GuardFinding | undefined;
  destination: string | undefined;

  constructor(private readonly rules: AnswerRules) {}

  /** A comma-separated destination: every entry must be allowed. */
  checkDestination(value: string, where: string): void {
    if (this.refusal !== undefined) return;
    for (const raw of value.split(',')) {
      const entry = raw.trim();
      const why =
        entry === ''
          ? { reason: 'destination_invalid' as const, detail: `empty entry in ${where} "${value}"` }
          : this.rules.destinationRefusal(entry);
      if (why !== undefined) {
        this.refusal = { reason: why.reason, detail: `${where}: ${why.detail}` };
        return;
      }
    }
  }

  private allowed(key: string, what: string): boolean {
    if (this.rules.headers.has(key)) return true;
    this.dropped.push({ reason: 'header_not_allowed', detail: `${what} "${key}"` });
    return false;
  }

  /** HeaderMutation: drops set/remove of headers outside the allowlist; checks a destination it sets. */
  mutation = (buf: Buffer): Rewrite =>
    rewriteFields(buf, (no, payload) => {
      if (no === REMOVE_HEADERS) return this.allowed(text(payload).toLowerCase(), 'remove header') ? undefined : null;
      if (no !== SET_HEADERS) return undefined;
      const hv = mergedLen(payload, OPTION_HEADER);
      return hv === undefined || this.headerValue(hv, 'set header') ? undefined : null;
    });

  /** HeaderMap (headers added as trailers): entries outside the allowlist are dropped. */
  headerMap = (buf: Buffer): Rewrite =>
    rewriteFields(buf, (no, hv) => (no !== MAP_HEADERS || this.headerValue(hv, 'add trailer') ? undefined : null));

  /** One HeaderValue an answer sets: allowed or not; a destination is checked. */
  private headerValue(hv: Buffer, what: string): boolean {
    const key = text(lastLen(hv, KEY)).toLowerCase();
    if (!this.allowed(key, what)) return false;
    if (key === DESTINATION_ENDPOINT_HEADER) {
      const raw = lastLen(hv, RAW_VALUE);
      const value = lastLen(hv, VALUE);
      // Envoy reads raw_value; check whichever is set, both when both are.
      if (raw !== undefined && raw.length > 0) this.checkDestination(text(raw), `header ${key}`);
      if (value !== undefined && value.length > 0) this.checkDestination(text(value), `header ${key}`);
      if ((raw === undefined || raw.length === 0) && (value === undefined || value.length === 0)) {
        this.checkDestination('', `header ${key}`);
      }
      this.destination ??= text(raw !== undefined && raw.length > 0 ? raw : value);
    }
    return true;
  }

  /** CommonResponse: its header_mutation and added trailers. */
  common = (buf: Buffer): Rewrite =>
    rewriteFields(buf, (no, payload) => {
      if (no === HEADER_MUTATION) return this.mutation(payload);
      if (no === ADDED_TRAILERS) return this.headerMap(payload);
      return undefined;
    });

  /** dynamic_metadata: only envoy.lb is kept, and a destination in it is checked. */
  metadata = (buf: Buffer): Rewrite =>
    rewriteFields(buf, (no, entry) => {
      if (no !== STRUCT_FIELDS) return undefined;
      const ns = text(lastLen(entry, ENTRY_KEY));
      if (ns !== LB_METADATA_NAMESPACE) {
        this.dropped.push({ reason: 'metadata_namespace', detail: `dynamic_metadata namespace "${ns}"` });
        return null;
      }
      const struct = mergedLen(mergedLen(entry, ENTRY_VALUE) ?? Buffer.alloc(0), STRUCT_VALUE);
      for (const f of struct === undefined ? [] : scanFields(struct)) {
        if (f.no !== STRUCT_FIELDS || f.wireType !== WIRE_LEN) continue;
        const inner = payloadOf(struct!, f);
        if (text(lastLen(inner, ENTRY_KEY)) !== DESTINATION_ENDPOINT_HEADER) continue;
        const value = mergedLen(inner, ENTRY_VALUE);
        const s = value === undefined ? undefined : lastLen(value, STRING_VALUE);
        this.checkDestination(text(s), `dynamic_metadata ${LB_METADATA_NAMESPACE}/${DESTINATION_ENDPOINT_HEADER}`);
      }
      return undefined;
    });
}

/** Applies `rules` to one encoded EPP ProcessingResponse. Throws on malformed input. */
function oldGuardAnswer(msg: Buffer, rules: AnswerRules): GuardResult {
  const w = new Walk(rules);
  const out = rewriteFields(msg, (no, payload) => {
    if (no >= REQUEST_HEADERS && no <= RESPONSE_BODY) {
      // Headers and body responses: response(1) is a CommonResponse.
      return rewriteFields(payload, (n, common) => (n === COMMON_RESPONSE ? w.common(common) : undefined));
    }
    if (no === REQUEST_TRAILERS || no === RESPONSE_TRAILERS) {
      return rewriteFields(payload, (n, m) => (n === TRAILERS_HEADER_MUTATION ? w.mutation(m) : undefined));
    }
    if (no === IMMEDIATE_RESPONSE) return rewriteFields(payload, (n, m) => (n === IMMEDIATE_HEADERS ? w.mutation(m) : undefined));
    if (no === DYNAMIC_METADATA) return w.metadata(payload);
    if (no === STREAMED_IMMEDIATE_RESPONSE && w.refusal === undefined) {
      w.refusal = { reason: 'unsupported_answer', detail: 'streamed_immediate_response is not part of the EPP protocol' };
    }
    return undefined;
  });
  if (w.refusal !== undefined) return { ok: false, refusal: w.refusal };
  return { ok: true, msg: out, destination: w.destination, dropped: w.dropped };
}
const NOTHING_DROPPED: readonly GuardFinding[] = Object.freeze([]);
/** ProcessingResponse.override_message_timeout. */
const OVERRIDE_MESSAGE_TIMEOUT = 10;
const STREAMED_REQUEST_BODY = [3, 1, 3, 3, 1] as const;
const STREAMED_RESPONSE_BODY = [4, 1, 3, 3, 1] as const;

/** Reads one EPP answer. Never throws: malformed input is an answer of its own. */
export function oldReadEppAnswer(msg: Buffer, rules: AnswerRules, destinationHeader: DestinationHeaderMode): EppAnswer {
  try {
    const peek = peekResponse(msg);
    let out = msg;
    let dropped = NOTHING_DROPPED;
    let destination: string | undefined;
    let refusal: GuardFinding | undefined;
    if (peek.guard) {
      const g = oldGuardAnswer(msg, rules);
      if (g.ok) {
        out = g.msg;
        dropped = g.dropped;
        destination = g.destination;
      } else refusal = g.refusal;
    }
    let c: AnswerCase;
    // Envoy reads a message with override_message_timeout as that only.
    if (scanFields(msg).some((f) => f.no === OVERRIDE_MESSAGE_TIMEOUT)) c = 'override_message_timeout';
    else if (peek.case === 'none') return { t: 'spurious' };
    else c = peek.case;
    const streamed = peek.streamed && (c === 'request_body' || c === 'response_body');
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
      const carried = oracleCarry(out, destination, destinationHeader, rules);
      out = carried.msg;
      destination = carried.destination;
      if (carried.mismatch) dropped = [...dropped, { reason: 'destination_mismatch', detail: carried.mismatch }];
    }
    let echoedBytes = 0;
    if (streamed) {
      echoedBytes = Math.max(0, lastPathLength(out, c === 'request_body' ? STREAMED_REQUEST_BODY : STREAMED_RESPONSE_BODY));
    }
    return {
      t: 'answer',
      case: c,
      msg: out,
      streamed,
      endOfStream: streamed && peek.endOfStream,
      echoedBytes,
      replaces: (c === 'request_headers' || c === 'response_headers') && decodeResponse(out)[c]?.response?.status === 1,
      status,
      retryAfter,
      destination,
      dropped,
    };
  } catch (cause) {
    return { t: 'malformed', cause };
  }
}

/**
 * The destination on both carriers (src/protocol/destination-carriers.ts), read
 * from a full decode of the answer as Envoy merges it: non-canonical destination
 * options (another key case, or no raw_value) removed and the destination written
 * again last; envoy.lb set to the header's value (the metadata's when there is no
 * header). Re-encoded only when something changes.
 */
function oracleCarry(out: Buffer, header: string | undefined, mode: DestinationHeaderMode, rules: AnswerRules): { msg: Buffer; destination: string | undefined; mismatch?: string } {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const d = decodeResponse(canonicalResponse(out)) as any;
  const lbValue = d.dynamic_metadata?.fields?.[LB_METADATA_NAMESPACE];
  const lbFields: Record<string, unknown> | undefined = lbValue?.structValue ? lbValue.structValue.fields : undefined;
  const md = lbFields?.[DESTINATION_ENDPOINT_HEADER] as { stringValue?: string } | undefined;
  const metadata = md === undefined ? undefined : (md.stringValue ?? '');
  const full = header ?? metadata;
  if (full === undefined) return { msg: out, destination: undefined };
  const hm = d.request_headers?.response?.header_mutation;
  const options: { header?: { key: string; raw_value?: Uint8Array } }[] = hm?.set_headers ?? [];
  const isDest = (o: (typeof options)[number]) => (o.header?.key ?? '').toLowerCase() === DESTINATION_ENDPOINT_HEADER;
  const canonical = (o: (typeof options)[number]) => o.header?.key === DESTINATION_ENDPOINT_HEADER && (o.header.raw_value?.length ?? 0) > 0;
  const dropped = options.some((o) => isDest(o) && !canonical(o));
  const addHeader = (header === undefined || dropped) && rules.headers.has(DESTINATION_ENDPOINT_HEADER);
  const spacedOut = (v: string) => v.split(',').map((x) => x.trim()).join(',');
  const consistent = (m: string, h: string) => spacedOut(m) === spacedOut(h) || (!spacedOut(h).includes(',') && spacedOut(m).split(',')[0] === spacedOut(h) && spacedOut(m).includes(','));
  const setMetadata = metadata !== full && (metadata === undefined || !consistent(metadata, full));
  if (!addHeader && !dropped && !setMetadata) return { msg: out, destination: full };
  if (addHeader || dropped) {
    d.request_headers.response ??= {};
    const mutation = (d.request_headers.response.header_mutation ??= { set_headers: [], remove_headers: [] });
    mutation.set_headers = options.filter((o) => !isDest(o) || canonical(o));
    const value = mode === 'primary' ? (primaryEndpoint(full) ?? full.trim()) : full;
    if (addHeader) mutation.set_headers.push({ header: { key: DESTINATION_ENDPOINT_HEADER, raw_value: Buffer.from(value) }, append: { value: false } });
  }
  if (setMetadata) {
    d.dynamic_metadata ??= { fields: {} };
    d.dynamic_metadata.fields[LB_METADATA_NAMESPACE] = { structValue: { fields: { ...(lbFields ?? {}), [DESTINATION_ENDPOINT_HEADER]: { stringValue: full } } } };
  }
  const mismatch = setMetadata && metadata !== undefined ? `dynamic_metadata ${LB_METADATA_NAMESPACE}/${DESTINATION_ENDPOINT_HEADER} "${metadata}" differs from the header "${full}": set to the header's` : undefined;
  return { msg: encodeResponse(d), destination: full, ...(mismatch ? { mismatch } : {}) };
}
