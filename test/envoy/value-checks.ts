/**
 * Leaf checks for the Envoy config validator: proto3 JSON scalars, the
 * well-known types that have a scalar JSON form, and the subset of
 * protoc-gen-validate (PGV) rules Envoy enforces at load time that a static
 * bootstrap can trip over (required, numeric and duration bounds, lengths).
 *
 * Every check returns an error message or undefined; none throws.
 */
import type protobuf from 'protobufjs';

const INT32 = ['int32', 'sint32', 'sfixed32'];
const UINT32 = ['uint32', 'fixed32'];
const INT64 = ['int64', 'sint64', 'sfixed64'];
const UINT64 = ['uint64', 'fixed64'];
const FLOATS = ['double', 'float'];

export const SCALAR_TYPES = new Set([...INT32, ...UINT32, ...INT64, ...UINT64, ...FLOATS, 'bool', 'string', 'bytes']);

/** google.protobuf wrapper message -> the scalar type of its JSON form. */
export const WRAPPERS: Readonly<Record<string, string>> = {
  'google.protobuf.DoubleValue': 'double',
  'google.protobuf.FloatValue': 'float',
  'google.protobuf.Int64Value': 'int64',
  'google.protobuf.UInt64Value': 'uint64',
  'google.protobuf.Int32Value': 'int32',
  'google.protobuf.UInt32Value': 'uint32',
  'google.protobuf.BoolValue': 'bool',
  'google.protobuf.StringValue': 'string',
  'google.protobuf.BytesValue': 'bytes',
};

/** A value's kind and text, for error messages. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}

/** The numeric value of an integer in proto3 JSON (a number or a decimal string). */
function integerOf(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isInteger(v) ? v : undefined;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
  return undefined;
}

/** Checks a proto3 JSON scalar; `type` is the proto scalar type name. */
export function checkScalar(type: string, v: unknown): string | undefined {
  const inRange = (lo: number, hi: number, kind: string): string | undefined => {
    const n = integerOf(v);
    if (n === undefined) return `expected ${kind}, got ${describe(v)}`;
    return n < lo || n > hi ? `${kind} out of range: ${n}` : undefined;
  };
  if (INT32.includes(type)) return inRange(-(2 ** 31), 2 ** 31 - 1, 'int32');
  if (UINT32.includes(type)) return inRange(0, 2 ** 32 - 1, 'uint32');
  // 64-bit bounds are approximate (doubles); the exact edge never matters for a config.
  if (INT64.includes(type)) return inRange(-(2 ** 63), 2 ** 63, 'int64');
  if (UINT64.includes(type)) return inRange(0, 2 ** 64, 'uint64');
  if (FLOATS.includes(type)) {
    if (typeof v === 'number') return undefined;
    if (typeof v === 'string' && /^(NaN|-?Infinity|-?\d+(\.\d+)?([eE][-+]?\d+)?)$/.test(v)) return undefined;
    return `expected ${type}, got ${describe(v)}`;
  }
  if (type === 'bool') return typeof v === 'boolean' ? undefined : `expected bool, got ${describe(v)}`;
  if (type === 'string') return typeof v === 'string' ? undefined : `expected string, got ${describe(v)}`;
  if (type === 'bytes') {
    if (typeof v !== 'string') return `expected base64 bytes, got ${describe(v)}`;
    return /^[A-Za-z0-9+/_-]*={0,2}$/.test(v) ? undefined : `invalid base64 bytes ${JSON.stringify(v)}`;
  }
  return `unsupported scalar type ${type}`;
}

export interface DurationValue {
  readonly seconds: number;
  readonly nanos: number;
}

/** proto3 JSON Duration: "<seconds>[.<up to 9 digits>]s", e.g. "30s", "0.25s", "-1.5s". */
export function parseDuration(v: unknown): DurationValue | undefined {
  if (typeof v !== 'string') return undefined;
  const m = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/.exec(v);
  if (!m) return undefined;
  const sign = m[1] ? -1 : 1;
  const seconds = Number(m[2]);
  if (seconds > 315_576_000_000) return undefined;
  const nanos = Number((m[3] ?? '').padEnd(9, '0'));
  return { seconds: sign * seconds, nanos: sign * nanos };
}

const toNanos = (d: DurationValue): number => d.seconds * 1e9 + d.nanos;

/** JSON checks for well-known types with a scalar form; undefined when `name` is not one. */
export function checkScalarWellKnown(name: string, v: unknown): string | undefined | null {
  const wrapped = WRAPPERS[name];
  if (wrapped) {
    if (v !== null && typeof v === 'object') return `${name} takes a plain ${wrapped}, not ${describe(v)}`;
    return checkScalar(wrapped, v);
  }
  switch (name) {
    case 'google.protobuf.Duration':
      return parseDuration(v) ? undefined : `invalid duration ${describe(v)} (want e.g. "30s" or "0.25s")`;
    case 'google.protobuf.Timestamp':
      return typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)$/.test(v)
        ? undefined
        : `invalid RFC 3339 timestamp ${describe(v)}`;
    case 'google.protobuf.FieldMask':
      return typeof v === 'string' ? undefined : `expected a field mask string, got ${describe(v)}`;
    case 'google.protobuf.Empty':
      return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0
        ? undefined
        : `google.protobuf.Empty takes {}, got ${describe(v)}`;
    default:
      return null; // not a scalar-form well-known type
  }
}

type Rules = Record<string, unknown>;

function deepMerge(into: Rules, from: Rules): Rules {
  for (const [k, v] of Object.entries(from)) {
    const cur = into[k];
    if (cur && typeof cur === 'object' && v && typeof v === 'object' && !Array.isArray(v)) {
      deepMerge(cur as Rules, v as Rules);
    } else {
      into[k] = v;
    }
  }
  return into;
}

/** The field's `(validate.rules)` as one object, e.g. `{ uint32: { lte: 65535 } }`. */
export function pgvRules(field: protobuf.Field): Rules {
  const out: Rules = {};
  for (const opt of (field.parsedOptions ?? []) as Rules[]) {
    const r = opt['(validate.rules)'];
    if (r && typeof r === 'object') deepMerge(out, r as Rules);
  }
  return out;
}

/** True when PGV makes the field mandatory (message/duration/any/timestamp `required`). */
export function pgvRequired(rules: Rules): boolean {
  return ['message', 'duration', 'timestamp', 'any'].some((k) => (rules[k] as Rules | undefined)?.['required'] === true);
}

const num = (x: unknown): number | undefined =>
  typeof x === 'number' ? x : typeof x === 'string' && x.trim() !== '' && !Number.isNaN(Number(x)) ? Number(x) : undefined;

function bounds(r: Rules, value: number, show: (n: number) => string): string | undefined {
  const lt = num(r['lt']), lte = num(r['lte']), gt = num(r['gt']), gte = num(r['gte']);
  if (r['const'] !== undefined && num(r['const']) !== value) return `must be ${show(num(r['const']) ?? NaN)}`;
  // PGV treats lt < gt as an exclusive outside range; Envoy's protos do not use that form.
  if (lt !== undefined && !(value < lt)) return `must be < ${show(lt)}`;
  if (lte !== undefined && !(value <= lte)) return `must be <= ${show(lte)}`;
  if (gt !== undefined && !(value > gt)) return `must be > ${show(gt)}`;
  if (gte !== undefined && !(value >= gte)) return `must be >= ${show(gte)}`;
  return undefined;
}

function durationBound(r: Rules | undefined): number | undefined {
  if (!r || typeof r !== 'object') return undefined;
  return (num(r['seconds']) ?? 0) * 1e9 + (num(r['nanos']) ?? 0);
}

/**
 * PGV value rules for one present value (or the default of an absent plain
 * scalar, which PGV checks too). `kind` is the scalar type, or a well-known
 * message name for durations and wrappers.
 */
export function checkPgv(rules: Rules, kind: string, v: unknown): string | undefined {
  const scalar = WRAPPERS[kind] ?? kind;
  const r = rules[scalar] as Rules | undefined;
  if (kind === 'google.protobuf.Duration') {
    const d = rules['duration'] as Rules | undefined;
    const parsed = parseDuration(v);
    if (!d || !parsed) return undefined;
    const n = toNanos(parsed);
    const show = (x: number): string => `${x / 1e9}s`;
    const b = { lt: durationBound(d['lt'] as Rules), lte: durationBound(d['lte'] as Rules), gt: durationBound(d['gt'] as Rules), gte: durationBound(d['gte'] as Rules) };
    return bounds(b, n, show);
  }
  if (!r || typeof r !== 'object') return undefined;
  if (r['ignore_empty'] === true && (v === '' || v === 0 || v === '0')) return undefined;
  if (scalar === 'string') {
    if (typeof v !== 'string') return undefined;
    const len = [...v].length;
    const min = num(r['min_len']), max = num(r['max_len']);
    if (min !== undefined && len < min) return min === 1 ? 'must not be empty' : `must be at least ${min} characters`;
    if (max !== undefined && len > max) return `must be at most ${max} characters`;
    if (r['const'] !== undefined && v !== r['const']) return `must be ${JSON.stringify(r['const'])}`;
    return undefined;
  }
  if (scalar === 'bool') return r['const'] !== undefined && v !== r['const'] ? `must be ${String(r['const'])}` : undefined;
  if (scalar === 'bytes') return undefined;
  const n = num(v);
  return n === undefined ? undefined : bounds(r, n, String);
}
