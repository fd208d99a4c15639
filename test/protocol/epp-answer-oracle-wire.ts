// The wire surgery and destination rewrite the old readers were built on (before the
// single-pass walk), kept for the oracle of the differential fuzz (epp-answer-oracle.ts).
import protobuf from 'protobufjs';
import { DESTINATION_ENDPOINT_HEADER, LB_METADATA_NAMESPACE } from '../../src/protocol/constants.js';
import { headerText, messageType, type HeaderValue, type Init, type Struct, type Value } from '../../src/protocol/codec.js';
import { primaryEndpoint, type DestinationHeaderMode } from '../../src/protocol/responses.js';

export const WIRE_LEN = 2;
/** One top-level field occurrence of an encoded message. */
export interface WireField {
  readonly no: number;
  readonly wireType: number;
  /** Offset of the tag. */
  readonly start: number;
  /** Offset just past the field. */
  readonly end: number;
  /** Offset of the value (for LEN fields: past the length prefix). */
  readonly valueStart: number;
}

/** Lists the top-level fields of an encoded message, in order. Throws on malformed input. */
export function scanFields(buf: Uint8Array): WireField[] {
  const r = protobuf.Reader.create(buf);
  const out: WireField[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const tag = r.uint32();
    const no = tag >>> 3;
    const wireType = tag & 7;
    if (no === 0) throw new RangeError('protobuf: field number 0');
    let valueStart = r.pos;
    if (wireType === WIRE_LEN) {
      const len = r.uint32();
      valueStart = r.pos;
      if (valueStart + len > r.len) throw new RangeError('protobuf: length beyond end');
      r.pos = valueStart + len;
    } else {
      r.skipType(wireType);
    }
    out.push({ no, wireType, start, end: r.pos, valueStart });
  }
  return out;
}

function asBuffer(u8: Uint8Array): Buffer {
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

/** The value bytes of a LEN field (a view, no copy). */
export function payloadOf(buf: Uint8Array, f: WireField): Buffer {
  return asBuffer(buf).subarray(f.valueStart, f.end);
}

/** Encodes a LEN field: tag, length, payload. */
export function lenField(no: number, payload: Uint8Array): Buffer {
  return asBuffer(protobuf.Writer.create().uint32(((no << 3) | WIRE_LEN) >>> 0).bytes(payload).finish());
}

/**
 * Rewrites every LEN occurrence of field `no`: `fn` gets its payload and
 * returns a new payload, or undefined to keep it. Returns `buf` itself
 * (same reference) when nothing changed.
 */
export function rewriteLenField(
  buf: Buffer,
  no: number,
  fn: (payload: Buffer) => Uint8Array | undefined,
): Buffer {
  const parts: Uint8Array[] = [];
  let changed = false;
  for (const f of scanFields(buf)) {
    const replacement = f.no === no && f.wireType === WIRE_LEN ? fn(payloadOf(buf, f)) : undefined;
    if (replacement === undefined) {
      parts.push(buf.subarray(f.start, f.end));
    } else {
      parts.push(lenField(no, replacement));
      changed = true;
    }
  }
  return changed ? Buffer.concat(parts) : buf;
}

/**
 * Follows nested LEN fields along `path` and rewrites the innermost payloads
 * with `fn`, re-encoding every enclosing length. Returns `buf` itself when
 * nothing changed.
 */
export function rewritePath(
  buf: Buffer,
  path: readonly number[],
  fn: (payload: Buffer) => Uint8Array | undefined,
): Buffer {
  const [head, ...rest] = path;
  if (head === undefined) return buf;
  if (rest.length === 0) return rewriteLenField(buf, head, fn);
  return rewriteLenField(buf, head, (inner) => {
    const out = rewritePath(inner, rest, fn);
    return out === inner ? undefined : out;
  });
}

/** Calls `fn` with the payload of every occurrence of the nested LEN field `path`, in order. */
export function visitPath(buf: Uint8Array, path: readonly number[], fn: (payload: Buffer) => void): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  for (const f of scanFields(buf)) {
    if (f.no !== head || f.wireType !== WIRE_LEN) continue;
    const payload = payloadOf(buf, f);
    if (rest.length === 0) fn(payload);
    else visitPath(payload, rest, fn);
  }
}

/** Removes every occurrence of field `no`. Returns `buf` itself when there was none. */
export function dropField(buf: Buffer, no: number): Buffer {
  const fields = scanFields(buf);
  if (!fields.some((f) => f.no === no)) return buf;
  return Buffer.concat(fields.filter((f) => f.no !== no).map((f) => buf.subarray(f.start, f.end)));
}

/** Length of the last occurrence of the nested LEN field `path`, or -1. */
export function lastPathLength(buf: Uint8Array, path: readonly number[]): number {
  let length = -1;
  visitPath(buf, path, (p) => {
    length = p.length;
  });
  return length;
}

/** ProcessingResponse.request_headers(1) -> HeadersResponse.response(1) -> CommonResponse.header_mutation(2) -> set_headers(1). */
const SET_HEADERS_PATH = [1, 1, 2, 1] as const;
const HEADER_VALUE_OPTION_HEADER = 1;
const HEADER_VALUE_VALUE = 2;
const HEADER_VALUE_RAW_VALUE = 3;
const PROCESSING_RESPONSE_DYNAMIC_METADATA = 8;

const HeaderValueType = messageType('envoy.config.core.v3.HeaderValue');
const StructType = messageType('google.protobuf.Struct');

function destinationHeader(payload: Buffer): { h: HeaderValue; text: string } | undefined {
  const h = HeaderValueType.decode(payload) as unknown as HeaderValue;
  return h.key.toLowerCase() === DESTINATION_ENDPOINT_HEADER ? { h, text: headerText(h) } : undefined;
}



/**
 * For an EPP's encoded request_headers response whose header mutation sets
 * x-gateway-destination-endpoint to a comma-separated list: in `primary` mode
 * the header keeps only the first ip:port (in each of raw_value/value that was
 * set), while dynamic_metadata envoy.lb/x-gateway-destination-endpoint keeps
 * the full list (added with the header's original value if the EPP did not set
 * it). Returns `responseBuf` itself when there is no list or in `list` mode.
 *
 * Works on the wire bytes: every other field, including fields our protos do
 * not declare, is copied unchanged (only dynamic_metadata is re-encoded, as one
 * field at the end, when the list has to be added to it).
 */
export function rewriteDestination(responseBuf: Buffer, mode: DestinationHeaderMode): Buffer {
  if (mode === 'list') return responseBuf;
  let list: string | undefined;
  const rewritten = rewritePath(responseBuf, SET_HEADERS_PATH, (option) => {
    // The option's header occurrences merge (Envoy's parser): the merged value is what is judged and cut.
    const occurrences = scanFields(option).filter((f) => f.no === HEADER_VALUE_OPTION_HEADER && f.wireType === WIRE_LEN);
    if (occurrences.length === 0) return undefined;
    const dest = destinationHeader(Buffer.concat(occurrences.map((f) => payloadOf(option, f))));
    const primary = dest && primaryEndpoint(dest.text);
    if (!dest || primary === undefined) return undefined;
    list ??= dest.text;
    const bytes = Buffer.from(primary, 'utf8');
    return unlessSame(option, rewriteLenField(option, HEADER_VALUE_OPTION_HEADER, (hv) => {
      let next = hv;
      if (dest.h.raw_value.length > 0) next = rewriteLenField(next, HEADER_VALUE_RAW_VALUE, () => bytes);
      if (dest.h.value.length > 0) next = rewriteLenField(next, HEADER_VALUE_VALUE, () => bytes);
      return next;
    }));
  });
  return list === undefined ? responseBuf : withListInMetadata(rewritten, list);
}

function unlessSame(before: Buffer, after: Buffer): Buffer | undefined {
  return after === before ? undefined : after;
}

/** Ensures dynamic_metadata envoy.lb/x-gateway-destination-endpoint is set, keeping whatever the EPP set. */
function withListInMetadata(buf: Buffer, list: string): Buffer {
  // Repeated occurrences of a message field merge; for a Struct, later keys win.
  const merged: Record<string, Value> = {};
  for (const f of scanFields(buf)) {
    if (f.no !== PROCESSING_RESPONSE_DYNAMIC_METADATA || f.wireType !== WIRE_LEN) continue;
    Object.assign(merged, (StructType.decode(payloadOf(buf, f)) as unknown as Struct).fields);
  }
  const lb = merged[LB_METADATA_NAMESPACE];
  const lbFields = lb?.kind === 'structValue' && lb.structValue ? lb.structValue.fields : {};
  if (lbFields[DESTINATION_ENDPOINT_HEADER] !== undefined) return buf;
  const metadata: Init<Struct> = {
    fields: {
      ...merged,
      [LB_METADATA_NAMESPACE]: {
        structValue: { fields: { ...lbFields, [DESTINATION_ENDPOINT_HEADER]: { stringValue: list } } },
      },
    },
  };
  const encoded = StructType.encode(metadata as never).finish();
  return Buffer.concat([
    dropField(buf, PROCESSING_RESPONSE_DYNAMIC_METADATA),
    lenField(PROCESSING_RESPONSE_DYNAMIC_METADATA, encoded),
  ]);
}
