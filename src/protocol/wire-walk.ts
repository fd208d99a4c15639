/**
 * Protobuf wire primitives on offsets, for the readers that walk a message once:
 * no Reader, no field list, no views until a caller asks for one. Reads exactly
 * as protobufjs' Reader does, so every reader in the router agrees on every
 * input, malformed ones included. Malformed input throws a RangeError.
 */
import protobuf from 'protobufjs';

export const WIRE_VARINT = 0;
export const WIRE_FIXED64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_FIXED32 = 5;

/** Where the walk reads next. Walks are synchronous; a loop that descends keeps its own field end and resumes from it. */
export const cursor = { at: 0 };

/**
 * A tag or length varint's low 32 bits, advancing the cursor. Past 5 bytes it
 * takes the 10-byte encoding as given, as protobufjs' Reader.uint32 does.
 */
export function readUint32(buf: Uint8Array, limit: number): number {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (cursor.at >= limit) throw new RangeError('protobuf: truncated varint');
    const b = buf[cursor.at++]!;
    value |= (b & 0x7f) << (7 * i);
    if (b < 0x80) return value >>> 0;
  }
  cursor.at += 5;
  if (cursor.at > limit) throw new RangeError('protobuf: truncated varint');
  return value >>> 0;
}

/** A field tag; field number 0 is malformed (as Envoy's parser has it). */
export function readTag(buf: Uint8Array, limit: number): number {
  const tag = readUint32(buf, limit);
  if (tag >>> 3 === 0) throw new RangeError('protobuf: field number 0');
  return tag;
}

/** Reads a LEN field's length; the cursor is left at its payload, whose end is returned. */
export function readLenEnd(buf: Uint8Array, limit: number): number {
  const len = readUint32(buf, limit);
  const end = cursor.at + len;
  if (end > limit) throw new RangeError('protobuf: length beyond end');
  return end;
}

/** Skips a varint value (up to 10 bytes, each with its continuation bit). */
function skipVarint(buf: Uint8Array, limit: number): void {
  for (let i = 0; i < 10; i++) {
    if (cursor.at >= limit) throw new RangeError('protobuf: truncated varint');
    if (buf[cursor.at++]! < 0x80) return;
  }
  throw new RangeError('protobuf: varint longer than 10 bytes');
}

/**
 * Skips the value of a field whose tag was just read. Groups nest at most
 * protobufjs' recursion limit deep, and end at any end-group tag (as its
 * Reader.skipType has it).
 */
export function skipValue(buf: Uint8Array, wireType: number, limit: number, depth = 0): void {
  if (depth > protobuf.Reader.recursionLimit) throw new RangeError('protobuf: groups nested too deeply');
  switch (wireType) {
    case WIRE_VARINT:
      skipVarint(buf, limit);
      return;
    case WIRE_LEN:
      cursor.at = readLenEnd(buf, limit);
      return;
    case WIRE_FIXED64:
      cursor.at += 8;
      break;
    case WIRE_FIXED32:
      cursor.at += 4;
      break;
    case WIRE_START_GROUP:
      for (;;) {
        const wt = readUint32(buf, limit) & 7;
        if (wt === WIRE_END_GROUP) return;
        skipValue(buf, wt, limit, depth + 1);
      }
    default:
      throw new RangeError(`protobuf: invalid wire type ${wireType}`);
  }
  if (cursor.at > limit) throw new RangeError('protobuf: value beyond end');
}

/** A bool (any non-zero varint) whose VARINT tag was just read. */
export function readBool(buf: Uint8Array, limit: number): boolean {
  return readUint32(buf, limit) !== 0;
}

/** An int32 (an enum) whose VARINT tag was just read. */
export function readInt32(buf: Uint8Array, limit: number): number {
  return readUint32(buf, limit) | 0;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n >>>= 7;
    size++;
  }
  return size;
}

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  return at;
}

/** Encodes a LEN field: tag, length, payload. */
export function lenField(no: number, payload: Uint8Array): Buffer {
  const tag = ((no << 3) | WIRE_LEN) >>> 0;
  const out = Buffer.allocUnsafe(varintSize(tag) + varintSize(payload.length) + payload.length);
  const at = writeVarint(out, writeVarint(out, 0, tag), payload.length);
  out.set(payload, at);
  return out;
}

/** A LEN field's payload position, as found by the lookups below. */
export const found = { start: -1, end: -1 };

/**
 * Finds the last LEN occurrence of field `no` in [from, to) (what a parser keeps
 * of a string or bytes field) into `found`; false when there is none.
 */
export function findLast(buf: Uint8Array, from: number, to: number, no: number): boolean {
  found.start = -1;
  cursor.at = from;
  while (cursor.at < to) {
    const tag = readTag(buf, to);
    if (tag >>> 3 === no && (tag & 7) === WIRE_LEN) {
      const end = readLenEnd(buf, to);
      found.start = cursor.at;
      found.end = end;
      cursor.at = end;
    } else skipValue(buf, tag & 7, to);
  }
  return found.start >= 0;
}

/**
 * A singular message field as Envoy's (C++) parser sees it: every occurrence
 * merged, which is their payloads concatenated. A view when there is one.
 */
export function mergedLen(buf: Buffer, from: number, to: number, no: number): Buffer | undefined {
  return mergedMember(buf, from, to, no, IN_NO_ONEOF);
}

/** Whether a tag (field number and wire type: another wire type is an unknown field) is a member of a oneof. */
export type OneofMembers = (tag: number) => boolean;
/** A field in no oneof: nothing clears it. */
const IN_NO_ONEOF: OneofMembers = () => false;

/** The oneof member a message holds, as a parser sees it: the member seen last (0: none). */
export function oneofCase(buf: Uint8Array, from: number, to: number, isMember: OneofMembers): number {
  let held = 0;
  cursor.at = from;
  while (cursor.at < to) {
    const tag = readTag(buf, to);
    if (isMember(tag)) held = tag >>> 3;
    skipValue(buf, tag & 7, to);
  }
  return held;
}

/**
 * A message member `no` of a oneof as Envoy's parser sees it: undefined unless it
 * is the member seen last, else its occurrences since another member cleared it, merged.
 */
export function mergedMember(buf: Buffer, from: number, to: number, no: number, isMember: OneofMembers): Buffer | undefined {
  let first: Buffer | undefined;
  let parts: Buffer[] | undefined;
  cursor.at = from;
  while (cursor.at < to) {
    const tag = readTag(buf, to);
    if (tag >>> 3 !== no || (tag & 7) !== WIRE_LEN) {
      if (isMember(tag)) first = parts = undefined; // another member clears this one
      skipValue(buf, tag & 7, to);
      continue;
    }
    const end = readLenEnd(buf, to);
    const payload = buf.subarray(cursor.at, end);
    if (first === undefined) first = payload;
    else (parts ??= [first]).push(payload);
    cursor.at = end;
  }
  return parts === undefined ? first : Buffer.concat(parts);
}

/** What becomes of one LEN field of a message being rewritten: a new payload, null to drop it, undefined to keep it. */
export type Rewrite = Buffer | null | undefined;

/** Answers for the fields of the messages it rewrites; `level` says which message type the field belongs to. */
export interface FieldRewriter {
  field(level: number, buf: Buffer, no: number, start: number, end: number): Rewrite;
  /** A field that is not LEN (seen before it is skipped). */
  scalar(level: number, no: number): void;
}

/**
 * Rewrites the LEN fields of the message at [from, to) of `buf` as `rw` answers.
 * Returns undefined when nothing changed (and allocates nothing), else the new
 * message, the fields `rw` kept copied byte for byte.
 */
export function rewriteFields(buf: Buffer, from: number, to: number, rw: FieldRewriter, level: number): Buffer | undefined {
  let parts: Buffer[] | undefined;
  let unchangedFrom = from;
  cursor.at = from;
  while (cursor.at < to) {
    const fieldStart = cursor.at;
    const tag = readTag(buf, to);
    const no = tag >>> 3;
    if ((tag & 7) !== WIRE_LEN) {
      rw.scalar(level, no);
      skipValue(buf, tag & 7, to);
      continue;
    }
    const end = readLenEnd(buf, to);
    const out = rw.field(level, buf, no, cursor.at, end);
    cursor.at = end;
    if (out === undefined) continue;
    parts ??= [];
    if (fieldStart > unchangedFrom) parts.push(buf.subarray(unchangedFrom, fieldStart));
    if (out !== null) parts.push(lenField(no, out));
    unchangedFrom = end;
  }
  if (parts === undefined) return undefined;
  if (to > unchangedFrom) parts.push(buf.subarray(unchangedFrom, to));
  return Buffer.concat(parts);
}

/** `buf` without any occurrence of field `no` (of any wire type); `buf` itself when there is none. */
export function dropField(buf: Buffer, no: number): Buffer {
  let parts: Buffer[] | undefined;
  let keptFrom = 0;
  cursor.at = 0;
  while (cursor.at < buf.length) {
    const fieldStart = cursor.at;
    const tag = readTag(buf, buf.length);
    skipValue(buf, tag & 7, buf.length);
    if (tag >>> 3 !== no) continue;
    (parts ??= []).push(buf.subarray(keptFrom, fieldStart));
    keptFrom = cursor.at;
  }
  if (parts === undefined) return buf;
  parts.push(buf.subarray(keptFrom));
  return Buffer.concat(parts);
}
