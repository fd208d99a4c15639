/**
 * The export controller's writes to one member's API server.
 *
 * - Imports are created with metadata only (the CRD has no spec); status goes
 *   through the /status subresource.
 * - Status writes touch only our own list entry (status.controllers[] of an
 *   import, status.parents[] of a pool): every other entry is written back as
 *   read. More than one entry taken for ours is collapsed into one. Fields the
 *   server may prune (the CRD does not declare them) are compared only when the
 *   live entry has them, and a write whose answer lacks them reports them. Merge-patches carry the read resourceVersion; a 409 re-reads and retries.
 * - A delete carries the read resourceVersion as a precondition, so an import
 *   another controller just claimed is not deleted from under it.
 * - Every request is bounded (the member's kubernetes.requestTimeoutMs, applied by
 *   its KubeConfig): a member that does not answer delays only its own part.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';
import { RESOURCE_SPECS, type ResourceSpec } from '../sources/kubernetes/resources.js';
import { carryTransitionTimes } from './export-plan.js';
import type { RawCondition } from './import-status.js';
import { sameEntry } from './import-status.js';

export type RawEntry = Record<string, unknown> & { conditions?: Partial<RawCondition>[] };
export type RawStatusObject = {
  metadata?: { resourceVersion?: string };
  status?: Record<string, unknown>;
};

/** The requests the export controller makes to one member; narrow so tests can count or fail them. */
export interface ExportClient {
  get(kind: 'InferencePool' | 'InferencePoolImport', namespace: string, name: string): Promise<RawStatusObject | undefined>;
  /** Creates it with metadata only; `annotations` mark it as created by us. */
  createImport(namespace: string, name: string, annotations?: Record<string, string>): Promise<void>;
  deleteImport(namespace: string, name: string, resourceVersion: string | undefined): Promise<void>;
  /** Resolves to the object as the server stored it (pruned of what its CRD does not declare). */
  patchStatus(kind: 'InferencePool' | 'InferencePoolImport', namespace: string, name: string, patch: object): Promise<RawStatusObject | undefined>;
}

export function createExportClient(kc: KubeConfig): ExportClient {
  const api = kc.makeApiClient(CustomObjectsApi);
  const target = (s: ResourceSpec, namespace: string, name: string) => ({ group: s.group, version: s.version, plural: s.plural, namespace, name });
  const imports = RESOURCE_SPECS.InferencePoolImport;
  return {
    async get(kind, namespace, name) {
      try {
        return (await api.getNamespacedCustomObjectStatus(target(RESOURCE_SPECS[kind], namespace, name))) as RawStatusObject;
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async createImport(namespace, name, annotations) {
      const body = { apiVersion: imports.apiVersion, kind: imports.kind, metadata: { namespace, name, ...(annotations ? { annotations } : {}) } };
      const { group, version, plural } = imports;
      await api.createNamespacedCustomObject({ group, version, plural, namespace, body });
    },
    async deleteImport(namespace, name, resourceVersion) {
      const body = resourceVersion !== undefined ? { preconditions: { resourceVersion } } : {};
      await api.deleteNamespacedCustomObject({ ...target(imports, namespace, name), body });
    },
    async patchStatus(kind, namespace, name, body) {
      const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      return (await api.patchNamespacedCustomObjectStatus({ ...target(RESOURCE_SPECS[kind], namespace, name), body }, options)) as RawStatusObject;
    },
  };
}

export type EntryOutcome = 'unchanged' | 'written' | 'removed' | 'gone' | 'conflict' | 'full';

export interface OwnEntryWrite {
  readonly client: ExportClient;
  readonly kind: 'InferencePool' | 'InferencePoolImport';
  readonly namespace: string;
  readonly name: string;
  /** The status list holding the entries: "controllers" or "parents". */
  readonly field: 'controllers' | 'parents';
  readonly isOurs: (entry: RawEntry) => boolean;
  /** undefined: remove our entry. Conditions' lastTransitionTime is filled here. */
  readonly desired: RawEntry | undefined;
  /** The list's size limit (the CRD's maxItems). */
  readonly maxEntries?: number;
  /** Fields of `desired` the server may prune: compared only when the live entry has them. */
  readonly mayBePruned?: readonly string[];
  readonly now: string;
  readonly retries: number;
}

export interface OwnEntryResult {
  readonly outcome: EntryOutcome;
  readonly attempts: number;
  /** Of `mayBePruned`: the fields our entry lacks as the server holds it (read, or answered to our write). */
  readonly pruned: readonly string[];
}

/** Adds, replaces or removes our entry only; re-reads and retries on 409. */
export async function writeOwnEntry(w: OwnEntryWrite): Promise<OwnEntryResult> {
  const result = (outcome: EntryOutcome, attempts: number, held?: RawEntry): OwnEntryResult => ({ outcome, attempts, pruned: held && w.desired ? missing(w, w.desired, held) : [] });
  for (let attempt = 1; attempt <= w.retries + 1; attempt++) {
    const live = await w.client.get(w.kind, w.namespace, w.name);
    if (!live) return result('gone', attempt);
    const entries = listOf(live, w.field);
    const ours = entries.filter(w.isOurs);
    const current = ours[0];
    let next: RawEntry[];
    let outcome: EntryOutcome;
    if (w.desired === undefined) {
      if (current === undefined) return result('unchanged', attempt);
      next = entries.filter((e) => !ours.includes(e));
      outcome = 'removed';
    } else {
      const conditions = carryTransitionTimes((w.desired.conditions ?? []) as RawCondition[], current?.conditions, w.now);
      const entry: RawEntry = { ...w.desired, conditions };
      if (current && ours.length === 1 && sameEntry(current, withoutFields(entry, missing(w, entry, current)))) return result('unchanged', attempt, current);
      if (!current && w.maxEntries !== undefined && entries.length >= w.maxEntries) return result('full', attempt);
      // Ours replaced in place; any further entry taken for ours goes.
      next = entries.flatMap((e) => (e === current ? [entry] : ours.includes(e) ? [] : [e]));
      if (!current) next.push(entry);
      outcome = 'written';
    }
    try {
      const answer = await w.client.patchStatus(w.kind, w.namespace, w.name, { metadata: { resourceVersion: live.metadata?.resourceVersion }, status: { [w.field]: next } });
      return result(outcome, attempt, answer ? listOf(answer, w.field).find(w.isOurs) : undefined);
    } catch (err) {
      const status = httpStatusOf(err);
      if (status === 404) return result('gone', attempt);
      if (status !== 409) throw err;
    }
  }
  return result('conflict', w.retries + 1);
}

function listOf(o: RawStatusObject, field: string): RawEntry[] {
  const raw = o.status?.[field];
  return Array.isArray(raw) ? (raw as RawEntry[]) : [];
}

/** The prunable fields `desired` has and `held` lacks. */
function missing(w: OwnEntryWrite, desired: RawEntry, held: RawEntry): string[] {
  return (w.mayBePruned ?? []).filter((f) => desired[f] !== undefined && held[f] === undefined);
}

function withoutFields(entry: RawEntry, fields: readonly string[]): RawEntry {
  return Object.fromEntries(Object.entries(entry).filter(([k]) => !fields.includes(k))) as RawEntry;
}
