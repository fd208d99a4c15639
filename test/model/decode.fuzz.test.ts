/**
 * Seeded fuzzing of the object decoders and the YAML manifest reader: real
 * objects (the examples) with values swapped for hostile ones, Kubernetes
 * JSON of random shape, and mutated or pathological YAML text. Decoding
 * never throws (a bad object is `invalid` with field errors naming it), YAML
 * problems come back as errors naming the file, and each input is bounded
 * in time (1 s per input: a hang bound that holds on a loaded CI machine; the
 * typical input takes well under a millisecond).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { decodeObject } from '../../src/model/decode.js';
import { parseManifestText } from '../../src/sources/manifest-text.js';
import { fuzz, fuzzSeed, type Rng } from '../helpers/fuzz.js';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));
const TEXTS: string[] = ['cluster-a', 'cluster-b'].flatMap((d) => readdirSync(join(EXAMPLES, d)).map((f) => readFileSync(join(EXAMPLES, d, f), 'utf8')));
const OBJECTS: unknown[] = TEXTS.flatMap((t) => t.split(/^---$/m).map((d) => parse(d) as unknown)).filter((o) => o !== null);

function hostileValue(r: Rng, depth = 0): unknown {
  switch (r.int(depth > 3 ? 7 : 10)) {
    case 0: return null;
    case 1: return r.pick([0, -1, 1.5, 1e308, -0, Number.MAX_SAFE_INTEGER + 2, NaN, Infinity]);
    case 2: return r.text(r.int(20), 'aZ09-._/:*"\\{}[] \u0000\u00e9');
    case 3: return 'x'.repeat(r.pick([253, 254, 1025, 70_000]));
    case 4: return r.chance(0.5);
    case 5: return r.pick(['__proto__', 'constructor', 'toString', 'RegularExpression', 'InferencePool', '/(a+)+b']);
    case 6: return [];
    case 7: return r.chance(0.1) ? Array.from({ length: 5000 }, () => r.int(10)) : Array.from({ length: r.pick([1, 3, 20]) }, () => hostileValue(r, depth + 1));
    case 8: return JSON.parse(`{"__proto__": ${JSON.stringify(hostileValue(r, depth + 1)) ?? 'null'}, "a": 1}`) as unknown;
    default: return Object.fromEntries(Array.from({ length: 1 + r.int(4) }, () => [r.pick(['spec', 'metadata', 'name', 'rules', 'matches', 'path', 'value', 'x']), hostileValue(r, depth + 1)]));
  }
}

/** A deep copy of `obj` with a few values, at random paths, replaced by hostile ones. */
function mutateObject(r: Rng, obj: unknown): unknown {
  const copy = structuredClone(obj);
  for (let n = 1 + r.int(3); n > 0; n--) {
    let at: unknown = copy;
    for (let d = 0; d < 8; d++) {
      if (typeof at !== 'object' || at === null) break;
      const keys = Object.keys(at);
      if (keys.length === 0) break;
      const k = r.pick(keys);
      const child = (at as Record<string, unknown>)[k];
      if (r.chance(0.3) || typeof child !== 'object' || child === null) {
        (at as Record<string, unknown>)[k] = hostileValue(r);
        break;
      }
      at = child;
    }
  }
  return copy;
}

function mutateText(r: Rng, text: string): string {
  let s = text;
  for (let n = 1 + r.int(3); n > 0; n--) {
    const at = r.int(s.length + 1);
    s = r.pick([
      () => s.slice(0, at) + r.text(1 + r.int(6), ':-[]{}&*!|>\'"#\n \t?%@`') + s.slice(at),
      () => s.slice(0, at) + s.slice(at + r.int(30)),
      () => s.slice(0, at) + s.slice(at, at + r.int(100)).repeat(1 + r.int(30)) + s.slice(at),
    ])();
  }
  return s;
}

function pathologicalYaml(r: Rng): string {
  const n = 100 + r.int(20_000);
  return r.pick([
    () => `a: &a [x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 12 }, (_v, i) => `b${i}: &b${i} [${Array(9).fill(i === 0 ? '*a' : `*b${i - 1}`).join(', ')}]`).join('\n')}\n`, // alias bomb
    () => '['.repeat(n),
    () => `${'- '.repeat(Math.min(n, 3000))}x\n`,
    () => '{a: '.repeat(Math.min(n, 3000)),
    () => `k: "${'\\'.repeat(n)}"\n`,
    () => '---\n'.repeat(n),
    () => `kind: HTTPRoute\nx: ${'y'.repeat(n * 10)}\n`,
    () => r.bytes(n).toString('latin1'),
  ])();
}

describe('fuzz: Kubernetes object decoders', () => {
  it('real objects with hostile values: never throws, an object, invalid with named fields, or ignored', () => {
    const seed = fuzzSeed(11_9001);
    fuzz('decode mutated', seed, { iterations: 1500, maxInputMs: 1000 }, (r) => {
      const res = decodeObject(mutateObject(r, r.pick(OBJECTS)), 'fuzz.yaml#0');
      if (res.type === 'invalid') {
        expect(res.errors.length).toBeGreaterThan(0);
        for (const e of res.errors) expect(typeof e.message === 'string' && e.message.length > 0 && typeof e.path === 'string').toBe(true);
      }
    });
  });

  it('random JSON shapes: never throws', () => {
    const seed = fuzzSeed(11_9002);
    fuzz('decode random', seed, { iterations: 800, maxInputMs: 1000 }, (r) => {
      const raw = r.chance(0.5) ? hostileValue(r) : { apiVersion: r.pick(['v1', 'gateway.networking.k8s.io/v1', 'inference.networking.k8s.io/v1', 'inference.networking.x-k8s.io/v1alpha1']), kind: r.pick(['Service', 'Gateway', 'HTTPRoute', 'InferencePool', 'InferencePoolImport']), metadata: hostileValue(r), spec: hostileValue(r), status: hostileValue(r) };
      expect(['ok', 'invalid', 'ignored']).toContain(decodeObject(raw).type);
    });
  });
});

describe('fuzz: YAML manifest reader', () => {
  it('mutated example manifests: never throws; syntax errors name the file', () => {
    const seed = fuzzSeed(11_9003);
    fuzz('yaml mutated', seed, { iterations: 100, maxInputMs: 1000 }, (r) => {
      const { errors } = parseManifestText(mutateText(r, r.pick(TEXTS)), 'fuzz.yaml');
      for (const e of errors) expect(e.object).toBe('fuzz.yaml');
    });
  });

  it('pathological YAML (alias bombs, deep nesting, many documents, long scalars): never throws, bounded time', () => {
    const seed = fuzzSeed(11_9004);
    fuzz('yaml pathological', seed, { iterations: 60, maxInputMs: 1000 }, (r) => {
      const { errors } = parseManifestText(pathologicalYaml(r), 'fuzz.yaml');
      for (const e of errors) expect(e.object).toBe('fuzz.yaml');
    });
  });
});
