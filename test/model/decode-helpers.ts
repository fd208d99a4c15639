/** Shared helpers for the decoder tests: decode real YAML text and look at the outcome. */
import { expect } from 'vitest';
import { parse } from 'yaml';
import { decodeObject } from '../../src/model/decode.js';
import type { DecodeResult, FieldError, KubeObject } from '../../src/model/types.js';

export const ORIGIN = 'test.yaml#0';

export function decodeYaml(text: string): DecodeResult {
  return decodeObject(parse(text), ORIGIN);
}

export function decodeOk<K extends KubeObject['kind']>(text: string, kind: K): Extract<KubeObject, { kind: K }> {
  const r = decodeYaml(text);
  if (r.type !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(r, null, 2)}`);
  expect(r.object.kind).toBe(kind);
  return r.object as Extract<KubeObject, { kind: K }>;
}

export function decodeErrors(text: string): readonly FieldError[] {
  const r = decodeYaml(text);
  if (r.type !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(r, null, 2)}`);
  for (const e of r.errors) expect(e.origin).toBe(ORIGIN);
  return r.errors;
}

/** Asserts exactly one error, at `path` on `object`, whose message contains `message`. */
export function expectOneError(text: string, object: string, path: string, message: string | RegExp): void {
  const errors = decodeErrors(text);
  expect(errors.map((e) => `${e.object} ${e.path}`)).toEqual([`${object} ${path}`]);
  expect(errors[0]?.message).toMatch(message);
}

/** Replaces the one occurrence of `find` in `text` (fails if it is absent or not unique). */
export function edit(text: string, find: string, replacement: string): string {
  const at = text.indexOf(find);
  if (at < 0) throw new Error(`"${find}" not found`);
  if (text.indexOf(find, at + 1) >= 0) throw new Error(`"${find}" is not unique`);
  return text.slice(0, at) + replacement + text.slice(at + find.length);
}
