/**
 * Token-level scanning for the Prometheus text parser (prom-text.ts): one
 * line at a time, character by character, each token bounded by a length the
 * caller passes. No regular expressions, so the cost is linear in the line.
 */
/** A payload error at the current line; caught by the parser, never escapes it. */
export class ParseError extends Error {}

const SPACE = 0x20;
const TAB = 0x09;

function isNameStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c === 0x3a;
}
function isNameChar(c: number): boolean {
  return isNameStart(c) || (c >= 0x30 && c <= 0x39);
}
function isLabelStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f;
}
function isLabelChar(c: number): boolean {
  return isLabelStart(c) || (c >= 0x30 && c <= 0x39);
}

const INT_MAX_DIGITS = 19;

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** `[+-]?(digits[.digits] | .digits)([eE][+-]?digits)?`, scanned once (no regex, no backtracking). */
function isDecimalFloat(t: string): boolean {
  const n = t.length;
  let i = 0;
  if (i < n && (t.charCodeAt(i) === 0x2b || t.charCodeAt(i) === 0x2d)) i++;
  let digits = 0;
  while (i < n && isDigit(t.charCodeAt(i))) (i++, digits++);
  if (i < n && t.charCodeAt(i) === 0x2e) {
    i++;
    while (i < n && isDigit(t.charCodeAt(i))) (i++, digits++);
  }
  if (digits === 0) return false;
  if (i < n && (t.charCodeAt(i) === 0x65 || t.charCodeAt(i) === 0x45)) {
    i++;
    if (i < n && (t.charCodeAt(i) === 0x2b || t.charCodeAt(i) === 0x2d)) i++;
    const start = i;
    while (i < n && isDigit(t.charCodeAt(i))) i++;
    if (i === start) return false;
  }
  return i === n;
}

/** `-?` and 1..19 digits: a Go int64-sized millisecond timestamp. */
export function isTimestamp(t: string): boolean {
  const start = t.charCodeAt(0) === 0x2d ? 1 : 0;
  const digits = t.length - start;
  if (digits < 1 || digits > INT_MAX_DIGITS) return false;
  for (let i = start; i < t.length; i++) if (!isDigit(t.charCodeAt(i))) return false;
  return true;
}

/** Parses a sample value like Go's strconv.ParseFloat (decimal forms, NaN, Inf). Linear in the token. */
export function parsePromValue(token: string): number | undefined {
  if (isDecimalFloat(token)) return Number(token);
  if (token.length > 9) return undefined; // longer than "+infinity"
  const c = token.charCodeAt(0);
  const signed = c === 0x2b || c === 0x2d;
  const word = (signed ? token.slice(1) : token).toLowerCase();
  if (word === 'nan') return NaN;
  if (word !== 'inf' && word !== 'infinity') return undefined;
  return c === 0x2d ? -Infinity : Infinity;
}

/** One line, scanned by position. */
export class LineScanner {
  pos = 0;
  constructor(readonly s: string) {}
  skipBlanks(): number {
    const start = this.pos;
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c !== SPACE && c !== TAB) break;
      this.pos++;
    }
    return this.pos - start;
  }
  peek(): number {
    return this.pos < this.s.length ? this.s.charCodeAt(this.pos) : -1;
  }
  atEnd(): boolean {
    return this.pos >= this.s.length;
  }
  metricName(max: number): string {
    const start = this.pos;
    if (!isNameStart(this.peek())) throw new ParseError('invalid metric name');
    this.pos++;
    while (isNameChar(this.peek())) this.pos++;
    if (this.pos - start > max) throw new ParseError(`metric name longer than ${max} characters`);
    return this.s.slice(start, this.pos);
  }
  labelName(max: number): string {
    const start = this.pos;
    if (!isLabelStart(this.peek())) throw new ParseError('invalid label name');
    this.pos++;
    while (isLabelChar(this.peek())) this.pos++;
    if (this.pos - start > max) throw new ParseError(`label name longer than ${max} characters`);
    return this.s.slice(start, this.pos);
  }
  /** Token up to the next blank or the end of the line; `what` names it when longer than `max`. */
  token(max = Infinity, what = 'token'): string {
    const start = this.pos;
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c === SPACE || c === TAB) break;
      this.pos++;
    }
    if (this.pos - start > max) throw new ParseError(`${what} longer than ${max} characters`);
    return this.s.slice(start, this.pos);
  }
  /** A quoted label value starting at the opening quote, unescaped (validated only, '' returned, when !build). */
  quoted(build: boolean, max: number): string {
    if (this.peek() !== 0x22) throw new ParseError('expected \'"\' to open a label value');
    this.pos++;
    const open = this.pos;
    let out = '';
    let chunk = this.pos;
    for (;;) {
      if (this.pos >= this.s.length) throw new ParseError('unterminated label value');
      const c = this.s.charCodeAt(this.pos);
      if (c === 0x22) {
        if (this.pos - open > max) throw new ParseError(`label value longer than ${max} characters`);
        if (build) out += this.s.slice(chunk, this.pos);
        this.pos++;
        return out;
      }
      if (c === 0x5c) {
        const e = this.s.charCodeAt(this.pos + 1);
        if (e !== 0x5c && e !== 0x22 && e !== 0x6e) throw new ParseError('invalid escape sequence in label value');
        if (build) out += this.s.slice(chunk, this.pos) + (e === 0x6e ? '\n' : e === 0x22 ? '"' : '\\');
        this.pos += 2;
        chunk = this.pos;
        continue;
      }
      this.pos++;
    }
  }
}
