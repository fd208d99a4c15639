/**
 * From parsed manifest documents to one member's objects, file by file.
 *
 * Where the line runs between a file's change that is rejected and an object
 * that is left out:
 * - structurally unreadable: YAML that does not parse, a document that is not
 *   a mapping, or a document of a kind the router reads without a string
 *   `kind` and `metadata.name`. Nothing in it can be named, so the file's whole
 *   change is rejected and its last good version keeps serving.
 * - semantically invalid: an object that has a kind and a name but a field the
 *   router cannot use, or a second copy of an object. That object alone is left
 *   out with a reason naming kind, namespace, name and field; everything else,
 *   in the same file too, is used.
 */
import { createHash } from 'node:crypto';
import { decodeObject } from '../model/decode.js';
import type { FieldError, KubeObject } from '../model/types.js';
import { describeObject, objectKey } from '../model/types.js';
import { parseManifestText, type ManifestDocument } from './manifest-text.js';

/** One file's usable content: decoded objects and the semantic errors of the objects left out. */
export interface FileContent {
  /** sha256 of the file's text. */
  readonly hash: string;
  readonly objects: readonly { readonly object: KubeObject; readonly origin: string }[];
  readonly errors: readonly FieldError[];
}

/** The last usable content of each file, by absolute path. */
export type FileCache = ReadonlyMap<string, FileContent>;

export type FileRead =
  | { readonly type: 'ok'; readonly content: FileContent }
  /** Structurally unreadable: the errors name the file and document. */
  | { readonly type: 'unreadable'; readonly hash: string; readonly errors: readonly FieldError[] };

export function hashText(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function decodeDocuments(hash: string, docs: readonly ManifestDocument[]): FileRead {
  const objects: { object: KubeObject; origin: string }[] = [];
  const errors: FieldError[] = [];
  const unreadable: FieldError[] = [];
  for (const doc of docs) {
    const result = decodeObject(doc.raw, doc.origin);
    if (result.type === 'ok') objects.push({ object: result.object, origin: doc.origin });
    else if (result.type === 'invalid') (result.errors.every((e) => e.ref !== undefined) ? errors : unreadable).push(...result.errors);
  }
  if (unreadable.length > 0) return { type: 'unreadable', hash, errors: unreadable };
  return { type: 'ok', content: { hash, objects, errors } };
}

/** Parses and decodes one file's text; an unchanged text reuses its earlier decoding. */
export function readFileContent(file: string, text: string, previous: FileContent | undefined): FileRead {
  const hash = hashText(text);
  if (previous !== undefined && previous.hash === hash) return { type: 'ok', content: previous };
  const parsed = parseManifestText(text, file);
  if (parsed.errors.length > 0) return { type: 'unreadable', hash, errors: parsed.errors };
  return decodeDocuments(hash, parsed.docs);
}

/**
 * The member's objects from its files' contents, in file order. A second copy
 * of an object (same kind, namespace and name) is left out with reason
 * DuplicateObject naming where the first one is.
 */
export function assembleObjects(contents: readonly FileContent[]): { objects: KubeObject[]; errors: FieldError[] } {
  const objects: KubeObject[] = [];
  const errors: FieldError[] = [];
  const seen = new Map<string, string>();
  for (const content of contents) {
    errors.push(...content.errors);
    for (const { object, origin } of content.objects) {
      const { kind, metadata } = object;
      const key = objectKey(kind, metadata.namespace, metadata.name);
      const first = seen.get(key);
      if (first !== undefined) {
        errors.push({
          object: describeObject(kind, metadata.namespace, metadata.name),
          ref: { kind, namespace: metadata.namespace, name: metadata.name },
          reason: 'DuplicateObject',
          path: 'metadata.name',
          message: `duplicate object: also defined at ${first}; this copy is left out`,
          origin,
        });
        continue;
      }
      seen.set(key, origin);
      objects.push(object);
    }
  }
  return { objects, errors };
}
