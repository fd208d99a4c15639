/**
 * Conversions between plain JSON values and google.protobuf.Struct/Value as
 * protobufjs represents them (camelCase Value members), for dynamic_metadata
 * and metadata_context.
 */
import type { ListValue, Struct, Value } from './messages.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/** A JSON value as a google.protobuf.Value (undefined object members are dropped). */
export function toValue(v: JsonValue): Value {
  if (v === null) return { nullValue: 0 };
  switch (typeof v) {
    case 'boolean':
      return { boolValue: v };
    case 'number':
      return { numberValue: v };
    case 'string':
      return { stringValue: v };
  }
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v) };
}

/** A JSON object as a google.protobuf.Struct. */
export function toStruct(obj: JsonObject): Struct {
  const fields: Record<string, Value> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined) fields[k] = toValue(v);
  }
  return { fields };
}

/** A google.protobuf.Value as JSON; an unset Value reads as null. */
export function fromValue(v: Value | null | undefined): JsonValue {
  if (!v) return null;
  // Decoded messages answer `kind` (a prototype getter; their unset members read as defaults);
  // plain objects are told apart by which member is present.
  const kind = 'kind' in v ? v.kind : presentKind(v);
  switch (kind) {
    case 'boolValue':
      return v.boolValue ?? false;
    case 'numberValue':
      return v.numberValue ?? 0;
    case 'stringValue':
      return v.stringValue ?? '';
    case 'structValue':
      return fromStruct(v.structValue);
    case 'listValue':
      return fromList(v.listValue);
    default:
      return null;
  }
}

function presentKind(v: Value): Value['kind'] {
  if (v.stringValue !== undefined && v.stringValue !== null) return 'stringValue';
  if (v.numberValue !== undefined && v.numberValue !== null) return 'numberValue';
  if (v.boolValue !== undefined && v.boolValue !== null) return 'boolValue';
  if (v.structValue) return 'structValue';
  if (v.listValue) return 'listValue';
  return 'nullValue';
}

function fromList(l: ListValue | null | undefined): JsonValue[] {
  return (l?.values ?? []).map(fromValue);
}

/** A google.protobuf.Struct as a JSON object; null/undefined reads as {}. */
export function fromStruct(s: Struct | null | undefined): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s?.fields ?? {})) out[k] = fromValue(v);
  return out;
}
