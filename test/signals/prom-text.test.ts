import { describe, expect, it } from 'vitest';
import { parsePromText, parsePromTextAsync, parsePromValue, PROM_LIMITS } from '../../src/signals/prom-text.js';
import { withLoopDelay } from '../harness/loop-delay.js';
import { timeWork } from '../helpers/work-time.js';

function ok(text: string | Uint8Array) {
  const r = parsePromText(text);
  if (!r.ok) throw new Error(`unexpected parse error line ${r.line}: ${r.message}`);
  return r;
}

describe('parsePromText: valid payloads', () => {
  const cases: { name: string; text: string; samples: { name: string; labels?: Record<string, string>; value: number; ts?: number }[] }[] = [
    { name: 'empty payload', text: '', samples: [] },
    { name: 'blank lines and comments', text: '\n\n# just a comment\n   \n#\n# HELPX not help\n', samples: [] },
    { name: 'bare sample', text: 'up 1\n', samples: [{ name: 'up', value: 1 }] },
    { name: 'no trailing newline', text: 'up 1', samples: [{ name: 'up', value: 1 }] },
    { name: 'CRLF line ends', text: '# TYPE up gauge\r\nup{a="b"} 2\r\n', samples: [{ name: 'up', labels: { a: 'b' }, value: 2 }] },
    { name: 'labels and timestamp', text: 'm{name="p",x="y"} 3.5 1700000000000\n', samples: [{ name: 'm', labels: { name: 'p', x: 'y' }, value: 3.5, ts: 1700000000000 }] },
    { name: 'negative timestamp', text: 'm 1 -5\n', samples: [{ name: 'm', value: 1, ts: -5 }] },
    { name: 'empty label set', text: 'm{} 4\n', samples: [{ name: 'm', value: 4 }] },
    { name: 'trailing comma in labels', text: 'm{a="1",} 4\n', samples: [{ name: 'm', labels: { a: '1' }, value: 4 }] },
    { name: 'blanks around labels', text: 'm { a = "1" , b="2" } 4\n', samples: [{ name: 'm', labels: { a: '1', b: '2' }, value: 4 }] },
    { name: 'tabs as separators', text: 'm{a="1"}\t4\t17\n', samples: [{ name: 'm', labels: { a: '1' }, value: 4, ts: 17 }] },
    { name: 'escapes in label values', text: 'm{a="q\\"uote",b="back\\\\slash",c="new\\nline"} 1\n', samples: [{ name: 'm', labels: { a: 'q"uote', b: 'back\\slash', c: 'new\nline' }, value: 1 }] },
    { name: 'braces, commas, # inside a label value', text: 'm{a="x}{,# y"} 1\n', samples: [{ name: 'm', labels: { a: 'x}{,# y' }, value: 1 }] },
    { name: 'unicode label value', text: 'm{a="héllo ✓"} 1\n', samples: [{ name: 'm', labels: { a: 'héllo ✓' }, value: 1 }] },
    { name: 'colon in metric name', text: 'job:rate:5m 0.5\n', samples: [{ name: 'job:rate:5m', value: 0.5 }] },
    { name: 'exponent values', text: 'a 1e3\nb -2.5E-2\nc .5\nd 5.\n', samples: [{ name: 'a', value: 1000 }, { name: 'b', value: -0.025 }, { name: 'c', value: 0.5 }, { name: 'd', value: 5 }] },
    { name: 'untyped series next to typed', text: '# TYPE a counter\na 1\nb 2\n', samples: [{ name: 'a', value: 1 }, { name: 'b', value: 2 }] },
    { name: 'histogram series', text: '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 0.3\nh_count 2\n', samples: [{ name: 'h_bucket', labels: { le: '0.1' }, value: 1 }, { name: 'h_bucket', labels: { le: '+Inf' }, value: 2 }, { name: 'h_sum', value: 0.3 }, { name: 'h_count', value: 2 }] },
    { name: 'OpenMetrics # EOF ends the payload', text: 'a 1\n# EOF\n', samples: [{ name: 'a', value: 1 }] },
    { name: 'OpenMetrics exemplar is ignored', text: 'a_total 1 # {trace_id="x"} 0.5\n', samples: [{ name: 'a_total', value: 1 }] },
    { name: 'leading blanks', text: '   a 1\n', samples: [{ name: 'a', value: 1 }] },
    { name: 'UTF-8 BOM', text: '\ufeffa 1\n', samples: [{ name: 'a', value: 1 }] },
  ];
  it.each(cases)('$name', ({ text, samples }) => {
    const r = ok(text);
    expect(r.samples.map((s) => ({ name: s.name, labels: { ...s.labels }, value: s.value, ts: s.timestampMs }))).toEqual(
      samples.map((s) => ({ name: s.name, labels: s.labels ?? {}, value: s.value, ts: s.ts })),
    );
  });

  it('reads HELP (with escapes) and TYPE', () => {
    const r = ok('# HELP m some \\\\ help\\nmore\n# TYPE m gauge\n# HELP e\nm 1\n');
    expect(r.help.get('m')).toBe('some \\ help\nmore');
    expect(r.help.get('e')).toBe('');
    expect(r.types.get('m')).toBe('gauge');
  });

  it('label maps have no prototype (a label named __proto__ is just a label)', () => {
    const r = ok('m{__proto__="x",constructor="y"} 1\n');
    expect(r.samples[0]!.labels['__proto__']).toBe('x');
    expect(r.samples[0]!.labels['constructor']).toBe('y');
  });

  it.each([
    ['NaN', NaN],
    ['nan', NaN],
    ['+Inf', Infinity],
    ['Inf', Infinity],
    ['-Inf', -Infinity],
    ['+infinity', Infinity],
    ['0', 0],
    ['-0.0', -0],
    ['1.5e+10', 1.5e10],
  ])('value %s', (token, value) => {
    expect(parsePromValue(token)).toBe(value);
    const r = ok(`m ${token}\n`);
    expect(r.samples[0]!.value).toBe(value);
  });

  it('keep filter drops other samples but still validates them', () => {
    const r = ok('a 1\nb{x="1"} 2\na{y="2"} 3\n');
    expect(r.samples).toHaveLength(3);
    const kept = parsePromText('a 1\nb{x="1"} 2\na{y="2"} 3\n', { keep: (n) => n === 'a' });
    expect(kept.ok && kept.samples.map((s) => s.value)).toEqual([1, 3]);
    const bad = parsePromText('a 1\nb{x="1} 2\n', { keep: (n) => n === 'a' });
    expect(bad.ok).toBe(false);
  });
});

describe('parsePromText: malformed payloads fail, never throw', () => {
  const cases: [string, string | Uint8Array][] = [
    ['missing value', 'm\n'],
    ['missing value after labels', 'm{a="1"}\n'],
    ['bad value', 'm one\n'],
    ['hex value', 'm 0x10\n'],
    ['bad timestamp', 'm 1 12.5\n'],
    ['text after timestamp', 'm 1 2 3\n'],
    ['unterminated label set', 'm{a="1" 1\n'],
    ['unterminated label value', 'm{a="1} 1\n'],
    ['unquoted label value', 'm{a=1} 1\n'],
    ['missing =', 'm{a"1"} 1\n'],
    ['bad label name', 'm{1a="x"} 1\n'],
    ['bad escape in label value', 'm{a="\\t"} 1\n'],
    ['duplicate label', 'm{a="1",a="2"} 1\n'],
    ['double comma', 'm{a="1",,b="2"} 1\n'],
    ['bad metric name', '1m 1\n'],
    ['garbage line', '}}}{{{\n'],
    ['HTML error page', '<html><body>502 Bad Gateway</body></html>\n'],
    ['JSON', '{"status":"error"}\n'],
    ['unknown TYPE', '# TYPE m bogus\nm 1\n'],
    ['missing TYPE type', '# TYPE m\n'],
    ['second TYPE line', '# TYPE m gauge\n# TYPE m counter\nm 1\n'],
    ['second HELP line', '# HELP m a\n# HELP m b\n'],
    ['bad metric name in TYPE', '# TYPE m-x gauge\n'],
    ['invalid UTF-8 bytes', new Uint8Array([0x61, 0x20, 0x31, 0x0a, 0xff, 0xfe, 0x0a])],
    ['random binary', Uint8Array.from({ length: 4096 }, (_v, i) => (i * 7919 + 13) % 256)],
  ];
  it.each(cases)('%s', (_name, text) => {
    const r = parsePromText(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toBeTruthy();
  });

  it('reports the failing line number', () => {
    const r = parsePromText('a 1\n# comment\nb{ 2\n');
    expect(r).toMatchObject({ ok: false, line: 3 });
  });

  it('enforces maxBytes and maxSamples', () => {
    expect(parsePromText('a 1\n'.repeat(100), { maxBytes: 50 })).toMatchObject({ ok: false, line: 0 });
    expect(parsePromText(Buffer.from('a 1\n'.repeat(100)), { maxBytes: 50 })).toMatchObject({ ok: false });
    expect(parsePromText('a 1\n'.repeat(100), { maxSamples: 10 })).toMatchObject({ ok: false });
  });
});

describe('parsePromText: huge payloads', () => {
  // ~10 MB: a realistic EPP payload buried in per-pod series.
  const lines: string[] = ['# HELP inference_pool_per_pod_queue_size q', '# TYPE inference_pool_per_pod_queue_size gauge'];
  let size = 0;
  for (let i = 0; size < 10 * 1024 * 1024; i++) {
    const l = `inference_pool_per_pod_queue_size{name="pool-${i % 50}",model_server_pod="vllm-${i}-abcdefgh",escaped="a\\"b\\\\c"} ${i % 17} 1700000000000`;
    lines.push(l);
    size += l.length + 1;
  }
  lines.push('# TYPE inference_pool_ready_pods gauge', 'inference_pool_ready_pods{name="pool-7"} 3');
  const text = lines.join('\n') + '\n';
  const bytes = Buffer.from(text);

  it('parses 10 MB with a filter, quickly', () => {
    expect(bytes.byteLength).toBeGreaterThan(10 * 1024 * 1024);
    const { result: r, ms } = timeWork(() => parsePromText(bytes, { keep: (n) => n === 'inference_pool_ready_pods' }));
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.samples).toEqual([{ name: 'inference_pool_ready_pods', labels: expect.objectContaining({ name: 'pool-7' }), value: 3 }]);
    expect(ms).toBeLessThan(5000);
  });

  it('parsePromTextAsync gives the same answers, yielding to the event loop between slices', { retry: 2 }, async () => {
    const keep = (n: string) => n === 'inference_pool_ready_pods';
    const { result, maxDelayMs } = await withLoopDelay(() => parsePromTextAsync(bytes, { keep }));
    expect(result).toEqual(parsePromText(bytes, { keep }));
    expect(maxDelayMs).toBeLessThan(100); // one go: ~1 s on a loaded machine
    const bad = await parsePromTextAsync(text + 'broken{ 1\n');
    expect(bad).toMatchObject({ ok: false, line: lines.length + 1 });
    expect(await parsePromTextAsync(bytes, { maxBytes: 1024 })).toMatchObject({ ok: false, line: 0 });
  });

  it('rejects it under a byte cap, and a 10 MB payload with one bad line at the end', () => {
    expect(parsePromText(bytes, { maxBytes: 4 * 1024 * 1024 }).ok).toBe(false);
    const r = parsePromText(text + 'broken{ 1\n');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.line).toBe(lines.length + 1);
  });
});

describe('parsePromText: bounded tokens, linear time', () => {
  it.each([
    ['a value token', `m ${'1'.repeat(PROM_LIMITS.maxValueLength + 1)}\n`, 'value longer than'],
    ['a timestamp token', `m 1 ${'1'.repeat(PROM_LIMITS.maxValueLength + 1)}\n`, 'timestamp longer than'],
    ['a metric name', `${'m'.repeat(PROM_LIMITS.maxNameLength + 1)} 1\n`, 'metric name longer than'],
    ['a label name', `m{${'l'.repeat(PROM_LIMITS.maxNameLength + 1)}="x"} 1\n`, 'label name longer than'],
    ['a label value', `m{l="${'v'.repeat(PROM_LIMITS.maxLabelValueLength + 1)}"} 1\n`, 'label value longer than'],
    ['a line', `# HELP m ${'h'.repeat(PROM_LIMITS.maxLineLength)}\n`, 'line longer than'],
    ['the labels of a series', `m{${Array.from({ length: PROM_LIMITS.maxLabels + 1 }, (_v, i) => `l${i}="x"`).join(',')}} 1\n`, 'labels on metric "m"'],
  ])('%s over its cap fails naming the cap', (_what, text, message) => {
    const r = parsePromText(`ok 1\n${text}`);
    expect(r).toMatchObject({ ok: false, line: 2 });
    if (!r.ok) expect(r.message).toContain(message);
  });

  it('tokens at their caps still parse', () => {
    const value = `1.${'0'.repeat(PROM_LIMITS.maxValueLength - 2)}`;
    const r = ok(`${'m'.repeat(PROM_LIMITS.maxNameLength)}{l="${'v'.repeat(PROM_LIMITS.maxLabelValueLength)}"} ${value}\n`);
    expect(r.samples[0]!.value).toBe(1);
  });

  it('counts every series against maxSeries, kept or not', () => {
    const text = 'a 1\nb 2\nc 3\n';
    expect(parsePromText(text, { keep: () => false, limits: { maxSeries: 3 } }).ok).toBe(true);
    expect(parsePromText(text, { keep: () => false, limits: { maxSeries: 2 } })).toMatchObject({ ok: false, line: 3, message: 'more than 2 series' });
  });

  // V8's backtracking regex took ~4 s on a 60 KB value; every one of these must be linear.
  it.each([
    ['digits then junk', `m ${'1'.repeat(60_000)}x\n`],
    ['digits, dot, digits then junk', `m ${'1'.repeat(30_000)}.${'1'.repeat(30_000)}x\n`],
    ['exponent without digits', `m ${'1'.repeat(60_000)}e\n`],
    ['one 4 MB line', `m{a="${'x'.repeat(4 * 1024 * 1024)}\n`],
  ])('a hostile %s is rejected in linear time', (_what, text) => {
    const { result: r, ms } = timeWork(() => parsePromText(text, { limits: { maxLineLength: Infinity, maxValueLength: Infinity, maxLabelValueLength: Infinity } }));
    expect(r.ok).toBe(false);
    expect(ms).toBeLessThan(1000); // quadratic: seconds; linear: ~1 ms
  });
});
