/**
 * Minimal protobuf wire-format surgery on encoded messages. Fields that are
 * not touched are copied byte for byte, so fields our protos do not declare
 * (newer Envoy or EPP fields) survive a rewrite, which a protobufjs
 * decode + encode would drop.
 */
import protobuf from 'protobufjs';

export const WIRE_VARINT = 0;
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

// ---------------------------------------------------------------------------
// Allocation-free lookup for the request path: the last occurrence of a nested
// LEN field, found by walking offsets (no Reader, no field list, no views until
// the leaf). Same reading as visitPath: every level it enters is scanned to its
// end and malformed input throws.

/** Read position of the walk (the walk is synchronous and never re-entered). */
let at = 0;
let leafStart = -1;
let leafEnd = -1;

/**
 * A tag or length varint's low 32 bits, advancing `at`. Read exactly as
 * protobufjs' Reader.uint32 reads it (past 5 bytes it takes the 10-byte
 * encoding as given), so this walk and the router's other readers agree on
 * every input, malformed ones included.
 */
function readUint32(buf: Uint8Array, limit: number): number {
  let value = 0;
  for (let i = 0; i < 5; i++) {
    if (at >= limit) throw new RangeError('protobuf: truncated varint');
    const b = buf[at++]!;
    value |= (b & 0x7f) << (7 * i);
    if (b < 0x80) return value >>> 0;
  }
  at += 5;
  if (at > limit) throw new RangeError('protobuf: truncated varint');
  return value >>> 0;
}

/** Skips a varint value (up to 10 bytes, each with its continuation bit), advancing `at`. */
function skipVarint(buf: Uint8Array, limit: number): void {
  for (let i = 0; i < 10; i++) {
    if (at >= limit) throw new RangeError('protobuf: truncated varint');
    if (buf[at++]! < 0x80) return;
  }
  throw new RangeError('protobuf: varint longer than 10 bytes');
}

/**
 * Skips the value of a non-LEN field whose tag was just read. Groups nest at
 * most protobufjs' recursion limit deep, as its Reader.skipType has it (a run of
 * start-group tags would otherwise recurse until the stack overflows).
 */
function skipValue(buf: Uint8Array, wireType: number, limit: number, depth = 0): void {
  if (depth > protobuf.Reader.recursionLimit) throw new RangeError('protobuf: groups nested too deeply');
  switch (wireType) {
    case WIRE_VARINT:
      skipVarint(buf, limit);
      return;
    case 1:
      at += 8;
      break;
    case 5:
      at += 4;
      break;
    case 3: {
      // A group: fields up to an end-group tag (as protobufjs skips it: the end tag's number is not checked).
      for (;;) {
        const wt = readUint32(buf, limit) & 7;
        if (wt === 4) return;
        if (wt === WIRE_LEN) {
          const len = readUint32(buf, limit);
          at += len;
          if (at > limit) throw new RangeError('protobuf: length beyond end');
        } else skipValue(buf, wt, limit, depth + 1);
      }
    }
    default:
      throw new RangeError(`protobuf: invalid wire type ${wireType}`);
  }
  if (at > limit) throw new RangeError('protobuf: value beyond end');
}

function walkPath(buf: Uint8Array, from: number, to: number, path: readonly number[], depth: number): void {
  at = from;
  const want = path[depth]!;
  const leaf = depth === path.length - 1;
  while (at < to) {
    const tag = readUint32(buf, to);
    const no = tag >>> 3;
    const wireType = tag & 7;
    if (no === 0) throw new RangeError('protobuf: field number 0');
    if (wireType !== WIRE_LEN) {
      skipValue(buf, wireType, to);
      continue;
    }
    const len = readUint32(buf, to);
    const start = at;
    const end = start + len;
    if (end > to) throw new RangeError('protobuf: length beyond end');
    if (no === want) {
      if (leaf) {
        leafStart = start;
        leafEnd = end;
      } else {
        walkPath(buf, start, end, path, depth + 1);
      }
    }
    at = end;
  }
}

function findLast(buf: Uint8Array, path: readonly number[]): boolean {
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
  return findLast(buf, path) ? leafEnd - leafStart : -1;
}

/** The payload of the last occurrence of the nested LEN field `path` (a view, no copy), or undefined. */
export function lastPathPayload(buf: Uint8Array, path: readonly number[]): Buffer | undefined {
  return findLast(buf, path) ? asBuffer(buf).subarray(leafStart, leafEnd) : undefined;
}
