/**
 * Label selectors as kube-apiserver parses them (the `labelSelector` query of
 * list and watch): comma-separated requirements, each `key=value`,
 * `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key` or
 * `!key`; all must hold. `!=` and `notin` also hold for an object without
 * the label. A selector that does not parse is a 400 Bad Request.
 */
import { ApiError } from './kube-apiserver-store.js';

export type LabelMatcher = (labels: Readonly<Record<string, unknown>> | undefined) => boolean;

type Requirement = (labels: Readonly<Record<string, unknown>>) => boolean;

const KEY = String.raw`(?:[a-z0-9A-Z.-]+/)?[a-zA-Z0-9](?:[-a-zA-Z0-9_.]*[a-zA-Z0-9])?`;
const VALUE = String.raw`(?:[a-zA-Z0-9](?:[-a-zA-Z0-9_.]*[a-zA-Z0-9])?)?`;
const EQUALITY = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s+\\(([^)]*)\\)$`);
const EXISTS = new RegExp(`^(!?)\\s*(${KEY})$`);

/** Splits on commas outside parentheses. */
function split(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(selector.slice(start));
  return parts.map((p) => p.trim());
}

function requirement(text: string, selector: string): Requirement {
  let m = EQUALITY.exec(text);
  if (m) {
    const [, key, op, want] = m as unknown as [string, string, string, string];
    return op === '!=' ? (l) => l[key] !== want : (l) => l[key] === want;
  }
  m = SET.exec(text);
  if (m) {
    const key = m[1]!;
    const values = new Set(m[3]!.split(',').map((v) => v.trim()));
    if ([...values].some((v) => v === '')) throw bad(selector);
    return m[2] === 'in' ? (l) => values.has(String(l[key])) && key in l : (l) => !(key in l) || !values.has(String(l[key]));
  }
  m = EXISTS.exec(text);
  if (m) {
    const key = m[2]!;
    return m[1] === '!' ? (l) => !(key in l) : (l) => key in l;
  }
  throw bad(selector);
}

function bad(selector: string): ApiError {
  return new ApiError(400, 'BadRequest', `unable to parse requirement: invalid label selector "${selector}"`);
}

/** undefined or "": everything matches. Throws ApiError 400 for a selector that does not parse. */
export function labelMatcher(selector: string | null | undefined): LabelMatcher {
  if (selector === null || selector === undefined || selector.trim() === '') return () => true;
  const reqs = split(selector).map((r) => requirement(r, selector));
  return (labels) => reqs.every((r) => r(labels ?? {}));
}
