/**
 * ImportStatusWriter: applies an ImportStatusPlan to the API server.
 *
 * - Only our entry (name = our controller name) is added, replaced or removed;
 *   every other controller's entry is written back exactly as read.
 * - No request at all when the cached import already matches; after a GET, no
 *   write when the live object matches.
 * - Writes are merge-patches of the /status subresource carrying the read
 *   resourceVersion; 409 Conflict -> re-read and retry (bounded).
 * - 8 controllers already present and none is ours -> 'full' (reported, not written).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InferencePoolImport } from '../model/types.js';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';
import { RESOURCE_SPECS } from '../sources/kubernetes/resources.js';
import type { ImportStatusPlan, RawControllerEntry } from './import-status.js';
import { MAX_CONTROLLERS, entryFromModel, sameEntry, withTransitionTimes } from './import-status.js';

export type RawImport = {
  metadata?: { resourceVersion?: string; generation?: number };
  status?: { controllers?: Record<string, unknown>[] } & Record<string, unknown>;
};

/** The two calls the writer makes; narrow so tests can fake it. */
export interface ImportStatusClient {
  /** undefined when the import does not exist (404). */
  get(namespace: string, name: string): Promise<RawImport | undefined>;
  /** Merge-patch of /status; rejects with the HTTP status in `code` (409 on a stale resourceVersion). */
  patchStatus(namespace: string, name: string, patch: object): Promise<RawImport>;
}

export function createImportStatusClient(kc: KubeConfig): ImportStatusClient {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, version, plural } = RESOURCE_SPECS.InferencePoolImport;
  return {
    async get(namespace, name) {
      try {
        return (await api.getNamespacedCustomObjectStatus({ group, version, plural, namespace, name })) as RawImport;
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    async patchStatus(namespace, name, body) {
      const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
      return (await api.patchNamespacedCustomObjectStatus({ group, version, plural, namespace, name, body }, options)) as RawImport;
    },
  };
}

export type WriteOutcome =
  | 'unchanged' // already as desired: nothing written
  | 'written' // our entry added or updated
  | 'removed' // our entry removed
  | 'full' // 8 controllers, none ours: not written
  | 'gone' // the import no longer exists
  | 'conflict'; // still conflicting after every retry

export interface WriteResult {
  readonly namespace: string;
  readonly name: string;
  readonly outcome: WriteOutcome;
  readonly attempts: number;
}

export interface ImportStatusWriterOptions {
  readonly client: ImportStatusClient;
  readonly controllerName: string;
  readonly logger?: Logger;
  /** Re-reads after a 409 before giving up (default 5). */
  readonly maxConflictRetries?: number;
  readonly now?: () => string;
}

export class ImportStatusWriter {
  private readonly retries: number;

  constructor(private readonly o: ImportStatusWriterOptions) {
    this.retries = o.maxConflictRetries ?? 5;
  }

  /** True when the cached (decoded) import already shows the plan: no request needed. */
  upToDate(plan: ImportStatusPlan, cached: InferencePoolImport | undefined): boolean {
    if (!cached) return false;
    const ours = cached.status.controllers.find((c) => c.name === this.o.controllerName);
    if (plan.desired === undefined) return ours === undefined;
    return ours !== undefined && sameEntry(entryFromModel(ours), plan.desired);
  }

  async apply(plan: ImportStatusPlan, cached?: InferencePoolImport): Promise<WriteResult> {
    const { namespace, name } = plan;
    const result = (outcome: WriteOutcome, attempts: number): WriteResult => ({ namespace, name, outcome, attempts });
    if (this.upToDate(plan, cached)) return result('unchanged', 0);
    for (let attempt = 1; attempt <= this.retries + 1; attempt++) {
      const live = await this.o.client.get(namespace, name);
      if (!live) return result('gone', attempt);
      const controllers = live.status?.controllers ?? [];
      const index = controllers.findIndex((c) => c.name === this.o.controllerName);
      const current = index >= 0 ? (controllers[index] as unknown as RawControllerEntry) : undefined;
      let next: Record<string, unknown>[];
      let outcome: WriteOutcome;
      if (plan.desired === undefined) {
        if (index < 0) return result('unchanged', attempt);
        next = controllers.filter((_, i) => i !== index);
        outcome = 'removed';
      } else {
        const desired = withTransitionTimes(plan.desired, current, this.now());
        if (current && sameEntry(current, desired)) return result('unchanged', attempt);
        if (index < 0 && controllers.length >= MAX_CONTROLLERS) {
          this.o.logger?.warn(
            { import: `${namespace}/${name}`, controllers: controllers.map((c) => c.name) },
            `InferencePoolImport ${namespace}/${name} already has ${MAX_CONTROLLERS} status.controllers entries; cannot add ours (${this.o.controllerName})`,
          );
          return result('full', attempt);
        }
        const entry = desired as unknown as Record<string, unknown>;
        next = index >= 0 ? controllers.map((c, i) => (i === index ? entry : c)) : [...controllers, entry];
        outcome = 'written';
      }
      const patch = { metadata: { resourceVersion: live.metadata?.resourceVersion }, status: { controllers: next } };
      try {
        await this.o.client.patchStatus(namespace, name, patch);
        this.o.logger?.info({ import: `${namespace}/${name}`, outcome, attempt }, `InferencePoolImport status ${outcome}`);
        return result(outcome, attempt);
      } catch (err) {
        const status = httpStatusOf(err);
        if (status === 404) return result('gone', attempt);
        if (status !== 409) throw err;
        this.o.logger?.debug({ import: `${namespace}/${name}`, attempt }, 'status write conflicted (409), re-reading');
      }
    }
    this.o.logger?.warn({ import: `${namespace}/${name}` }, `status write still conflicting after ${this.retries} retries`);
    return result('conflict', this.retries + 1);
  }

  private now(): string {
    return this.o.now?.() ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  }
}
