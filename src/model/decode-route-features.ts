/**
 * The HTTPRoute fields mcip-router does not honour. The router never routes a
 * rule while silently dropping one of its features: a RequestHeaderModifier is
 * honoured (on the request headers answer to Envoy); every other filter, timeout,
 * retry, session persistence, per-backendRef filter or unknown field of a
 * rule is recorded as unsupported, and the snapshot refuses that rule
 * (Accepted=False, UnsupportedValue; its requests get HTTP 500).
 */
import type { DecodeContext, Raw } from './decode-util.js';
import { HEADER_NAME, list, obj, optString, reqString } from './decode-util.js';
import type { HeaderModifier, UnsupportedField } from './types.js';
import { DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER } from '../protocol/constants.js';

export const SPEC_FIELDS = ['parentRefs', 'hostnames', 'rules'] as const;
export const RULE_FIELDS = ['name', 'matches', 'filters', 'backendRefs', 'timeouts', 'retry', 'sessionPersistence'] as const;
export const MATCH_FIELDS = ['path', 'headers', 'queryParams', 'method'] as const;
export const BACKEND_FIELDS = ['group', 'kind', 'name', 'namespace', 'port', 'weight', 'filters'] as const;

/** Why each Gateway API feature is refused: what the ext_proc position cannot do. */
const WHY: Readonly<Record<string, string>> = {
  ResponseHeaderModifier: 'the router does not change response headers',
  RequestMirror: 'mirroring needs a second upstream request, which an ext_proc answer cannot make Envoy send',
  RequestRedirect: 'redirects are not answered by mcip-router',
  URLRewrite: 'path and host rewrites are not applied by mcip-router',
  ExtensionRef: 'mcip-router knows no extension filters',
  CORS: 'CORS is not answered by mcip-router',
  ExternalAuth: 'external authorization is not called by mcip-router',
  timeouts: "Envoy enforces its route's own timeouts; an ext_proc answer cannot set a per-request timeout",
  retry: "retries are made by Envoy's router, which an ext_proc answer cannot configure per request",
  sessionPersistence: 'the router picks a pool for each request; it keeps no session affinity',
  backendFilters: 'per-backendRef filters are not applied by mcip-router',
};

/** Edit distance (insertions, deletions, substitutions), for "did you mean". */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length]!;
}

/** The fields of `r` that `known` does not list, each with a message naming the closest known field. */
export function unknownFields(r: Raw, known: readonly string[]): { key: string; message: string }[] {
  const out: { key: string; message: string }[] = [];
  for (const key of Object.keys(r)) {
    if (known.includes(key)) continue;
    const lower = key.toLowerCase();
    const near = known.find((k) => k.toLowerCase() === lower || distance(k.toLowerCase(), lower) <= 2);
    out.push({ key, message: `unknown field "${key}"${near !== undefined ? ` (did you mean "${near}"?)` : ''}; mcip-router does not read it` });
  }
  return out;
}

/** Reports unknown fields as decode errors: the object is left out. */
export function refuseUnknown(c: DecodeContext, r: Raw, path: string, known: readonly string[]): void {
  for (const u of unknownFields(r, known)) c.error(`${path}.${u.key}`, u.message);
}

/** Records the unknown fields of a rule's part as unsupported on the rule. */
export function unknownAsUnsupported(r: Raw, path: string, known: readonly string[], out: UnsupportedField[]): void {
  for (const u of unknownFields(r, known)) out.push({ path: `${path}.${u.key}`, feature: `field ${u.key}`, message: u.message });
}

/** Set to something that asks for behaviour: an empty list or object asks for nothing. */
function present(v: unknown): boolean {
  if (v === undefined || v === null) return false;
  if (Array.isArray(v)) return v.length > 0;
  return typeof v !== 'object' || Object.keys(v).length > 0;
}

/**
 * Headers a RequestHeaderModifier may not touch: Envoy silently skips an ext_proc
 * mutation of host and x-envoy-* headers, and the destination headers steer routing
 * (the endpoint, and whether Envoy's route sends the request over TLS to a parent).
 */
function protectedHeader(name: string): boolean {
  return name === 'host' || name.startsWith('x-envoy-') || name.startsWith(DESTINATION_ENDPOINT_HEADER) || name === DESTINATION_KIND_HEADER;
}

/**
 * A header name a modifier may carry, lower-cased. Envoy refuses a whole ext_proc
 * answer holding an invalid name (set or remove) or a value with NUL, CR or LF:
 * every request of the rule would fail, so such a modifier is a decode error.
 */
function modifierHeaderName(c: DecodeContext, raw: unknown, path: string): string {
  const name = reqString(c, raw, path);
  if (name !== '' && (name.length > 256 || !HEADER_NAME.test(name))) c.error(path, `"${name}" is not a valid header name`);
  return name.toLowerCase();
}

/** NUL, CR or LF: what Envoy refuses in a header value. */
const INVALID_VALUE = /[\0\r\n]/;

/** A RequestHeaderModifier's config, or why it cannot be honoured. */
function headerModifier(c: DecodeContext, v: unknown, path: string): HeaderModifier | string {
  const m = obj(c, v, path, true) ?? {};
  const pairs = (key: 'set' | 'add'): { name: string; value: string }[] =>
    list(c, m[key], `${path}.${key}`, { max: 16 }).map((raw, i) => {
      const p = `${path}.${key}[${i}]`;
      const h = obj(c, raw, p, true) ?? {};
      const name = modifierHeaderName(c, h.name, `${p}.name`);
      const value = optString(c, h.value, `${p}.value`);
      if (value === undefined) c.error(`${p}.value`, 'required');
      else if (INVALID_VALUE.test(value)) c.error(`${p}.value`, 'a header value may not hold NUL, CR or LF');
      return { name, value: value ?? '' };
    });
  const set = pairs('set');
  const add = pairs('add');
  const remove = list(c, m.remove, `${path}.remove`, { max: 16 }).map((raw, i) => modifierHeaderName(c, raw, `${path}.remove[${i}]`));
  const touched = [...set.map((h) => h.name), ...add.map((h) => h.name), ...remove].filter(protectedHeader);
  if (touched.length > 0) {
    return `filter type RequestHeaderModifier: header ${touched.join(', ')} cannot be changed (Envoy skips host and x-envoy-* mutations from an ext_proc server, and the destination headers are the router's)`;
  }
  return { set, add, remove };
}

/** The filters, timeouts, retry and sessionPersistence of rule `r` (at `path`): a RequestHeaderModifier is returned, the rest refused. */
export function ruleFeatures(c: DecodeContext, r: Raw, path: string, out: UnsupportedField[]): HeaderModifier | undefined {
  let modifier: HeaderModifier | undefined;
  if (Array.isArray(r.filters)) {
    r.filters.forEach((raw, k) => {
      const p = `${path}.filters[${k}]`;
      const f = obj(c, raw, p, true);
      if (f === undefined) return;
      const type = optString(c, f.type, `${p}.type`);
      if (type === undefined || type === '') {
        c.error(`${p}.type`, 'required');
        return;
      }
      if (type === 'RequestHeaderModifier') {
        const m = headerModifier(c, f.requestHeaderModifier, `${p}.requestHeaderModifier`);
        if (typeof m !== 'string' && modifier === undefined) {
          modifier = m;
          return;
        }
        const why = typeof m === 'string' ? m : 'filter type RequestHeaderModifier: given more than once';
        out.push({ path: p, feature: `filter ${type}`, message: why });
        return;
      }
      const why = WHY[type] ?? 'mcip-router does not know this filter type';
      out.push({ path: p, feature: `filter ${type}`, message: `filter type ${type}: ${why}` });
    });
  } else if (present(r.filters)) {
    c.error(`${path}.filters`, 'must be a list');
  }
  for (const field of ['timeouts', 'retry', 'sessionPersistence'] as const) {
    if (present(r[field])) out.push({ path: `${path}.${field}`, feature: field, message: `${field}: ${WHY[field]!}` });
  }
  return modifier;
}

/** A backendRef's own filters and unknown fields, refused on its rule. */
export function backendFeatures(r: Raw, path: string, out: UnsupportedField[]): void {
  if (present(r.filters)) out.push({ path: `${path}.filters`, feature: 'backendRef filters', message: `backendRef filters: ${WHY.backendFilters!}` });
  unknownAsUnsupported(r, path, BACKEND_FIELDS, out);
}
