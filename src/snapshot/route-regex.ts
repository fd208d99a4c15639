/**
 * HTTPRoute `RegularExpression` matches, compiled once per snapshot with
 * re2js (a pure JavaScript port of RE2): matching is linear in the input, so
 * no pattern a tenant writes can make a request path stall the event loop the
 * way a backtracking engine can (`/(a+)+b`).
 *
 * Syntax is RE2's, as in Envoy's `safe_regex` (the Gateway API leaves regex
 * dialects to implementations): no lookaround, no backreferences; `(?i)`,
 * `(?P<name>...)`, `[[:alpha:]]`, `\pL` are accepted. The whole value must
 * match.
 *
 * Bounded three ways (routes.regex in the config):
 * - the pattern's length;
 * - its size as a compiled RE2 program (instructions; what a match costs per
 *   input character in the worst case). A cheap estimate from the pattern text
 *   refuses patterns far over the limit before compiling, since expanding a
 *   counted repetition such as `(a|aa){1000}` is itself expensive;
 * - the length of a value it is run on: a longer path or header value never
 *   matches a RegularExpression.
 */
import { RE2JS } from 're2js';

export interface RegexLimits {
  readonly maxLength: number;
  readonly maxProgramSize: number;
  readonly maxInputLength: number;
}

/** A compiled whole-value matcher. */
export class RouteRegex {
  constructor(
    private readonly re: RE2JS,
    private readonly maxInputLength: number,
  ) {}

  matches(value: string): boolean {
    return value.length <= this.maxInputLength && this.re.testExact(value);
  }
}

export type CompiledRegex = { readonly ok: true; readonly regex: RouteRegex } | { readonly ok: false; readonly message: string };

/** The compiled program's instruction count (re2js keeps it on the compiled RE2; read defensively). */
export function programSize(re: RE2JS): number {
  const prog = (re as unknown as { re2Input?: { prog?: { numInst?: () => number } } }).re2Input?.prog;
  const n = typeof prog?.numInst === 'function' ? prog.numInst() : NaN;
  if (!Number.isFinite(n)) throw new Error('re2js no longer exposes its program size');
  return n;
}

/** Compiles `source` as an RE2 whole-value match within `limits`; never throws. */
export function compileRouteRegex(source: string, limits: RegexLimits): CompiledRegex {
  const shown = source.length > 80 ? `${source.slice(0, 80)}...` : source;
  if (source.length > limits.maxLength) {
    return { ok: false, message: `regular expression is ${source.length} characters, over the limit of ${limits.maxLength} (routes.regex.maxLength)` };
  }
  const estimate = estimateProgramSize(source);
  if (estimate > 4 * limits.maxProgramSize) {
    return { ok: false, message: `regular expression "${shown}" is too complex: about ${estimate} RE2 instructions, limit ${limits.maxProgramSize} (routes.regex.maxProgramSize)` };
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(source);
  } catch (e) {
    return { ok: false, message: `invalid RE2 regular expression "${shown}": ${(e as Error).message}` };
  }
  const size = programSize(re);
  if (size > limits.maxProgramSize) {
    return { ok: false, message: `regular expression "${shown}" is too complex: ${size} RE2 instructions, limit ${limits.maxProgramSize} (routes.regex.maxProgramSize)` };
  }
  return { ok: true, regex: new RouteRegex(re, limits.maxInputLength) };
}

const DIGIT = /[0-9]/;

/** `{n}`, `{n,}` or `{n,m}` at `i`: [end index after '}', the largest count that applies]; undefined when not a repetition (RE2 then reads a literal '{'). */
function countedRepeat(s: string, i: number): [number, number] | undefined {
  const close = s.indexOf('}', i);
  if (close < 0 || close - i > 16) return undefined;
  const body = s.slice(i + 1, close);
  const comma = body.indexOf(',');
  const lo = comma < 0 ? body : body.slice(0, comma);
  const hi = comma < 0 ? lo : body.slice(comma + 1);
  if (lo === '' || ![...lo].every((c) => DIGIT.test(c)) || ![...hi].every((c) => DIGIT.test(c))) return undefined;
  return [close + 1, hi === '' ? Number(lo) + 1 : Math.max(Number(lo), Number(hi))];
}

/** Index after the character class opening at `i` (`[...]`, with escapes, a leading `]` or `^]`, and `[:name:]`). */
function classEnd(s: string, i: number): number {
  let j = i + 1;
  if (s[j] === '^') j++;
  if (s[j] === ']') j++;
  while (j < s.length && s[j] !== ']') {
    if (s[j] === '\\') j += 2;
    else if (s[j] === '[' && s[j + 1] === ':') {
      const end = s.indexOf(':]', j + 2);
      j = end < 0 ? j + 1 : end + 2;
    } else j++;
  }
  return j + 1;
}

/**
 * A linear scan estimating the RE2 program size: one per atom, a group costs
 * its contents, a counted repetition multiplies what it repeats. An
 * over-estimate within a small factor; only used to refuse before compiling.
 */
export function estimateProgramSize(s: string): number {
  const groups: number[] = [0];
  let last = 0;
  const add = (n: number): void => {
    groups[groups.length - 1]! += n;
  };
  for (let i = 0; i < s.length; ) {
    const c = s[i]!;
    if (c === '\\') {
      // \pL, \p{Greek}, \x{10FFFF}, \Q...\E are one atom each here (\Q..\E: its characters).
      const next = s[i + 1];
      if ((next === 'p' || next === 'P' || next === 'x') && s[i + 2] === '{') {
        const end = s.indexOf('}', i);
        i = end < 0 ? s.length : end + 1;
      } else i += 2;
      last = 1;
      add(1);
    } else if (c === '[') {
      i = classEnd(s, i);
      last = 1;
      add(1);
    } else if (c === '(') {
      groups.push(0);
      i++;
      if (s[i] === '?') {
        while (i < s.length && s[i] !== ':' && s[i] !== ')' && s[i] !== '>') i++;
        if (s[i] !== ')') i++;
      }
      last = 0;
    } else if (c === ')') {
      const inner = groups.length > 1 ? groups.pop()! : 0;
      last = inner + 1;
      add(last);
      i++;
    } else if (c === '{' && countedRepeat(s, i) !== undefined) {
      const [end, count] = countedRepeat(s, i)!;
      add(last * (count - 1) + count);
      last = last * count + count;
      i = end;
    } else {
      if (c !== '*' && c !== '+' && c !== '?') last = 1;
      add(1);
      i++;
    }
  }
  return groups.reduce((a, b) => a + b, 0);
}
