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
 *
 * Linear in the payload: every line is scanned once, character by character
 * (no regular expressions over the payload), and the lengths of a line, a
 * name, a label value and a value token, the labels per series and the series
 * per payload are bounded (PROM_LIMITS), so a hostile or broken endpoint costs
 * a failed scrape, never a stalled event loop.
 */
import { isTimestamp, LineScanner, ParseError, parsePromValue } from './prom-tokens.js';

export { parsePromValue };

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

/** Bounds on one payload's tokens; fixed properties of the format we accept, not operator settings. */
export interface PromLimits {
  /** Characters in one line (a series with its labels, a HELP text). */
  readonly maxLineLength: number;
  /** Characters in a metric or label name. */
  readonly maxNameLength: number;
  /** Characters in one (escaped) label value. */
  readonly maxLabelValueLength: number;
  /** Characters in a sample value or timestamp token. */
  readonly maxValueLength: number;
  /** Labels on one series. */
  readonly maxLabels: number;
  /** Sample lines in one payload, kept or not. */
  readonly maxSeries: number;
}

export const PROM_LIMITS: PromLimits = {
  maxLineLength: 64 * 1024,
  maxNameLength: 1024,
  maxLabelValueLength: 8 * 1024,
  maxValueLength: 64,
  maxLabels: 128,
  maxSeries: 500_000,
};

export interface PromParseOptions {
  /** Only samples whose metric name passes are kept (all lines are still validated). */
  readonly keep?: (name: string) => boolean;
  /** Payloads larger than this fail (bytes for a buffer, UTF-16 units for a string). */
  readonly maxBytes?: number;
  /** More kept samples than this fail (memory bound). Default 1,000,000. */
  readonly maxSamples?: number;
  /** Overrides of PROM_LIMITS (tests). */
  readonly limits?: Partial<PromLimits>;
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
  readonly limits: PromLimits;
  series: number;
}

/** Returns false when the payload ends here (`# EOF`). */
function parseComment(sc: LineScanner, st: ParseState): boolean {
  sc.pos++; // '#'
  sc.skipBlanks();
  const keyword = sc.token();
  if (keyword === 'EOF' && (sc.skipBlanks(), sc.atEnd())) return false;
  if ((keyword !== 'HELP' && keyword !== 'TYPE') || sc.skipBlanks() === 0) return true; // a plain comment
  const name = sc.metricName(st.limits.maxNameLength);
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
  const lim = st.limits;
  if (++st.series > lim.maxSeries) throw new ParseError(`more than ${lim.maxSeries} series`);
  const name = sc.metricName(lim.maxNameLength);
  const keep = st.keep === undefined || st.keep(name);
  const labels: Record<string, string> = Object.create(null) as Record<string, string>;
  sc.skipBlanks();
  if (sc.peek() === 0x7b) {
    sc.pos++;
    let count = 0;
    for (;;) {
      sc.skipBlanks();
      if (sc.peek() === 0x7d) break;
      if (++count > lim.maxLabels) throw new ParseError(`more than ${lim.maxLabels} labels on metric "${name}"`);
      const label = sc.labelName(lim.maxNameLength);
      sc.skipBlanks();
      if (sc.peek() !== 0x3d) throw new ParseError(`expected '=' after label name "${label}"`);
      sc.pos++;
      sc.skipBlanks();
      const value = sc.quoted(keep, lim.maxLabelValueLength);
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
  const valueToken = sc.token(lim.maxValueLength, 'value');
  if (valueToken === '') throw new ParseError(`missing value for metric "${name}"`);
  const value = parsePromValue(valueToken);
  if (value === undefined) throw new ParseError(`invalid value "${valueToken.slice(0, 40)}"`);
  let timestampMs: number | undefined;
  sc.skipBlanks();
  if (!sc.atEnd() && sc.peek() !== 0x23) {
    const ts = sc.token(lim.maxValueLength, 'timestamp');
    if (!isTimestamp(ts)) throw new ParseError(`invalid timestamp "${ts.slice(0, 40)}"`);
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

/** Characters parsed between two yields of parsePromTextAsync (a few ms of work). */
const SLICE_CHARS = 16 * 1024;

type Prepared = { readonly text: string; readonly st: ParseState; readonly cur: Cursor } | PromParseResult;

interface Cursor {
  pos: number;
  line: number;
  done: boolean;
}

function prepare(input: string | Uint8Array, options: PromParseOptions): Prepared {
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
    limits: options.limits ? { ...PROM_LIMITS, ...options.limits } : PROM_LIMITS,
    series: 0,
  };
  return { text, st, cur: { pos: text.charCodeAt(0) === 0xfeff ? 1 : 0, line: 0, done: false } };
}

/** Parses whole lines from `cur` until about `budget` characters are consumed or the payload ends. Throws ParseError. */
function parseLines(text: string, st: ParseState, cur: Cursor, budget: number): void {
  const maxLine = st.limits.maxLineLength;
  const until = cur.pos + budget;
  while (cur.pos < text.length) {
    if (cur.pos >= until) return;
    const start = cur.pos;
    cur.line++;
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let stop = end;
    if (stop > start && text.charCodeAt(stop - 1) === 0x0d) stop--;
    if (stop - start > maxLine) throw new ParseError(`line longer than ${maxLine} characters`);
    const sc = new LineScanner(text.slice(start, stop));
    cur.pos = end + 1;
    sc.skipBlanks();
    if (sc.atEnd()) continue;
    if (sc.peek() === 0x23) {
      if (!parseComment(sc, st)) break;
      continue;
    }
    parseSample(sc, st);
  }
  cur.done = true;
}

function step(p: Exclude<Prepared, PromParseResult>, budget: number): PromParseResult | undefined {
  try {
    parseLines(p.text, p.st, p.cur, budget);
  } catch (err) {
    const message = err instanceof ParseError ? err.message : `parser failure: ${String(err)}`;
    return { ok: false, line: p.cur.line, message };
  }
  return p.cur.done ? { ok: true, samples: p.st.samples, types: p.st.types, help: p.st.help } : undefined;
}

/** Parses a whole payload in one go. Never throws. */
export function parsePromText(input: string | Uint8Array, options: PromParseOptions = {}): PromParseResult {
  const p = prepare(input, options);
  return 'ok' in p ? p : step(p, Infinity)!;
}

/**
 * Parses a whole payload in slices of about 64 K characters, yielding to the
 * event loop between slices, so a multi-megabyte scrape never holds up the
 * data path. Never rejects.
 */
export async function parsePromTextAsync(input: string | Uint8Array, options: PromParseOptions = {}): Promise<PromParseResult> {
  const p = prepare(input, options);
  if ('ok' in p) return p;
  for (;;) {
    const r = step(p, SLICE_CHARS);
    if (r !== undefined) return r;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
