/**
 * The declaration on a multi-cluster InferencePool (the Endpoint Picker role):
 * - `mcip-router.dev/backends: "InferencePool/llama-local=1, InferencePoolImport/llama=3"`:
 *   comma-separated `Kind/name[=weight]`, Kind InferencePool or InferencePoolImport of the
 *   pool's own namespace, weight an integer 0..1,000,000 (default 1);
 * - `mcip-router.dev/answer: direct | relay` (absent: the config's endpointPicker.defaultAnswer).
 * Pure: text in, a typed declaration or the first problem out (naming the entry), never throws.
 */
import { GROUP_INFERENCE, GROUP_INFERENCE_X } from './types.js';

/** How a multi-cluster pool's picks are answered: the destination itself, or a relay pod with a token. */
export const PICKER_ANSWERS = ['direct', 'relay'] as const;
export type PickerAnswer = (typeof PICKER_ANSWERS)[number];

export const BACKENDS_ANNOTATION = 'mcip-router.dev/backends';
export const ANSWER_ANNOTATION = 'mcip-router.dev/answer';

/** Gateway API's backendRef weight range. */
export const MAX_BACKEND_WEIGHT = 1_000_000;
/** More entries than any pool needs: a longer list is refused before parsing further. */
export const MAX_BACKENDS = 64;

export type PickerBackendKind = 'InferencePool' | 'InferencePoolImport';

export interface PickerBackend {
  readonly kind: PickerBackendKind;
  /** inference.networking.k8s.io for InferencePool, inference.networking.x-k8s.io for InferencePoolImport. */
  readonly group: string;
  readonly name: string;
  readonly weight: number;
}

export type Decoded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string; readonly message: string };

const GROUPS: Readonly<Record<PickerBackendKind, string>> = { InferencePool: GROUP_INFERENCE, InferencePoolImport: GROUP_INFERENCE_X };
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const ENTRY = /^([A-Za-z]+)\/([^=\s]+)(?:=(\d+))?$/;

const refused = (reason: string, message: string): Decoded<never> => ({ ok: false, reason, message });

/** Longest piece of the annotation a message quotes. */
const QUOTED_CHARS = 80;

/**
 * Annotation text as a message quotes it: JSON-quoted (control characters, terminal
 * escapes among them, escaped) and cut to QUOTED_CHARS, so a tenant's 256 KiB
 * annotation neither floods the logs, /debug/routes and --check nor writes to a terminal.
 */
function quoted(text: string): string {
  return JSON.stringify(text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text);
}

/** The backends annotation's value as a list of backends, or why it is refused. */
export function decodeBackends(text: string | undefined): Decoded<readonly PickerBackend[]> {
  if (text === undefined) return refused('BackendsMissing', `annotation ${BACKENDS_ANNOTATION} is missing: list the pools this pool spans, e.g. "InferencePool/llama-local=1, InferencePoolImport/llama=3"`);
  const entries = text.split(',').map((e) => e.trim());
  if (entries.length === 1 && entries[0] === '') return refused('BackendsEmpty', `annotation ${BACKENDS_ANNOTATION} lists no backend`);
  if (entries.length > MAX_BACKENDS) return refused('BackendsTooMany', `annotation ${BACKENDS_ANNOTATION} lists ${entries.length} backends, at most ${MAX_BACKENDS} are allowed`);
  const out: PickerBackend[] = [];
  const seen = new Set<string>();
  for (const entry of entries) {
    const m = ENTRY.exec(entry);
    if (m === null) return refused('BackendInvalid', `entry ${quoted(entry)} of annotation ${BACKENDS_ANNOTATION} is not Kind/name[=weight]`);
    const kind = m[1]!;
    const name = m[2]!;
    if (kind !== 'InferencePool' && kind !== 'InferencePoolImport') {
      return refused('BackendKindUnknown', `entry ${quoted(entry)} of annotation ${BACKENDS_ANNOTATION}: kind ${quoted(kind)} is neither InferencePool nor InferencePoolImport`);
    }
    if (name.length > 253 || !NAME.test(name)) return refused('BackendInvalid', `entry ${quoted(entry)} of annotation ${BACKENDS_ANNOTATION}: ${quoted(name)} is not a lower-case RFC 1123 name (other namespaces cannot be named)`);
    const weight = m[3] === undefined ? 1 : Number(m[3]);
    if (!Number.isSafeInteger(weight) || weight > MAX_BACKEND_WEIGHT) {
      return refused('BackendWeightInvalid', `entry ${quoted(entry)} of annotation ${BACKENDS_ANNOTATION}: weight must be an integer 0..${MAX_BACKEND_WEIGHT}`);
    }
    const key = `${kind}/${name}`;
    if (seen.has(key)) return refused('BackendDuplicate', `entry ${quoted(entry)} of annotation ${BACKENDS_ANNOTATION}: ${key} is listed twice`);
    seen.add(key);
    out.push({ kind, group: GROUPS[kind], name, weight });
  }
  if (out.every((b) => b.weight === 0)) return refused('BackendsNoWeight', `every backend of annotation ${BACKENDS_ANNOTATION} has weight 0: no request could be served`);
  return { ok: true, value: out };
}

/** The answer annotation's value, the default when absent, or why it is refused. */
export function decodeAnswer(text: string | undefined, fallback: PickerAnswer): Decoded<PickerAnswer> {
  if (text === undefined) return { ok: true, value: fallback };
  const v = text.trim();
  if ((PICKER_ANSWERS as readonly string[]).includes(v)) return { ok: true, value: v as PickerAnswer };
  return refused('AnswerInvalid', `annotation ${ANSWER_ANNOTATION} is ${quoted(text)}; expected ${PICKER_ANSWERS.join(' or ')}`);
}
