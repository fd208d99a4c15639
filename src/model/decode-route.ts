/** Decoder for HTTPRoute (gateway.networking.k8s.io/v1 and v1beta1). */
import type { DecodeContext, Raw } from './decode-util.js';
import { HEADER_NAME, hostname, lenient, list, name, obj, oneOf, optInt, optNamespace, optString, parentRef, parentStatuses, port, reqString, sectionName } from './decode-util.js';
import type {
  BackendRef,
  HTTPPathMatch,
  HTTPRoute,
  HTTPRouteMatch,
  HTTPRouteRule,
  HTTPValueMatch,
  ObjectMeta,
  PathMatchType,
  ValueMatchType,
} from './types.js';
import { GROUP_CORE, type UnsupportedField } from './types.js';
import { backendFeatures, MATCH_FIELDS, refuseUnknown, RULE_FIELDS, ruleFeatures, SPEC_FIELDS, unknownAsUnsupported } from './decode-route-features.js';

const PATH_TYPES: readonly PathMatchType[] = ['Exact', 'PathPrefix', 'RegularExpression'];
const VALUE_TYPES: readonly ValueMatchType[] = ['Exact', 'RegularExpression'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH'];
const MAX_WEIGHT = 1_000_000;

export const DEFAULT_PATH_MATCH: HTTPPathMatch = { type: 'PathPrefix', value: '/' };
const DEFAULT_MATCH: HTTPRouteMatch = { path: DEFAULT_PATH_MATCH, headers: [], queryParams: [] };

function pathMatch(c: DecodeContext, v: unknown, path: string): HTTPPathMatch {
  const r = obj(c, v, path);
  if (!r) return DEFAULT_PATH_MATCH;
  const type = oneOf(c, r.type, `${path}.type`, PATH_TYPES, 'PathPrefix');
  const value = optString(c, r.value, `${path}.value`) ?? '/';
  // RegularExpression values are compiled (RE2, within the configured limits) when the snapshot is built.
  if (type !== 'RegularExpression' && !value.startsWith('/')) {
    c.error(`${path}.value`, `must start with "/", got "${value}"`);
  }
  return { type, value };
}

/** Header or query param matches. Per Gateway API, only the first entry for a given name counts. */
function valueMatches(c: DecodeContext, v: unknown, path: string, header: boolean): HTTPValueMatch[] {
  const out: HTTPValueMatch[] = [];
  const seen = new Set<string>();
  list(c, v, path, { max: 16 }).forEach((raw, i) => {
    const p = `${path}[${i}]`;
    const r = obj(c, raw, p, true) ?? {};
    const type = oneOf(c, r.type, `${p}.type`, VALUE_TYPES, 'Exact');
    let matchName = reqString(c, r.name, `${p}.name`);
    if (matchName !== '' && (matchName.length > 256 || !HEADER_NAME.test(matchName))) {
      c.error(`${p}.name`, `"${matchName}" is not a valid ${header ? 'header' : 'query parameter'} name`);
    }
    if (header) matchName = matchName.toLowerCase();
    const value = optString(c, r.value, `${p}.value`);
    if (value === undefined) c.error(`${p}.value`, 'required');
    if (seen.has(matchName)) return;
    seen.add(matchName);
    out.push({ type, name: matchName, value: value ?? '' });
  });
  return out;
}

function routeMatch(c: DecodeContext, raw: unknown, path: string, unsupported: UnsupportedField[]): HTTPRouteMatch {
  const r = obj(c, raw, path, true) ?? {};
  unknownAsUnsupported(r, path, MATCH_FIELDS, unsupported);
  const m = optString(c, r.method, `${path}.method`);
  let method: string | undefined;
  if (m !== undefined && m !== '') {
    method = m.toUpperCase();
    if (!METHODS.includes(method)) c.error(`${path}.method`, `must be one of ${METHODS.join(', ')}, got "${m}"`);
  }
  return {
    path: pathMatch(c, r.path, `${path}.path`),
    headers: valueMatches(c, r.headers, `${path}.headers`, true),
    queryParams: valueMatches(c, r.queryParams, `${path}.queryParams`, false),
    ...(method !== undefined ? { method } : {}),
  };
}

function backendRef(c: DecodeContext, raw: unknown, path: string, unsupported: UnsupportedField[]): BackendRef {
  const r = obj(c, raw, path, true) ?? {};
  backendFeatures(r, path, unsupported);
  const namespace = optNamespace(c, r.namespace, `${path}.namespace`);
  const p = port(c, r.port, `${path}.port`, false);
  return {
    group: optString(c, r.group, `${path}.group`) ?? GROUP_CORE,
    kind: optString(c, r.kind, `${path}.kind`) || 'Service',
    name: name(c, r.name, `${path}.name`),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(p !== undefined ? { port: p } : {}),
    weight: optInt(c, r.weight, `${path}.weight`, 0, MAX_WEIGHT) ?? 1,
  };
}

function rule(c: DecodeContext, raw: unknown, path: string): HTTPRouteRule {
  const r = obj(c, raw, path, true) ?? {};
  const ruleName = sectionName(c, r.name, `${path}.name`);
  const unsupported: UnsupportedField[] = [];
  unknownAsUnsupported(r, path, RULE_FIELDS, unsupported);
  const matches = list(c, r.matches, `${path}.matches`, { max: 64 }).map((m, i) => routeMatch(c, m, `${path}.matches[${i}]`, unsupported));
  const backendRefs = list(c, r.backendRefs, `${path}.backendRefs`).map((b, i) => backendRef(c, b, `${path}.backendRefs[${i}]`, unsupported));
  const requestHeaderModifier = ruleFeatures(c, r, path, unsupported);
  return {
    ...(ruleName !== undefined ? { name: ruleName } : {}),
    ...(requestHeaderModifier !== undefined ? { requestHeaderModifier } : {}),
    matches: matches.length > 0 ? matches : [DEFAULT_MATCH],
    backendRefs,
    unsupported,
  };
}

/** Gateway API caps status.parents at 32 entries. */
const MAX_ROUTE_PARENTS = 32;

function statusOf(c: DecodeContext, raw: unknown): HTTPRoute['status'] {
  const parents = lenient(c, (s) => parentStatuses(s, obj(s, raw, 'status')?.parents, 'status.parents', MAX_ROUTE_PARENTS));
  return parents === undefined ? {} : { parents };
}

export function decodeHTTPRoute(c: DecodeContext, raw: Raw, apiVersion: string, metadata: ObjectMeta): HTTPRoute {
  const spec = obj(c, raw.spec, 'spec') ?? {};
  refuseUnknown(c, spec, 'spec', SPEC_FIELDS);
  const hostnames: string[] = [];
  list(c, spec.hostnames, 'spec.hostnames', { max: 16 }).forEach((h, i) => {
    const s = hostname(c, h, `spec.hostnames[${i}]`);
    if (s !== undefined) hostnames.push(s);
  });
  const rulesRaw = list(c, spec.rules, 'spec.rules', { max: 16 });
  const rules = rulesRaw.map((r, i) => rule(c, r, `spec.rules[${i}]`));
  return {
    kind: 'HTTPRoute',
    apiVersion,
    metadata,
    spec: {
      parentRefs: list(c, spec.parentRefs, 'spec.parentRefs', { max: 32 }).map((p, i) => parentRef(c, p, `spec.parentRefs[${i}]`)),
      hostnames,
      // Gateway API CRD default when rules is absent: one rule matching PathPrefix "/" (no backends).
      rules: spec.rules === undefined || spec.rules === null ? [{ matches: [DEFAULT_MATCH], backendRefs: [], unsupported: [] }] : rules,
    },
    status: statusOf(c, raw.status),
  };
}
