/**
 * Patch formats the Kubernetes API server accepts for custom resources:
 * JSON merge patch (RFC 7386) and JSON patch (RFC 6902). Pure functions over
 * plain JSON values; they never mutate their input.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export class PatchError extends Error {
  constructor(
    /** HTTP status the API server answers with (422 for a failed test op, 400 for a malformed patch). */
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function isObject(v: unknown): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function clone<T>(v: T): T {
  return v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T);
}

/** RFC 7386: objects merge recursively, null deletes, everything else (arrays included) replaces. */
export function mergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return clone(patch);
  const out: { [key: string]: Json } = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

interface Op {
  op: string;
  path: string;
  value?: Json;
  from?: string;
}

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(400, `invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function getAt(doc: Json, tokens: readonly string[]): Json | undefined {
  let cur: Json | undefined = doc;
  for (const t of tokens) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObject(cur)) cur = cur[t];
    else return undefined;
  }
  return cur;
}

function parentOf(doc: Json, tokens: readonly string[], path: string): { parent: Json; key: string } {
  const parent = getAt(doc, tokens.slice(0, -1));
  const key = tokens[tokens.length - 1];
  if (parent === undefined || key === undefined || (!Array.isArray(parent) && !isObject(parent))) {
    throw new PatchError(422, `path "${path}" does not exist`);
  }
  return { parent, key };
}

function add(doc: Json, path: string, value: Json): Json {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return clone(value);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : Number(key);
    if (!Number.isInteger(i) || i < 0 || i > parent.length) throw new PatchError(422, `index out of range at "${path}"`);
    parent.splice(i, 0, clone(value));
  } else (parent as { [key: string]: Json })[key] = clone(value);
  return doc;
}

function remove(doc: Json, path: string): Json {
  const tokens = parsePointer(path);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!Number.isInteger(i) || i < 0 || i >= parent.length) throw new PatchError(422, `index out of range at "${path}"`);
    parent.splice(i, 1);
  } else {
    const obj = parent as { [key: string]: Json };
    if (!(key in obj)) throw new PatchError(422, `path "${path}" does not exist`);
    delete obj[key];
  }
  return doc;
}

/** RFC 6902: add, remove, replace, move, copy, test. A failed test fails the whole patch (422). */
export function jsonPatch(target: Json, patch: unknown): Json {
  if (!Array.isArray(patch)) throw new PatchError(400, 'a JSON patch must be an array of operations');
  let doc = clone(target);
  for (const raw of patch as Op[]) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw new PatchError(400, 'malformed JSON patch operation');
    }
    switch (raw.op) {
      case 'add':
        doc = add(doc, raw.path, raw.value ?? null);
        break;
      case 'remove':
        doc = remove(doc, raw.path);
        break;
      case 'replace':
        if (getAt(doc, parsePointer(raw.path)) === undefined) throw new PatchError(422, `path "${raw.path}" does not exist`);
        doc = add(remove(doc, raw.path), raw.path, raw.value ?? null);
        break;
      case 'move':
      case 'copy': {
        const from = getAt(doc, parsePointer(raw.from ?? ''));
        if (from === undefined) throw new PatchError(422, `path "${raw.from ?? ''}" does not exist`);
        if (raw.op === 'move') doc = remove(doc, raw.from ?? '');
        doc = add(doc, raw.path, from);
        break;
      }
      case 'test':
        if (JSON.stringify(getAt(doc, parsePointer(raw.path))) !== JSON.stringify(raw.value)) {
          throw new PatchError(422, `test operation failed at "${raw.path}"`);
        }
        break;
      default:
        throw new PatchError(400, `unknown JSON patch operation "${raw.op}"`);
    }
  }
  return doc;
}
