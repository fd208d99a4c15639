/**
 * Small field readers shared by the per-kind decoders. Each reader takes the
 * raw value and its field path, records a FieldError on the context when the
 * value is unusable, and returns a normalised value (or undefined). Readers
 * never throw, so one pass reports every problem in an object.
 */
import type { Condition, FieldError, ObjectRef, ParentReference, ParentStatus } from './types.js';
import { GROUP_GATEWAY } from './types.js';

export type Raw = Record<string, unknown>;

/** An HTTP header (or query parameter) name: an RFC 7230 token. */
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

/** Text from another system as a message carries it: control characters (terminal escapes among them) escaped as \\uXXXX. */
export function escapeControl(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Text from another system cut to `max` characters (marked …), control characters escaped. */
export function cutText(s: string, max: number): string {
  return escapeControl(s.length > max ? `${s.slice(0, max)}…` : s);
}

export class DecodeContext {
  readonly errors: FieldError[] = [];
  constructor(
    readonly object: string,
    readonly origin?: string,
    readonly ref?: ObjectRef,
  ) {}

  error(path: string, message: string): void {
    this.errors.push({
      object: this.object,
      ...(this.ref !== undefined ? { ref: this.ref } : {}),
      path,
      message,
      ...(this.origin !== undefined ? { origin: this.origin } : {}),
    });
  }
}

export function isRecord(v: unknown): v is Raw {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/** An optional object; absent or null -> undefined. */
export function obj(c: DecodeContext, v: unknown, path: string, required = false): Raw | undefined {
  if (v === undefined || v === null) {
    if (required) c.error(path, 'required');
    return undefined;
  }
  if (!isRecord(v)) {
    c.error(path, `must be an object, got ${typeName(v)}`);
    return undefined;
  }
  return v;
}

/** An optional list; absent or null -> []. */
export function list(c: DecodeContext, v: unknown, path: string, opts: { required?: boolean; max?: number } = {}): unknown[] {
  if (v === undefined || v === null) {
    if (opts.required) c.error(path, 'required');
    return [];
  }
  if (!Array.isArray(v)) {
    c.error(path, `must be a list, got ${typeName(v)}`);
    return [];
  }
  if (opts.max !== undefined && v.length > opts.max) c.error(path, `must have at most ${opts.max} items, got ${v.length}`);
  return v;
}

export function optString(c: DecodeContext, v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    c.error(path, `must be a string, got ${typeName(v)}`);
    return undefined;
  }
  return v;
}

/** A required, non-empty string. Returns '' when missing so callers can keep going. */
export function reqString(c: DecodeContext, v: unknown, path: string): string {
  if (v === undefined || v === null || v === '') {
    c.error(path, 'required');
    return '';
  }
  return optString(c, v, path) ?? '';
}

export function optInt(c: DecodeContext, v: unknown, path: string, min: number, max: number): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    c.error(path, `must be an integer, got ${typeof v === 'number' ? v : typeName(v)}`);
    return undefined;
  }
  if (v < min || v > max) {
    c.error(path, `must be between ${min} and ${max}, got ${v}`);
    return undefined;
  }
  return v;
}

export function reqInt(c: DecodeContext, v: unknown, path: string, min: number, max: number): number {
  if (v === undefined || v === null) {
    c.error(path, 'required');
    return 0;
  }
  return optInt(c, v, path, min, max) ?? 0;
}

export function port(c: DecodeContext, v: unknown, path: string, required: boolean): number | undefined {
  return required ? reqInt(c, v, path, 1, 65535) : optInt(c, v, path, 1, 65535);
}

export function oneOf<T extends string>(c: DecodeContext, v: unknown, path: string, allowed: readonly T[], dflt: T): T {
  const s = optString(c, v, path);
  if (s === undefined || s === '') return dflt;
  if (!(allowed as readonly string[]).includes(s)) {
    c.error(path, `must be one of ${allowed.join(', ')}, got "${s}"`);
    return dflt;
  }
  return s as T;
}

/** A map of string to string (labels, annotations, matchLabels). */
export function stringMap(c: DecodeContext, v: unknown, path: string, opts: { required?: boolean; max?: number } = {}): Record<string, string> {
  const m = obj(c, v, path, opts.required);
  const out: Record<string, string> = {};
  if (!m) return out;
  const keys = Object.keys(m);
  if (opts.max !== undefined && keys.length > opts.max) c.error(path, `must have at most ${opts.max} entries, got ${keys.length}`);
  for (const k of keys) {
    const s = optString(c, m[k], `${path}.${k}`);
    if (s !== undefined) out[k] = s;
  }
  return out;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export type NameRule = 'subdomain' | 'label' | 'dns1035';

export function checkName(c: DecodeContext, s: string, path: string, rule: NameRule): void {
  if (s === '') return; // already reported as required
  const [re, max, what] =
    rule === 'subdomain'
      ? [DNS_SUBDOMAIN, 253, 'a lower-case RFC 1123 subdomain']
      : rule === 'label'
        ? [DNS_LABEL, 63, 'a lower-case RFC 1123 label']
        : [DNS1035_LABEL, 63, 'a lower-case RFC 1035 label (starting with a letter)'];
  if (s.length > max) c.error(path, `must be at most ${max} characters`);
  else if (!re.test(s)) c.error(path, `"${s}" must be ${what}`);
}

/** A required object name (references and metadata). */
export function name(c: DecodeContext, v: unknown, path: string, rule: NameRule = 'subdomain'): string {
  const s = reqString(c, v, path);
  checkName(c, s, path, rule);
  return s;
}

export function optNamespace(c: DecodeContext, v: unknown, path: string): string | undefined {
  const s = optString(c, v, path);
  if (s === undefined || s === '') return undefined;
  checkName(c, s, path, 'label');
  return s;
}

/** Gateway API SectionName: listener and rule names. */
export function sectionName(c: DecodeContext, v: unknown, path: string): string | undefined {
  const s = optString(c, v, path);
  if (s === undefined || s === '') return undefined;
  if (s.length > 253 || !DNS_LABEL.test(s)) c.error(path, `"${s}" must be a lower-case RFC 1123 label`);
  return s;
}

/** Gateway API hostname (precise or with a leading "*." wildcard). */
export function hostname(c: DecodeContext, v: unknown, path: string): string | undefined {
  const s = optString(c, v, path);
  if (s === undefined) return undefined;
  const bare = s.startsWith('*.') ? s.slice(2) : s;
  if (s.length > 253 || !DNS_SUBDOMAIN.test(bare)) {
    c.error(path, `"${s}" must be a lower-case DNS name, optionally prefixed with "*."`);
  }
  return s;
}

export function parentRef(c: DecodeContext, v: unknown, path: string): ParentReference {
  const r = obj(c, v, path, true) ?? {};
  const namespace = optNamespace(c, r.namespace, `${path}.namespace`);
  const section = sectionName(c, r.sectionName, `${path}.sectionName`);
  const p = port(c, r.port, `${path}.port`, false);
  return {
    group: optString(c, r.group, `${path}.group`) ?? GROUP_GATEWAY,
    kind: optString(c, r.kind, `${path}.kind`) || 'Gateway',
    name: name(c, r.name, `${path}.name`),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(section !== undefined ? { sectionName: section } : {}),
    ...(p !== undefined ? { port: p } : {}),
  };
}

const CONDITION_STATUS = ['True', 'False', 'Unknown'] as const;

export function conditions(c: DecodeContext, v: unknown, path: string, max?: number): Condition[] {
  return list(c, v, path, max !== undefined ? { max } : {}).map((raw, i) => {
    const p = `${path}[${i}]`;
    const r = obj(c, raw, p, true) ?? {};
    const cond: { -readonly [K in keyof Condition]: Condition[K] } = {
      type: reqString(c, r.type, `${p}.type`),
      status: oneOf(c, r.status, `${p}.status`, CONDITION_STATUS, 'Unknown'),
    };
    if (r.status === undefined || r.status === null || r.status === '') c.error(`${p}.status`, 'required');
    const reason = optString(c, r.reason, `${p}.reason`);
    const message = optString(c, r.message, `${p}.message`);
    const gen = optInt(c, r.observedGeneration, `${p}.observedGeneration`, 0, Number.MAX_SAFE_INTEGER);
    const ltt = optString(c, r.lastTransitionTime, `${p}.lastTransitionTime`);
    if (reason !== undefined) cond.reason = reason;
    if (message !== undefined) cond.message = message;
    if (gen !== undefined) cond.observedGeneration = gen;
    if (ltt !== undefined) cond.lastTransitionTime = ltt;
    return cond;
  });
}

export function parentStatuses(c: DecodeContext, v: unknown, path: string, max?: number): ParentStatus[] {
  return list(c, v, path, max !== undefined ? { max } : {}).map((raw, i) => {
    const p = `${path}[${i}]`;
    const r = obj(c, raw, p, true) ?? {};
    const controllerName = optString(c, r.controllerName, `${p}.controllerName`);
    return {
      parentRef: parentRef(c, r.parentRef, `${p}.parentRef`),
      ...(controllerName !== undefined ? { controllerName } : {}),
      conditions: conditions(c, r.conditions, `${p}.conditions`),
    };
  });
}

/**
 * Reads a part the router only reports on (another controller's status, say): any problem in it
 * makes the part unknown (undefined) instead of making the object invalid.
 */
export function lenient<T>(c: DecodeContext, read: (scratch: DecodeContext) => T): T | undefined {
  const scratch = new DecodeContext(c.object, c.origin, c.ref);
  const value = read(scratch);
  return scratch.errors.length === 0 ? value : undefined;
}
