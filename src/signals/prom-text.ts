/**
 * Parser for the Prometheus text exposition format (version 0.0.4), written
 * here because no maintained, robust npm parser exists (parse-prometheus-text-format
 * was last published in 2024, has no size limits and throws on bad input).
 *
 * Follows Prometheus' own parser (expfmt) on what is an error, so a payload
 * Prometheus would reject is a failed scrape here too:
 * - `# HELP name text` (escapes \\ and \n; others kept literally), `# TYPE name type`
 *   (a second TYPE for the same name is an error), other `#` lines are comments,
 *   `# EOF` (OpenMetrics) ends the payload, blank lines are skipped.
 * - `name{label="value",...} value [timestamp]`: label values unescape \\ \" \n
 *   (any other escape is an error), duplicate label names are an error, a trailing
 *   comma in the label set is allowed; values are Go floats incl. NaN, +Inf, -Inf;
 *   the timestamp is integer milliseconds; an OpenMetrics exemplar (` # {...}`)
 *   after them is ignored. Series without a TYPE are untyped.
 * Never throws: errors come back as `{ok: false, line, message}`.
 */

export type PromMetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'summary'
  | 'untyped'
  // OpenMetrics types, accepted so such payloads do not fail.
  | 'unknown'
  | 'info'
  | 'stateset'
  | 'gaugehistogram';

const METRIC_TYPES: ReadonlySet<string> = new Set([
  'counter', 'gauge', 'histogram', 'summary', 'untyped', 'unknown', 'info', 'stateset', 'gaugehistogram',
]);

export interface PromSample {
  readonly name: string;
  /** Null-prototype record: label names never collide with Object.prototype. */
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly timestampMs?: number;
}

export type PromParseResult =
  | {
      readonly ok: true;
      readonly samples: readonly PromSample[];
      readonly types: ReadonlyMap<string, PromMetricType>;
      readonly help: ReadonlyMap<string, string>;
    }
  | { readonly ok: false; readonly line: number; readonly message: string };

export interface PromParseOptions {
  /** Only samples whose metric name passes are kept (all lines are still validated). */
  readonly keep?: (name: string) => boolean;
  /** Payloads larger than this fail (bytes for a buffer, UTF-16 units for a string). */
  readonly maxBytes?: number;
  /** More kept samples than this fail (memory bound). Default 1,000,000. */
  readonly maxSamples?: number;
}

class ParseError extends Error {}

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

const FLOAT_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const SPECIAL_RE = /^([+-]?)(inf|infinity|nan)$/i;
const INT_RE = /^-?\d{1,19}$/;

/** Parses a sample value like Go's strconv.ParseFloat (decimal forms, NaN, Inf). */
export function parsePromValue(token: string): number | undefined {
  if (FLOAT_RE.test(token)) return Number(token);
  const m = SPECIAL_RE.exec(token);
  if (!m) return undefined;
  if (m[2]!.toLowerCase() === 'nan') return NaN;
  return m[1] === '-' ? -Infinity : Infinity;
}

/** One line, scanned by position. */
class LineScanner {
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
  metricName(): string {
    const start = this.pos;
    if (!isNameStart(this.peek())) throw new ParseError('invalid metric name');
    this.pos++;
    while (isNameChar(this.peek())) this.pos++;
    return this.s.slice(start, this.pos);
  }
  labelName(): string {
    const start = this.pos;
    if (!isLabelStart(this.peek())) throw new ParseError('invalid label name');
    this.pos++;
    while (isLabelChar(this.peek())) this.pos++;
    return this.s.slice(start, this.pos);
  }
  /** Token up to the next blank or the end of the line. */
  token(): string {
    const start = this.pos;
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c === SPACE || c === TAB) break;
      this.pos++;
    }
    return this.s.slice(start, this.pos);
  }
  /** A quoted label value starting at the opening quote, unescaped (validated only, '' returned, when !build). */
  quoted(build: boolean): string {
    if (this.peek() !== 0x22) throw new ParseError('expected \'"\' to open a label value');
    this.pos++;
    let out = '';
    let chunk = this.pos;
    for (;;) {
      if (this.pos >= this.s.length) throw new ParseError('unterminated label value');
      const c = this.s.charCodeAt(this.pos);
      if (c === 0x22) {
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

function unescapeHelp(s: string): string {
  return s.replace(/\\(\\|n)/g, (_m, e: string) => (e === 'n' ? '\n' : '\\'));
}

interface ParseState {
  readonly samples: PromSample[];
  readonly types: Map<string, PromMetricType>;
  readonly help: Map<string, string>;
  readonly keep: ((name: string) => boolean) | undefined;
  readonly maxSamples: number;
}

/** Returns false when the payload ends here (`# EOF`). */
function parseComment(sc: LineScanner, st: ParseState): boolean {
  sc.pos++; // '#'
  sc.skipBlanks();
  const keyword = sc.token();
  if (keyword === 'EOF' && (sc.skipBlanks(), sc.atEnd())) return false;
  if ((keyword !== 'HELP' && keyword !== 'TYPE') || sc.skipBlanks() === 0) return true; // a plain comment
  const name = sc.metricName();
  if (!sc.atEnd() && sc.skipBlanks() === 0) throw new ParseError(`invalid metric name in ${keyword} line`);
  const rest = sc.s.slice(sc.pos);
  if (keyword === 'HELP') {
    if (st.help.has(name)) throw new ParseError(`second HELP line for metric "${name}"`);
    st.help.set(name, unescapeHelp(rest));
    return true;
  }
  const type = rest.trimEnd().toLowerCase();
  if (!METRIC_TYPES.has(type)) throw new ParseError(`unknown metric type "${rest.trimEnd()}"`);
  if (st.types.has(name)) throw new ParseError(`second TYPE line for metric "${name}"`);
  st.types.set(name, type as PromMetricType);
  return true;
}

function parseSample(sc: LineScanner, st: ParseState): void {
  const name = sc.metricName();
  const keep = st.keep === undefined || st.keep(name);
  const labels: Record<string, string> = Object.create(null) as Record<string, string>;
  sc.skipBlanks();
  if (sc.peek() === 0x7b) {
    sc.pos++;
    for (;;) {
      sc.skipBlanks();
      if (sc.peek() === 0x7d) break;
      const label = sc.labelName();
      sc.skipBlanks();
      if (sc.peek() !== 0x3d) throw new ParseError(`expected '=' after label name "${label}"`);
      sc.pos++;
      sc.skipBlanks();
      const value = sc.quoted(keep);
      if (Object.prototype.hasOwnProperty.call(labels, label)) throw new ParseError(`duplicate label "${label}"`);
      labels[label] = value;
      sc.skipBlanks();
      const c = sc.peek();
      if (c === 0x2c) {
        sc.pos++;
        continue;
      }
      if (c !== 0x7d) throw new ParseError('expected \',\' or \'}\' in label set');
      break;
    }
    sc.pos++; // '}'
    sc.skipBlanks();
  }
  const valueToken = sc.token();
  if (valueToken === '') throw new ParseError(`missing value for metric "${name}"`);
  const value = parsePromValue(valueToken);
  if (value === undefined) throw new ParseError(`invalid value "${valueToken.slice(0, 40)}"`);
  let timestampMs: number | undefined;
  sc.skipBlanks();
  if (!sc.atEnd() && sc.peek() !== 0x23) {
    const ts = sc.token();
    if (!INT_RE.test(ts)) throw new ParseError(`invalid timestamp "${ts.slice(0, 40)}"`);
    timestampMs = Number(ts);
    sc.skipBlanks();
  }
  if (!sc.atEnd()) {
    // Only an OpenMetrics exemplar may follow.
    if (sc.peek() !== 0x23) throw new ParseError('unexpected text after the sample');
    sc.pos++;
    sc.skipBlanks();
    if (sc.peek() !== 0x7b) throw new ParseError('unexpected text after the sample');
  }
  if (!keep) return;
  if (st.samples.length >= st.maxSamples) throw new ParseError(`more than ${st.maxSamples} samples`);
  st.samples.push(timestampMs === undefined ? { name, labels, value } : { name, labels, value, timestampMs });
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Parses a whole payload. Never throws. */
export function parsePromText(input: string | Uint8Array, options: PromParseOptions = {}): PromParseResult {
  const maxBytes = options.maxBytes ?? Infinity;
  let text: string;
  if (typeof input === 'string') {
    if (input.length > maxBytes) return { ok: false, line: 0, message: `payload larger than ${maxBytes} bytes` };
    text = input;
  } else {
    if (input.byteLength > maxBytes) return { ok: false, line: 0, message: `payload larger than ${maxBytes} bytes` };
    try {
      text = decoder.decode(input);
    } catch {
      return { ok: false, line: 0, message: 'payload is not valid UTF-8' };
    }
  }
  const st: ParseState = {
    samples: [],
    types: new Map(),
    help: new Map(),
    keep: options.keep,
    maxSamples: options.maxSamples ?? 1_000_000,
  };
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let lineNo = 0;
  try {
    while (start < text.length) {
      lineNo++;
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      let stop = end;
      if (stop > start && text.charCodeAt(stop - 1) === 0x0d) stop--;
      const sc = new LineScanner(text.slice(start, stop));
      start = end + 1;
      sc.skipBlanks();
      if (sc.atEnd()) continue;
      if (sc.peek() === 0x23) {
        if (!parseComment(sc, st)) break;
        continue;
      }
      parseSample(sc, st);
    }
  } catch (err) {
    const message = err instanceof ParseError ? err.message : `parser failure: ${String(err)}`;
    return { ok: false, line: lineNo, message };
  }
  return { ok: true, samples: st.samples, types: st.types, help: st.help };
}
