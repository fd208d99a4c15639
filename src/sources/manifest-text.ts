/**
 * A manifest file's text as documents: multi-document YAML (or JSON) split
 * into one raw value per document, List kinds flattened into their items,
 * syntax errors and shapes the parser must not expand reported as FieldErrors.
 */
import { parseAllDocuments } from 'yaml';
import type { FieldError } from '../model/types.js';
import { yamlShapeProblem } from './yaml-shape.js';

export interface ManifestDocument {
  /** "file#docIndex" (0-based), or "file#docIndex.items[i]" for List items. */
  readonly origin: string;
  readonly raw: unknown;
}

function isListKind(v: unknown): v is { kind: string; items: unknown[] } {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const r = v as Record<string, unknown>;
  return typeof r.kind === 'string' && r.kind.endsWith('List') && Array.isArray(r.items);
}

/** The yaml library's message without its " at line L, column C:" suffix and source excerpt. */
function yamlMessage(message: string): string {
  return (message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
}

/** Splits a multi-document YAML (or JSON) text into documents; syntax errors come back as FieldErrors. */
export function parseManifestText(text: string, file: string): { docs: ManifestDocument[]; errors: FieldError[] } {
  const docs: ManifestDocument[] = [];
  const errors: FieldError[] = [];
  const shape = yamlShapeProblem(text);
  if (shape !== undefined) {
    errors.push({ object: file, path: '', message: `${shape}; not parsed`, origin: `${file}#0` });
    return { docs, errors };
  }
  parseAllDocuments(text, { prettyErrors: true }).forEach((doc, i) => {
    const origin = `${file}#${i}`;
    const first = doc.errors[0];
    if (first) {
      // Later errors in the same document are usually consequences of the first.
      const pos = first.linePos?.[0];
      const where = pos ? `line ${pos.line}, column ${pos.col}` : 'unknown position';
      errors.push({ object: file, path: '', message: `YAML syntax error at ${where}: ${yamlMessage(first.message)}`, origin });
      return;
    }
    let js: unknown;
    try {
      js = doc.toJS();
    } catch (e) {
      errors.push({ object: file, path: '', message: `cannot read document: ${(e as Error).message}`, origin });
      return;
    }
    if (js === null || js === undefined) return; // empty document
    if (isListKind(js)) js.items.forEach((raw, j) => docs.push({ origin: `${origin}.items[${j}]`, raw }));
    else docs.push({ origin, raw: js });
  });
  return { docs, errors };
}
