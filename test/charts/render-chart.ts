/**
 * Renders charts/mcip-router the way `helm template` would, for the subset of Go
 * templates and Sprig functions the chart uses (see go-template.ts), and parses the
 * output into Kubernetes objects.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { createEngine, goPrint, truthy, type Func } from './go-template.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART_DIR = path.join(REPO, 'charts/mcip-router');

export type Obj = Record<string, unknown>;
export interface K8sObject extends Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}
export interface Rendered {
  objects: K8sObject[];
  /** Template file -> its raw output. */
  files: Record<string, string>;
  notes: string;
  /** .Values paths the templates read that the values do not have. */
  missingValues: string[];
}

export function readYaml(file: string): unknown {
  return parse(readFileSync(file, 'utf8'));
}

export function defaultValues(): Obj {
  return readYaml(path.join(CHART_DIR, 'values.yaml')) as Obj;
}

/** Helm's coalescing of user values onto the chart's: maps merge, lists replace, null deletes. */
export function mergeValues(base: Obj, over: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    if (v === null) delete out[k];
    else if (isMap(v) && isMap(b)) out[k] = mergeValues(b, v);
    else out[k] = v;
  }
  return out;
}

const isMap = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function goInt(v: unknown): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  if (v === null || v === undefined || v === '') return 0n;
  throw new Error(`int: cannot convert ${String(v)}`);
}

function printf(format: unknown, ...args: unknown[]): string {
  let i = 0;
  return String(format).replace(/%([%sdvq])/g, (_m, verb: string) => {
    if (verb === '%') return '%';
    const a = args[i++];
    if (verb === 'd' && typeof a !== 'bigint') throw new Error(`printf %d of ${typeof a} ${String(a)}: Helm prints %!d(float64=...); use int`);
    if (verb === 's' && typeof a !== 'string') throw new Error(`printf %s of ${typeof a}: Helm prints %!s(...)`);
    return verb === 'q' ? JSON.stringify(goPrint(a)) : goPrint(a);
  });
}

function goEq(a: unknown, b: unknown): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return a == b;
  if (typeof a !== typeof b) throw new Error(`eq: incompatible types for comparison (${typeof a}, ${typeof b})`);
  return a === b;
}

const toPlain = (v: unknown): unknown => JSON.parse(JSON.stringify(v ?? null, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x)));

/** The Sprig and Helm functions the chart uses. */
export const SPRIG_FUNCS: Record<string, Func> = {
  default: (d, v) => (truthy(v) ? v : d),
  empty: (v) => !truthy(v),
  not: (v) => !truthy(v),
  and: () => undefined, // evaluated lazily by the engine
  or: () => undefined,
  eq: (a, ...bs) => bs.some((b) => goEq(a, b)),
  ne: (a, b) => !goEq(a, b),
  quote: (...xs) => xs.filter((x) => x !== null && x !== undefined).map((x) => JSON.stringify(goPrint(x))).join(' '),
  print: (...xs) => xs.map((x, i) => (i > 0 && typeof x !== 'string' && typeof xs[i - 1] !== 'string' ? ' ' : '') + goPrint(x)).join(''),
  printf: (f, ...xs) => printf(f, ...xs),
  int: (v) => goInt(v),
  gt: (a, b) => goInt(a) > goInt(b),
  toString: (v: unknown) => goPrint(v),
  trunc: (n, s) => String(s).slice(0, Number(goInt(n))),
  trimSuffix: (suffix, s) => (String(s).endsWith(String(suffix)) ? String(s).slice(0, -String(suffix).length || undefined) : String(s)),
  trim: (s) => String(s).trim(),
  replace: (from, to, s) => String(s).split(String(from)).join(String(to)),
  contains: (sub, s) => String(s).includes(String(sub)),
  fail: (msg) => {
    throw new Error(String(msg));
  },
  required: (msg, v) => {
    if (v === null || v === undefined || v === '') throw new Error(String(msg));
    return v;
  },
  toYaml: (v) => stringify(toPlain(v), { sortMapEntries: true, indentSeq: false, lineWidth: 0 }).replace(/\n$/, ''),
  toJson: (v) => JSON.stringify(toPlain(v)),
  indent: (n, s) => indent(Number(goInt(n)), String(s)),
  nindent: (n, s) => `\n${indent(Number(goInt(n)), String(s))}`,
  sha256sum: (s) => createHash('sha256').update(String(s)).digest('hex'),
  dict: (...kv) => {
    const out: Obj = {};
    for (let i = 0; i + 1 < kv.length; i += 2) out[String(kv[i])] = kv[i + 1];
    return out;
  },
  set: (d, k, v) => {
    (d as Obj)[String(k)] = v;
    return d;
  },
  deepCopy: (v) => structuredClone(v ?? {}),
  ternary: (a, b, cond) => (cond === true ? a : b),
  hasKey: (d, k) => typeof d === 'object' && d !== null && Object.hasOwn(d, String(k)),
  index: (d, ...keys) => {
    let v = d;
    for (const k of keys) {
      if (v === null || v === undefined) throw new Error('index of untyped nil');
      v = (v as Obj)[String(k)];
    }
    return v;
  },
  /** Sprig's randBytes: n random bytes, base64. */
  randBytes: (n) => randomBytes(Number(goInt(n))).toString('base64'),
  b64enc: (s) => Buffer.from(String(s)).toString('base64'),
  mergeOverwrite: (dst, ...srcs) => srcs.reduce((acc: unknown, src) => mergeValues(acc as Obj, (src ?? {}) as Obj), dst ?? {}),
};

function indent(n: number, s: string): string {
  const pad = ' '.repeat(n);
  return pad + s.replace(/\n/g, `\n${pad}`);
}

/**
 * What every install sets on top of values.yaml: the image it built and pushed (values.yaml
 * holds a placeholder the chart refuses). renderChart applies it before the overrides.
 */
export const INSTALL_VALUES: Obj = { image: { repository: 'registry.example.com/team/mcip-router' } };

/**
 * Renders the chart with values.yaml, then INSTALL_VALUES (unless `install` is false: the chart
 * exactly as shipped), then `overrides`; throws on template errors and on `fail`. `cluster` holds
 * the objects Helm's `lookup` finds (none: a first install or `helm template`).
 */
export function renderChart(overrides: Obj = {}, release = { name: 'gw', namespace: 'mcip-system' }, install = true, cluster: readonly K8sObject[] = []): Rendered {
  const chart = readYaml(path.join(CHART_DIR, 'Chart.yaml')) as Obj;
  const values = mergeValues(install ? mergeValues(defaultValues(), INSTALL_VALUES) : defaultValues(), overrides);
  const missing = new Set<string>();
  // Helm's lookup: the object from the cluster (an upgrade), else an empty map (an install, helm template).
  const lookup: Func = (apiVersion, kind, namespace, name) =>
    cluster.find((o) => o.apiVersion === apiVersion && o.kind === kind && (o.metadata.namespace ?? '') === namespace && o.metadata.name === name) ?? {};
  const engine = createEngine({ ...SPRIG_FUNCS, lookup }, (p) => missing.add(p));
  const base = `${String(chart.name)}/templates`;
  const templateDir = path.join(CHART_DIR, 'templates');
  const names = readdirSync(templateDir).sort();
  for (const n of names) engine.add(`${base}/${n}`, readFileSync(path.join(templateDir, n), 'utf8'));

  const files = {
    Get: (name: unknown) => {
      const file = path.join(CHART_DIR, String(name));
      if (!existsSync(file)) throw new Error(`.Files.Get: no file ${String(name)} in the chart`);
      return readFileSync(file, 'utf8');
    },
  };
  const context = (file: string): Obj => ({
    Values: values,
    Release: { Name: release.name, Namespace: release.namespace, Service: 'Helm', IsInstall: true, IsUpgrade: false },
    Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion, ApiVersion: chart.apiVersion },
    Files: files,
    Template: { Name: `${base}/${file}`, BasePath: base },
  });

  const out: Rendered = { objects: [], files: {}, notes: '', missingValues: [] };
  for (const n of names) {
    if (n.startsWith('_')) continue;
    const text = engine.render(`${base}/${n}`, context(n));
    if (n === 'NOTES.txt') {
      out.notes = text;
      continue;
    }
    out.files[n] = text;
    for (const doc of parseAllDocuments(text, { version: '1.1' })) {
      if (doc.errors.length > 0) throw new Error(`${n}: invalid YAML: ${doc.errors[0]!.message}\n${text}`);
      const obj = doc.toJS() as K8sObject | null;
      if (obj !== null) out.objects.push(obj);
    }
  }
  out.missingValues = [...missing].sort();
  return out;
}

/** The single object of a kind (and name suffix, when given). */
export function find(r: Rendered, kind: string, nameSuffix = ''): K8sObject {
  const hits = r.objects.filter((o) => o.kind === kind && o.metadata.name.endsWith(nameSuffix));
  if (hits.length !== 1) throw new Error(`expected one ${kind} named *${nameSuffix}, got ${hits.length}`);
  return hits[0]!;
}
