/**
 * Carries out one member's part of an ExportPlan: import creates, our
 * status.controllers[] entry, deletes after the withdrawal grace, and our
 * status.parents[] entry on its exported pools. Steps the plan already sees
 * done cost no request. Every outcome is noted in the export record.
 */
import type { Logger } from 'pino';
import { classifyError, httpStatusOf } from '../sources/kubernetes/api-errors.js';
import type { ExportAction, ExportOutcome, ExportRecord } from './export-record.js';
import type { ExportPlan, MemberImportStep, MemberPoolStep } from './export-plan.js';
import { CREATED_BY_ANNOTATION, keyOf } from './export-plan.js';
import { MAX_CONTROLLERS } from './import-status.js';
import { writeOwnEntry, type ExportClient, type RawEntry } from './export-writer.js';
import { ownsPoolParent, PRUNABLE_POOL_PARENT_FIELDS } from './export-pool-parent.js';

export interface MemberRun {
  readonly member: string;
  readonly plan: ExportPlan;
  readonly client: ExportClient;
  readonly controllerName: string;
  readonly now: () => string;
  /** Namespaces a create was refused in (namespace does not exist); updated here. */
  readonly missingNamespaces: Set<string>;
  /** Imports created here (or found existing on create) that the member's objects may not show yet; updated here. */
  readonly created: Set<string>;
  /** Pools (namespace/name) whose status.parents[] entry the member's CRD strips of controllerName; updated here. */
  readonly prunedPools: Set<string>;
  readonly record: ExportRecord;
  readonly logger: Logger;
  /** Checked between steps: a replica that lost the lease stops writing. */
  readonly stillLeading: () => boolean;
}

const CONFLICT_RETRIES = 5;
/** InferencePool (v1) status.parents maxItems. */
const MAX_POOL_PARENTS = 32;

/** Returns true when a step failed (the caller retries later). */
export async function runMemberSteps(r: MemberRun): Promise<boolean> {
  let failed = false;
  for (const step of r.plan.imports.get(r.member) ?? []) {
    if (!r.stillLeading()) return failed;
    const outcome = await guarded(r, keyOf(step.namespace, step.name), 'import', importAction(step), () => importStep(r, step));
    // An API server that does not answer: the rest of this run would only wait on it too.
    if (outcome === 'unreachable') return true;
    failed = outcome === 'failed' || failed;
  }
  for (const step of r.plan.pools.get(r.member) ?? []) {
    if (!r.stillLeading()) return failed;
    const outcome = await guarded(r, keyOf(step.namespace, step.name), 'pool', step.entry ? 'pool-status' : 'pool-status-remove', () => poolStep(r, step));
    if (outcome === 'unreachable') return true;
    failed = outcome === 'failed' || failed;
  }
  return failed;
}

type StepResult = { action: ExportAction; outcome: ExportOutcome; why?: string };

/** The action an import step is counted under, also when it fails. */
function importAction(step: MemberImportStep): ExportAction {
  const a = step.action;
  return a.type === 'ensure' ? (a.exists ? 'status' : 'create') : a.type;
}

async function guarded(r: MemberRun, key: string, part: 'import' | 'pool', action: ExportAction, fn: () => Promise<StepResult | undefined>): Promise<'ok' | 'failed' | 'unreachable'> {
  try {
    const result = await fn();
    if (result) r.record.note(key, r.member, part, result);
    return 'ok';
  } catch (err) {
    const failure = classifyError(err);
    const why = failure.message;
    r.record.note(key, r.member, part, { action, outcome: 'error', why });
    r.logger.warn({ member: r.member, object: key, part, why }, `export: ${part} ${key} in ${r.member} failed; retrying`);
    return failure.reason === 'timeout' || failure.reason === 'connect' ? 'unreachable' : 'failed';
  }
}

async function importStep(r: MemberRun, step: MemberImportStep): Promise<StepResult | undefined> {
  const { namespace, name, action } = step;
  const key = keyOf(namespace, name);
  const ours = (e: RawEntry): boolean => e.name === r.controllerName;
  const write = (desired: RawEntry | undefined) =>
    writeOwnEntry({ client: r.client, kind: 'InferencePoolImport', namespace, name, field: 'controllers', isOurs: ours, desired, maxEntries: MAX_CONTROLLERS, now: r.now(), retries: CONFLICT_RETRIES });
  switch (action.type) {
    case 'ensure': {
      if (action.upToDate) return { action: 'status', outcome: 'unchanged', why: 'import present with our entry' };
      if (!action.exists) {
        try {
          await r.client.createImport(namespace, name, { [CREATED_BY_ANNOTATION]: r.controllerName });
          r.logger.info({ member: r.member, import: key }, `created InferencePoolImport ${key} in ${r.member}`);
        } catch (err) {
          const status = httpStatusOf(err);
          if (status === 404 && missingNamespace(err)) {
            if (!r.missingNamespaces.has(namespace)) {
              r.missingNamespaces.add(namespace);
              r.logger.warn({ member: r.member, namespace }, `namespace ${namespace} does not exist in ${r.member}: its InferencePoolImports are not created until it does`);
            }
            return { action: 'create', outcome: 'namespace-missing', why: `namespace ${namespace} does not exist in ${r.member}; not created` };
          }
          if (status !== 409) throw err; // 409: it exists already (our cache is behind)
        }
        if (r.missingNamespaces.delete(namespace)) r.logger.info({ member: r.member, namespace }, `namespace ${namespace} exists in ${r.member} now`);
        r.created.add(key);
      }
      const w = await write(action.entry as unknown as RawEntry);
      if (w.outcome === 'gone') {
        r.created.delete(key);
        // Deleted since it was created or listed: create it again now (once; a second gone waits for the next run).
        if (action.exists) return importStep(r, { ...step, action: { ...action, exists: false } });
      }
      return { action: action.exists ? 'status' : 'create', outcome: w.outcome, why: `exporting clusters: ${action.entry.exportingClusters.map((c) => c.name).join(', ')}` };
    }
    case 'remove-entry': {
      const w = await write(undefined);
      return { action: 'remove-entry', outcome: w.outcome, why: 'no member exports it any more' };
    }
    case 'delete': {
      const live = await r.client.get('InferencePoolImport', namespace, name);
      if (!live) return { action: 'delete', outcome: 'gone' };
      const controllers = Array.isArray(live.status?.controllers) ? (live.status.controllers as RawEntry[]) : [];
      const held = controllers.filter((c) => !ours(c) && Array.isArray(c.exportingClusters) && c.exportingClusters.length > 0);
      if (held.length > 0) return { action: 'delete', outcome: 'kept', why: `exported through ${held.map((c) => String(c.name)).join(', ')}` };
      try {
        await r.client.deleteImport(namespace, name, live.metadata?.resourceVersion);
      } catch (err) {
        const status = httpStatusOf(err);
        if (status === 404) return { action: 'delete', outcome: 'gone' };
        if (status === 409) return { action: 'delete', outcome: 'conflict', why: 'changed since read; re-checked on the next run' };
        throw err;
      }
      r.logger.info({ member: r.member, import: key }, `deleted InferencePoolImport ${key} in ${r.member}: no exporter left after the grace`);
      return { action: 'delete', outcome: 'deleted', why: 'no exporter left after the grace' };
    }
    case 'wait':
      return { action: 'wait', outcome: 'pending', why: `no exporter left; deleted at ${new Date(action.deleteAt).toISOString()} unless one returns` };
    case 'keep':
      return { action: 'keep', outcome: 'unchanged', why: action.why };
  }
}

async function poolStep(r: MemberRun, step: MemberPoolStep): Promise<StepResult | undefined> {
  const { namespace, name, entry } = step;
  const action = entry ? 'pool-status' : 'pool-status-remove';
  const exported = entry?.conditions[0];
  const why = exported ? `Exported ${exported.status} (${exported.reason}): ${exported.message}` : 'export annotation removed';
  const key = keyOf(namespace, name);
  if (!entry) r.prunedPools.delete(key);
  if (step.upToDate) {
    if (entry) notePruned(r, key, step.pruned);
    return { action, outcome: 'unchanged', why };
  }
  const w = await writeOwnEntry({
    client: r.client,
    kind: 'InferencePool',
    namespace,
    name,
    field: 'parents',
    isOurs: ownsPoolParent(r.controllerName, namespace, name),
    desired: entry as unknown as RawEntry | undefined,
    maxEntries: MAX_POOL_PARENTS,
    mayBePruned: PRUNABLE_POOL_PARENT_FIELDS,
    now: r.now(),
    retries: CONFLICT_RETRIES,
  });
  if (entry && (w.outcome === 'written' || w.outcome === 'unchanged')) notePruned(r, key, w.pruned.length > 0);
  return { action, outcome: w.outcome, why };
}

/**
 * Tracks the pools whose entry lost controllerName to the member's CRD, and tells the
 * operator once per member (until none is left): the entry is still recognised by its
 * parentRef, but the CRD is older than the one the export status needs.
 */
function notePruned(r: MemberRun, key: string, pruned: boolean): void {
  if (!pruned) {
    if (r.prunedPools.delete(key) && r.prunedPools.size === 0) r.logger.info({ member: r.member, pool: key }, `InferencePool status in ${r.member} keeps controllerName now`);
    return;
  }
  if (r.prunedPools.has(key)) return;
  if (r.prunedPools.size === 0) {
    r.logger.warn(
      { member: r.member, pool: key },
      `InferencePool ${key} in ${r.member}: the API server dropped controllerName from our status.parents[] entry because the member's InferencePool CRD does not declare status.parents[].controllerName; the entry is recognised by its InferencePoolImport parentRef instead. Upgrade the GIE CRDs in ${r.member} to v1.1.0 or later`,
    );
  }
  r.prunedPools.add(key);
}

/** A create refused because the namespace does not exist (a missing CRD is a 404 too). */
function missingNamespace(err: unknown): boolean {
  const body = (err as { body?: unknown }).body;
  let status: { message?: unknown; details?: { kind?: unknown } } | undefined;
  try {
    status = (typeof body === 'string' ? JSON.parse(body) : body) as typeof status;
  } catch {
    return false;
  }
  return status?.details?.kind === 'namespaces' || (typeof status?.message === 'string' && /^namespaces "[^"]*" not found/.test(status.message));
}
