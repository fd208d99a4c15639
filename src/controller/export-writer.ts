/**
 * The export controller's writes to one member's API server.
 *
 * - Imports are created with metadata only (the CRD has no spec); status goes
 *   through the /status subresource.
 * - Status writes touch only our own list entry (status.controllers[] of an
 *   import, status.parents[] of a pool): every other entry is written back as
 *   read. Merge-patches carry the read resourceVersion; a 409 re-reads and retries.
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
  patchStatus(kind: 'InferencePool' | 'InferencePoolImport', namespace: string, name: string, patch: object): Promise<void>;
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
      await api.patchNamespacedCustomObjectStatus({ ...target(RESOURCE_SPECS[kind], namespace, name), body }, options);
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
  readonly now: string;
  readonly retries: number;
}

/** Adds, replaces or removes our entry only; re-reads and retries on 409. */
export async function writeOwnEntry(w: OwnEntryWrite): Promise<{ outcome: EntryOutcome; attempts: number }> {
  for (let attempt = 1; attempt <= w.retries + 1; attempt++) {
    const live = await w.client.get(w.kind, w.namespace, w.name);
    if (!live) return { outcome: 'gone', attempts: attempt };
    const raw = live.status?.[w.field];
    const entries = Array.isArray(raw) ? (raw as RawEntry[]) : [];
    const index = entries.findIndex(w.isOurs);
    const current = index >= 0 ? entries[index] : undefined;
    let next: RawEntry[];
    let outcome: EntryOutcome;
    if (w.desired === undefined) {
      if (index < 0) return { outcome: 'unchanged', attempts: attempt };
      next = entries.filter((_, i) => i !== index);
      outcome = 'removed';
    } else {
      const conditions = carryTransitionTimes((w.desired.conditions ?? []) as RawCondition[], current?.conditions, w.now);
      const entry: RawEntry = { ...w.desired, conditions };
      if (current && sameEntry(current, entry)) return { outcome: 'unchanged', attempts: attempt };
      if (index < 0 && w.maxEntries !== undefined && entries.length >= w.maxEntries) return { outcome: 'full', attempts: attempt };
      next = index >= 0 ? entries.map((e, i) => (i === index ? entry : e)) : [...entries, entry];
      outcome = 'written';
    }
    try {
      await w.client.patchStatus(w.kind, w.namespace, w.name, { metadata: { resourceVersion: live.metadata?.resourceVersion }, status: { [w.field]: next } });
      return { outcome, attempts: attempt };
    } catch (err) {
      const status = httpStatusOf(err);
      if (status === 404) return { outcome: 'gone', attempts: attempt };
      if (status !== 409) throw err;
    }
  }
  return { outcome: 'conflict', attempts: w.retries + 1 };
}
