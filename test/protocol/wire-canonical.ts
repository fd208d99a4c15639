// What a protobuf parser that merges (Envoy's C++ one) makes of a message, as bytes
// protobufjs reads the same way: every singular embedded message in one occurrence
// (the payloads of its occurrences concatenated, recursively canonicalized), a oneof
// holding only its last member (another member seen clears the earlier one), repeated
// fields and map entries kept as separate occurrences in order, scalars as they are
// (protobufjs keeps the last, as the spec says). protobufjs replaces a singular
// message rather than merging it, so it is an oracle for split encodings only once
// they are canonical. Built from the protobufjs types (no field numbers here).
import protobuf from 'protobufjs';
import { decodeResponse, messageType } from '../../src/protocol/codec.js';
import { PROCESSING_RESPONSE_TYPE } from '../../src/protocol/constants.js';
import { STREAMED_IMMEDIATE_RESPONSE } from '../../src/protocol/response-fields.js';

const LEN = 2;

export type FieldKind = 'message' | 'repeated' | 'scalar';

export interface FieldInfo {
  readonly name: string;
  readonly kind: FieldKind;
  /** The wire type the field is parsed with (another one makes it an unknown field). */
  readonly wireType: number;
  /** A message field's (or map entry's) schema. */
  readonly schema?: Schema;
  /** The oneof it is a member of. */
  readonly oneof?: string;
  /** A string or bytes field (a LEN scalar). */
  readonly text?: boolean;
}

export interface Schema {
  readonly name: string;
  readonly fields: ReadonlyMap<number, FieldInfo>;
  /** The protobufjs type, when there is one (not for map entries or opaque members). */
  readonly type?: protobuf.Type;
}

const schemas = new Map<string, Schema>();

function scalarWireType(type: string, resolved: protobuf.ReflectionObject | null): number {
  if (resolved instanceof protobuf.Enum) return 0;
  const wt = (protobuf.types.basic as Record<string, number | undefined>)[type];
  if (wt === undefined) throw new Error(`no wire type for ${type}`);
  return wt;
}

function fieldInfo(f: protobuf.Field): FieldInfo {
  const oneof = f.partOf?.name;
  if (f.map) {
    const mf = f as unknown as protobuf.MapField;
    const key: FieldInfo = { name: 'key', kind: 'scalar', wireType: scalarWireType(mf.keyType, null), text: mf.keyType === 'string' };
    const value: FieldInfo =
      f.resolvedType instanceof protobuf.Type
        ? { name: 'value', kind: 'message', wireType: LEN, schema: schemaOf(f.resolvedType) }
        : { name: 'value', kind: 'scalar', wireType: scalarWireType(f.type, f.resolvedType), text: f.type === 'string' || f.type === 'bytes' };
    const entry: Schema = { name: `${f.fullName}Entry`, fields: new Map([[1, key], [2, value]]) };
    return { name: f.name, kind: 'repeated', wireType: LEN, schema: entry };
  }
  if (f.resolvedType instanceof protobuf.Type) {
    return { name: f.name, kind: f.repeated ? 'repeated' : 'message', wireType: LEN, schema: schemaOf(f.resolvedType), ...(oneof ? { oneof } : {}) };
  }
  const text = f.type === 'string' || f.type === 'bytes';
  // Repeated scalars are kept as they are (packed or not): nothing to merge.
  return { name: f.name, kind: f.repeated ? 'repeated' : 'scalar', wireType: f.repeated && !text ? -1 : scalarWireType(f.type, f.resolvedType), text, ...(oneof ? { oneof } : {}) };
}

/** The schema of a protobufjs type (memoized; recursive types resolve lazily). */
export function schemaOf(type: protobuf.Type): Schema {
  const known = schemas.get(type.fullName);
  if (known) return known;
  const fields = new Map<number, FieldInfo>();
  const schema: Schema = { name: type.fullName, fields, type };
  schemas.set(type.fullName, schema);
  for (const f of type.fieldsArray) fields.set(f.id, fieldInfo(f));
  return schema;
}

/**
 * ProcessingResponse as Envoy has it: streamed_immediate_response is a member of the
 * response oneof that our protos leave out (an opaque message here: merged, not read).
 */
export function responseSchema(): Schema {
  const base = schemaOf(messageType(PROCESSING_RESPONSE_TYPE));
  const fields = new Map(base.fields);
  const opaque: Schema = { name: 'streamed_immediate_response', fields: new Map() };
  fields.set(STREAMED_IMMEDIATE_RESPONSE, { name: 'streamed_immediate_response', kind: 'message', wireType: LEN, schema: opaque, oneof: 'response' });
  return { ...base, fields };
}

/** One field occurrence on the wire. */
export interface Occurrence {
  readonly no: number;
  readonly wireType: number;
  /** Tag and value, as sent. */
  readonly raw: Buffer;
  /** A LEN field's payload. */
  readonly payload?: Buffer;
}

/** The field occurrences of a message, in order. Throws on malformed input. */
export function occurrences(buf: Buffer): Occurrence[] {
  const r = protobuf.Reader.create(buf);
  const out: Occurrence[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const tag = r.uint32();
    const no = tag >>> 3;
    const wireType = tag & 7;
    if (no === 0) throw new RangeError('field number 0');
    if (wireType === LEN) {
      const len = r.uint32();
      const from = r.pos;
      if (from + len > r.len) throw new RangeError('length beyond end');
      r.pos = from + len;
      out.push({ no, wireType, raw: buf.subarray(start, r.pos), payload: buf.subarray(from, r.pos) });
    } else {
      r.skipType(wireType);
      if (r.pos > r.len) throw new RangeError('value beyond end');
      out.push({ no, wireType, raw: buf.subarray(start, r.pos) });
    }
  }
  return out;
}

/** A LEN field: tag, length, payload. */
export function lenOccurrence(no: number, payload: Uint8Array): Buffer {
  const w = protobuf.Writer.create();
  w.uint32(((no << 3) | LEN) >>> 0).bytes(payload);
  return Buffer.from(w.finish());
}

/** The field an occurrence is parsed as (undefined: an unknown field, as is a wire type mismatch). */
export function parsedAs(schema: Schema, o: Occurrence): FieldInfo | undefined {
  const f = schema.fields.get(o.no);
  if (f === undefined) return undefined;
  if (f.wireType === -1) return f;
  return f.wireType === o.wireType ? f : undefined;
}

/** The occurrences a oneof keeps: those of its last member after the last occurrence of another one. */
function oneofSurvivors(schema: Schema, occ: readonly Occurrence[]): Set<number> {
  const dead = new Set<number>();
  const lastOf = new Map<string, { no: number; at: number }>();
  occ.forEach((o, at) => {
    const f = parsedAs(schema, o);
    if (f?.oneof === undefined) return;
    const last = lastOf.get(f.oneof);
    if (last !== undefined && last.no !== o.no) {
      // Another member: everything of this oneof seen so far is cleared.
      for (let i = 0; i < at; i++) {
        const g = parsedAs(schema, occ[i]!);
        if (g?.oneof === f.oneof) dead.add(i);
      }
    }
    lastOf.set(f.oneof, { no: o.no, at });
  });
  return dead;
}

/** The canonical encoding of a message of `schema` (see the file comment). */
export function canonicalize(buf: Buffer, schema: Schema): Buffer {
  const occ = occurrences(buf);
  const dead = oneofSurvivors(schema, occ);
  const merged = new Map<number, Buffer[]>();
  for (let i = 0; i < occ.length; i++) {
    const o = occ[i]!;
    if (dead.has(i)) continue;
    const f = parsedAs(schema, o);
    if (f?.kind === 'message') {
      const parts = merged.get(o.no);
      if (parts) parts.push(o.payload!);
      else merged.set(o.no, [o.payload!]);
    }
  }
  const out: Buffer[] = [];
  for (let i = 0; i < occ.length; i++) {
    const o = occ[i]!;
    if (dead.has(i)) continue;
    const f = parsedAs(schema, o);
    if (f?.kind === 'message') {
      const parts = merged.get(o.no);
      if (parts === undefined) continue; // already emitted at its first occurrence
      merged.delete(o.no);
      out.push(lenOccurrence(o.no, canonicalize(Buffer.concat(parts), f.schema!)));
    } else if (f?.kind === 'repeated' && f.schema !== undefined && o.wireType === LEN) {
      out.push(lenOccurrence(o.no, canonicalize(o.payload!, f.schema)));
    } else {
      out.push(o.raw);
    }
  }
  return Buffer.concat(out);
}

const RESPONSE = responseSchema();

/** A ProcessingResponse as Envoy parses it, in bytes protobufjs decodes to the same. */
export function canonicalResponse(buf: Buffer): Buffer {
  return canonicalize(buf, RESPONSE);
}

/** What Envoy makes of a ProcessingResponse, as JSON. */
export const meaning = (msg: Buffer): unknown => (decodeResponse(canonicalResponse(msg)) as unknown as { toJSON(): unknown }).toJSON();
