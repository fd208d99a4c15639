/** The test renderer behaves like Helm where the chart depends on it, and is as strict. */
import { describe, expect, it } from 'vitest';
import { createEngine, goFloat } from './go-template.js';
import { SPRIG_FUNCS } from './render-chart.js';

const SPRIG = {
  quote: (s: unknown) => JSON.stringify(String(s)),
  nindent: (n: unknown, s: unknown) => `\n${' '.repeat(Number(n))}${String(s).replace(/\n/g, `\n${' '.repeat(Number(n))}`)}`,
  default: (d: unknown, v: unknown) => v || d,
  printf: (f: unknown, ...a: unknown[]) => `${String(f)}:${a.map(String).join(',')}`,
};

function render(text: string, data: unknown, missing?: (p: string) => void): string {
  const e = createEngine(SPRIG, missing);
  e.add('t', text);
  return e.render('t', data);
}

describe('go-template', () => {
  it('trims whitespace at {{- and -}} only', () => {
    expect(render('a:\n  {{- " b" }}\nc: {{ "d" -}}\n  \n e', {})).toBe('a: b\nc: de');
  });

  it('runs if / else if / else, range with index and element, with / else, and variables', () => {
    const t = '{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}|{{ range $i, $x := .xs }}{{ $i }}={{ $x }};{{ end }}|{{ with .m }}{{ .k }}{{ else }}none{{ end }}|{{ $v := "z" }}{{ $v }}';
    expect(render(t, { a: false, b: 1, xs: ['p', 'q'], m: { k: 'K' } })).toBe('B|0=p;1=q;|K|z');
    expect(render(t, { a: '', b: 0, xs: [], m: {} })).toBe('C||none|z');
  });

  it('`=` sets the variable where it was declared, also from inside if, range and with; `:=` there declares a new one', () => {
    const t = '{{ $v := "a" }}{{ if .t }}{{ $v = "b" }}{{ end }}{{ $v }}|{{ range .xs }}{{ $v = . }}{{ end }}{{ $v }}|{{ with .t }}{{ $v := "inner" }}{{ end }}{{ $v }}';
    expect(render(t, { t: true, xs: ['p', 'q'] })).toBe('b|q|q');
    expect(render(t, { t: false, xs: [] })).toBe('a|a|a');
    expect(() => render('{{ $u = 1 }}', {})).toThrow(/undefined variable/);
  });

  it('includes defines with a context, and pipes into the last argument', () => {
    const t = '{{- define "x" -}}name: {{ .n | quote }}{{- end -}}\nspec:{{ include "x" .o | nindent 2 }}\n{{ .missing | default "dflt" }}';
    expect(render(t, { o: { n: 'v' } })).toBe('spec:\n  name: "v"\ndflt');
  });

  it('prints numbers from values as Go prints float64 (1e+06)', () => {
    expect([9901, 15000, 999999, 1e6, 16777216, 0.5, 0].map(goFloat)).toEqual(['9901', '15000', '999999', '1e+06', '1.6777216e+07', '0.5', '0']);
    expect(render('{{ .n }}', { n: 16777216 })).toBe('1.6777216e+07');
  });

  it('rejects what Helm rejects or would render wrong', () => {
    expect(() => render('{{ nosuch 1 }}', {})).toThrow(/function "nosuch" not defined/);
    expect(() => render('{{ .a.b }}', { a: null })).toThrow(/nil pointer/);
    expect(() => render('{{ .m }}', { m: { a: 1 } })).toThrow(/toYaml/);
    expect(() => render('{{ if .x }}', {})).toThrow();
  });

  it('reports .Values paths the values lack', () => {
    const seen: string[] = [];
    const data = { Values: { a: { b: 1 } } };
    render('{{ .Values.a.b }}{{ .Values.a.c }}{{ $.Values.d }}', data, (p) => seen.push(p));
    expect(seen).toEqual(['Values.a.c', 'Values.d']);
  });

  it('Sprig subset: printf %d needs an int and eq does not mix int and float, as in Helm', () => {
    const e = createEngine(SPRIG_FUNCS);
    e.add('ok', '{{ printf "%s:%d" .h (int .p) }} {{ eq (int .p) 9901 }} {{ .s | trunc 3 | trimSuffix "-" }}');
    expect(e.render('ok', { h: 'x', p: 9901, s: 'ab-cd' })).toBe('x:9901 true ab');
    e.add('d', '{{ printf "%d" .p }}');
    expect(() => e.render('d', { p: 9901 })).toThrow(/%d/);
    e.add('eq', '{{ eq .p 9901 }}');
    expect(() => e.render('eq', { p: 9901 })).toThrow(/incompatible types/);
  });
});
