/**
 * The compiled match table and the per-request matcher.
 *
 * Precedence (Gateway API, continuing on ties):
 *  1. hostname bucket: exact host, then wildcard suffixes longest first, then
 *     routes without hostnames; a bucket with no matching rule falls through to
 *     the next (precedence, not exclusivity);
 *  2. path: Exact, then PathPrefix (longer prefix first), then
 *     RegularExpression (the spec leaves regex precedence to implementations;
 *     we rank it last so an explicit path always beats a pattern, and regexes
 *     tie among themselves);
 *  3. a method match; 4. more header matches; 5. more query param matches;
 *  6. oldest route creationTimestamp (routes without one sort last);
 *  7. route "namespace/name" alphabetically; 8. rule order; 9. match order.
 *
 * Regexes are RE2 (linear time, see route-regex.ts), compiled once per
 * snapshot, and must match the whole value (Envoy safe_regex semantics).
 */
import type { HTTPRouteMatch, HTTPValueMatch } from '../model/types.js';
import type { AttachedRoute } from './attach.js';
import { ROUTE_REASONS, routeStatus } from './context.js';
import { isWildcard } from './hostname.js';
import { compileRouteRegex, type RegexLimits, type RouteRegex } from './route-regex.js';
import type { Diagnostic, MatchResult, MatchTable, RequestAttributes, RouteRule, RoutingSnapshot } from './types.js';

const PATH_EXACT = 0;
const PATH_PREFIX = 1;
const PATH_REGEX = 2;

interface ValueMatcher {
  readonly name: string;
  readonly exact?: string;
  readonly regex?: RouteRegex;
}

interface CompiledMatch {
  readonly rule: RouteRule;
  /** Preallocated, so a match allocates nothing. */
  readonly result: MatchResult;
  readonly pathKind: number;
  /** Exact value, or prefix without its trailing slash ("" for "/"). */
  readonly pathValue: string;
  readonly pathRegex?: RouteRegex;
  readonly method?: string;
  readonly headers: readonly ValueMatcher[];
  readonly query: readonly ValueMatcher[];
  /** Sort keys. */
  readonly created: number;
  readonly routeKey: string;
  readonly ruleIndex: number;
  readonly matchIndex: number;
}

interface CompiledTable extends MatchTable {
  readonly exact: ReadonlyMap<string, readonly CompiledMatch[]>;
  /** Suffixes like ".example.com", longest first. */
  readonly wildcards: readonly { readonly suffix: string; readonly entries: readonly CompiledMatch[] }[];
  readonly any: readonly CompiledMatch[];
}

/** A compiled rule of an attached route, ready for the table. */
export interface TableRule {
  readonly attached: AttachedRoute;
  readonly rule: RouteRule;
  readonly matches: readonly HTTPRouteMatch[];
}

function compileRegex(source: string, limits: RegexLimits, report: (message: string) => void): RouteRegex | undefined {
  const c = compileRouteRegex(source, limits);
  if (c.ok) return c.regex;
  report(`${c.message}; this match never matches`);
  return undefined;
}

function compileValues(list: readonly HTTPValueMatch[], lower: boolean, limits: RegexLimits, report: (m: string) => void): ValueMatcher[] | undefined {
  const out: ValueMatcher[] = [];
  for (const v of list) {
    const name = lower ? v.name.toLowerCase() : v.name;
    if (out.some((o) => o.name === name)) continue; // Gateway API: only the first entry per name counts
    if (v.type === 'RegularExpression') {
      const regex = compileRegex(v.value, limits, report);
      if (regex === undefined) return undefined;
      out.push({ name, regex });
    } else {
      out.push({ name, exact: v.value });
    }
  }
  return out;
}

function compileMatch(
  t: TableRule,
  m: HTTPRouteMatch,
  matchIndex: number,
  limits: RegexLimits,
  report: (path: string, message: string) => void,
): CompiledMatch | undefined {
  const path = `spec.rules[${t.rule.index}].matches[${matchIndex}]`;
  const route = t.attached.route;
  const created = route.metadata.creationTimestamp ? Date.parse(route.metadata.creationTimestamp) : NaN;
  let pathKind = PATH_PREFIX;
  let pathValue = m.path.value;
  let pathRegex: RouteRegex | undefined;
  if (m.path.type === 'Exact') pathKind = PATH_EXACT;
  else if (m.path.type === 'RegularExpression') {
    pathKind = PATH_REGEX;
    pathRegex = compileRegex(m.path.value, limits, (msg) => report(`${path}.path.value`, msg));
    if (pathRegex === undefined) return undefined;
  } else {
    pathValue = pathValue.replace(/\/+$/, '');
  }
  const headers = compileValues(m.headers, true, limits, (msg) => report(`${path}.headers`, msg));
  const query = compileValues(m.queryParams, false, limits, (msg) => report(`${path}.queryParams`, msg));
  if (headers === undefined || query === undefined) return undefined;
  return {
    rule: t.rule,
    result: { type: 'matched', rule: t.rule },
    pathKind,
    pathValue,
    ...(pathRegex !== undefined ? { pathRegex } : {}),
    ...(m.method !== undefined ? { method: m.method.toUpperCase() } : {}),
    headers,
    query,
    created: Number.isNaN(created) ? Number.POSITIVE_INFINITY : created,
    routeKey: `${route.metadata.namespace}/${route.metadata.name}`,
    ruleIndex: t.rule.index,
    matchIndex,
  };
}

/** Negative when `a` takes precedence over `b`. */
function comparePrecedence(a: CompiledMatch, b: CompiledMatch): number {
  return (
    a.pathKind - b.pathKind ||
    (a.pathKind === PATH_PREFIX ? b.pathValue.length - a.pathValue.length : 0) ||
    (a.method !== undefined ? 0 : 1) - (b.method !== undefined ? 0 : 1) ||
    b.headers.length - a.headers.length ||
    b.query.length - a.query.length ||
    (a.created === b.created ? 0 : a.created < b.created ? -1 : 1) ||
    (a.routeKey === b.routeKey ? 0 : a.routeKey < b.routeKey ? -1 : 1) ||
    a.ruleIndex - b.ruleIndex ||
    a.matchIndex - b.matchIndex
  );
}

/** Builds the hostname buckets, each sorted by precedence. Invalid matches are reported and dropped. */
export function compileMatchTable(
  rules: readonly TableRule[],
  localCluster: string,
  regexLimits: RegexLimits,
  report: (d: Diagnostic) => void,
): MatchTable {
  const exact = new Map<string, CompiledMatch[]>();
  const wild = new Map<string, CompiledMatch[]>();
  const any: CompiledMatch[] = [];
  const push = (map: Map<string, CompiledMatch[]>, key: string, m: CompiledMatch): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [m]);
    else list.push(m);
  };
  for (const t of rules) {
    const r = t.attached.route.metadata;
    const reportAt = (path: string, message: string): void =>
      report({
        severity: 'error',
        subject: `${localCluster}: HTTPRoute ${r.namespace}/${r.name}`,
        path,
        reason: ROUTE_REASONS.unsupportedValue,
        message,
        status: routeStatus(r, 'Accepted'),
      });
    t.matches.forEach((m, i) => {
      const c = compileMatch(t, m, i, regexLimits, reportAt);
      if (c === undefined) return;
      if (t.attached.hostnames.length === 0) any.push(c);
      for (const h of t.attached.hostnames) {
        if (isWildcard(h)) push(wild, h.slice(1), c);
        else push(exact, h, c);
      }
    });
  }
  for (const list of exact.values()) list.sort(comparePrecedence);
  const wildcards = [...wild.entries()]
    .map(([suffix, entries]) => ({ suffix, entries: entries.sort(comparePrecedence) }))
    .sort((a, b) => b.suffix.length - a.suffix.length || (a.suffix < b.suffix ? -1 : 1));
  any.sort(comparePrecedence);
  const table: CompiledTable = { kind: 'match-table', exact, wildcards, any };
  return table;
}

/** Per-call scratch (matchRequest is synchronous, so one module-level instance is safe). */
const scratch: { path: string; query: Map<string, string> | undefined } = { path: '', query: undefined };
const UPPER = /[A-Z]/;

function hostOf(authority: string): string {
  let end = authority.length;
  if (authority.charCodeAt(0) === 91 /* [ */) {
    const close = authority.indexOf(']');
    if (close > 0) end = close + 1;
  } else {
    const colon = authority.lastIndexOf(':');
    if (colon >= 0) end = colon;
  }
  if (end > 0 && authority.charCodeAt(end - 1) === 46 /* . */) end--;
  const host = end === authority.length ? authority : authority.slice(0, end);
  return UPPER.test(host) ? host.toLowerCase() : host;
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function parseQuery(path: string, start: number): Map<string, string> {
  const out = new Map<string, string>();
  if (start < 0) return out;
  for (const part of path.slice(start + 1).split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = decode(eq < 0 ? part : part.slice(0, eq));
    if (!out.has(name)) out.set(name, eq < 0 ? '' : decode(part.slice(eq + 1)));
  }
  return out;
}

function valueOk(m: ValueMatcher, value: string | undefined): boolean {
  if (value === undefined) return false;
  return m.regex !== undefined ? m.regex.matches(value) : value === m.exact;
}

function matches(m: CompiledMatch, req: RequestAttributes, pathLen: number, queryStart: number): boolean {
  const p = req.path;
  const v = m.pathValue;
  if (m.pathKind === PATH_EXACT) {
    if (pathLen !== v.length || !p.startsWith(v)) return false;
  } else if (m.pathKind === PATH_PREFIX) {
    if (pathLen < v.length || !p.startsWith(v)) return false;
    if (pathLen > v.length && p.charCodeAt(v.length) !== 47 /* / */) return false;
  } else {
    if (scratch.path === '') scratch.path = pathLen === p.length ? p : p.slice(0, pathLen);
    if (!m.pathRegex!.matches(scratch.path)) return false;
  }
  if (m.method !== undefined && req.method !== m.method) return false;
  for (const h of m.headers) if (!valueOk(h, req.header(h.name))) return false;
  if (m.query.length > 0) {
    if (scratch.query === undefined) scratch.query = parseQuery(p, queryStart);
    for (const q of m.query) if (!valueOk(q, scratch.query.get(q.name))) return false;
  }
  return true;
}

function first(list: readonly CompiledMatch[] | undefined, req: RequestAttributes, pathLen: number, queryStart: number): MatchResult | undefined {
  if (list === undefined) return undefined;
  for (const m of list) if (matches(m, req, pathLen, queryStart)) return m.result;
  return undefined;
}

const NO_ROUTE: MatchResult = { type: 'no-route' };

/** Finds the rule serving a request, by Gateway API precedence. */
export function matchRequest(snapshot: RoutingSnapshot, req: RequestAttributes): MatchResult {
  const table = snapshot.table as CompiledTable;
  const host = hostOf(req.authority);
  const path = req.path;
  const q = path.indexOf('?');
  const hash = path.indexOf('#');
  const pathLen = q >= 0 ? q : hash >= 0 ? hash : path.length;
  scratch.path = '';
  scratch.query = undefined;
  try {
    let found = first(table.exact.get(host), req, pathLen, q);
    if (found === undefined) {
      for (const w of table.wildcards) {
        if (host.length > w.suffix.length && host.endsWith(w.suffix)) {
          found = first(w.entries, req, pathLen, q);
          if (found !== undefined) break;
        }
      }
    }
    found ??= first(table.any, req, pathLen, q);
    return found ?? NO_ROUTE;
  } finally {
    scratch.path = '';
    scratch.query = undefined;
  }
}
