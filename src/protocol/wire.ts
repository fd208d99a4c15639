/**
 * Minimal protobuf wire-format surgery on encoded messages. Fields that are
 * not touched are copied byte for byte, so fields our protos do not declare
 * (newer Envoy or EPP fields) survive a rewrite, which a protobufjs
 * decode + encode would drop.
 */
import protobuf from 'protobufjs';
import { cursor, lenField, readLenEnd, readTag, skipValue, WIRE_LEN } from './wire-walk.js';

export { dropField, lenField, WIRE_LEN, WIRE_VARINT } from './wire-walk.js';

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

// ---------------------------------------------------------------------------
// Allocation-free lookup for the request path: the last occurrence of a nested
// LEN field, found by walking offsets (no Reader, no field list, no views until
// the leaf). Same reading as visitPath: every level it enters is scanned to its
// end and malformed input throws.

let leafStart = -1;
let leafEnd = -1;

function walkPath(buf: Uint8Array, from: number, to: number, path: readonly number[], depth: number): void {
  cursor.at = from;
  const want = path[depth]!;
  const leaf = depth === path.length - 1;
  while (cursor.at < to) {
    const tag = readTag(buf, to);
    if ((tag & 7) !== WIRE_LEN) {
      skipValue(buf, tag & 7, to);
      continue;
    }
    const end = readLenEnd(buf, to);
    if (tag >>> 3 === want) {
      if (leaf) {
        leafStart = cursor.at;
        leafEnd = end;
      } else {
        walkPath(buf, cursor.at, end, path, depth + 1);
      }
    }
    cursor.at = end;
  }
}

function findLastPath(buf: Uint8Array, path: readonly number[]): boolean {
  leafStart = -1;
  leafEnd = -1;
  if (path.length === 0) return false;
  walkPath(buf, 0, buf.length, path, 0);
  return leafStart >= 0;
}

/**
 * Length of the last occurrence of the nested LEN field `path` (the one a
 * decoder keeps for a singular field), or -1 when there is none. Allocates
 * nothing; throws on malformed input like visitPath.
 */
export function lastPathLength(buf: Uint8Array, path: readonly number[]): number {
  return findLastPath(buf, path) ? leafEnd - leafStart : -1;
}

/** The payload of the last occurrence of the nested LEN field `path` (a view, no copy), or undefined. */
export function lastPathPayload(buf: Uint8Array, path: readonly number[]): Buffer | undefined {
  return findLastPath(buf, path) ? asBuffer(buf).subarray(leafStart, leafEnd) : undefined;
}
