/**
 * The push/pull topology's export record: one MemberExportRecord (mcip-router.dev/v1alpha1)
 * per member, named after the member, in its own hub namespace (PREFIX + member).
 *
 *   spec.formatVersion  1 (a reader refuses a format it does not know, naming it)
 *   spec.cluster        the member's name; must match the namespace and the name
 *   spec.exports[]      {namespace, name} of every pool the member exports to the ClusterSet
 *   spec.imports[]      {namespace, name, exportingClusters[]} of its InferencePoolImports
 *                       carrying the agent's entry (what pool statuses wait for)
 *   spec.renewTime      when the leader last wrote it (its heartbeat)
 *
 * A record is trusted no further than the hub controller trusts a member's objects:
 * who wrote it is its namespace, never what it says; names must be valid Kubernetes
 * names; every refusal is a FieldError naming the record and the field. Pure.
 */
import type { FieldError, InferencePoolImport } from '../model/types.js';
import { EXPORT_ANNOTATION } from '../model/types.js';
import { resourceSpec } from '../sources/kubernetes/resources.js';
import type { RawObject } from '../sources/kubernetes/lister.js';
import { EXPORT_VALUE, keyOf, type ExportPlan, type PoolView } from './export-plan.js';

export const RECORD_GROUP = 'mcip-router.dev';
export const RECORD_SPEC = resourceSpec('MemberExportRecord', RECORD_GROUP, 'v1alpha1', 'memberexportrecords');
export const RECORD_FORMAT_VERSION = 1;
/** The CRD's bounds (deploy/crds/memberexportrecords.yaml): a record beyond them is refused whole. */
export const MAX_RECORD_ENTRIES = 4096;
export const MAX_EXPORTING_CLUSTERS = 1024;

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export interface RecordImport {
  readonly namespace: string;
  readonly name: string;
  readonly exportingClusters: readonly string[];
}

export interface RecordSpec {
  readonly formatVersion: number;
  readonly cluster: string;
  readonly exports: readonly { readonly namespace: string; readonly name: string }[];
  readonly imports: readonly RecordImport[];
  readonly renewTime: string;
}

/** A record that passed every check. */
export interface MemberRecord extends RecordSpec {
  readonly resourceVersion: string;
}

export type RecordDecode = { readonly ok: true; readonly record: MemberRecord } | { readonly ok: false; readonly error: FieldError };

/** The hub namespace of a member's record. */
export const recordNamespace = (prefix: string, cluster: string): string => `${prefix}${cluster}`;

/** What this member publishes: the plan's exporters naming it, and its imports carrying our entry (sorted). */
export function buildRecordSpec(cluster: string, controllerName: string, plan: ExportPlan, imports: readonly InferencePoolImport[], renewTime: string): RecordSpec {
  const exports = [...plan.exporters]
    .filter(([, clusters]) => clusters.includes(cluster))
    .map(([key]) => key)
    .sort()
    .map((key) => {
      const i = key.indexOf('/');
      return { namespace: key.slice(0, i), name: key.slice(i + 1) };
    });
  const held = imports
    .flatMap((i) => {
      const ours = i.status.controllers.find((c) => c.name === controllerName);
      return ours ? [{ namespace: i.metadata.namespace, name: i.metadata.name, exportingClusters: ours.exportingClusters.map((c) => c.name) }] : [];
    })
    .sort((a, b) => keyOf(a.namespace, a.name).localeCompare(keyOf(b.namespace, b.name)));
  return { formatVersion: RECORD_FORMAT_VERSION, cluster, exports, imports: held, renewTime };
}

/** Same content apart from renewTime. */
export function sameRecordContent(a: RecordSpec, b: RecordSpec): boolean {
  const { renewTime: _a, ...ra } = a;
  const { renewTime: _b, ...rb } = b;
  return JSON.stringify(ra) === JSON.stringify(rb);
}

/** Checks one record read from the hub; the member it speaks for is taken from its namespace. */
export function decodeRecord(raw: RawObject, prefix: string): RecordDecode {
  const meta = (raw.metadata ?? {}) as Record<string, unknown>;
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : '';
  const name = typeof meta.name === 'string' ? meta.name : '';
  const object = `MemberExportRecord ${namespace}/${name}`;
  const fail = (path: string, message: string, reason?: string): RecordDecode => ({ ok: false, error: { object, path, message, ...(reason ? { reason } : {}) } });
  if (!namespace.startsWith(prefix) || !LABEL.test(namespace.slice(prefix.length))) {
    return fail('metadata.namespace', `not a member's record namespace (${prefix}<cluster>): refused`, 'ForeignNamespace');
  }
  const member = namespace.slice(prefix.length);
  const spec = (raw.spec ?? {}) as Record<string, unknown>;
  if (spec.formatVersion !== RECORD_FORMAT_VERSION) {
    return fail('spec.formatVersion', `${JSON.stringify(spec.formatVersion)} is not a record format this agent reads (it reads ${RECORD_FORMAT_VERSION}); upgrade the agents so all read the newest format`, 'UnknownFormat');
  }
  if (spec.cluster !== member) {
    return fail('spec.cluster', `claims cluster ${JSON.stringify(spec.cluster)}, but the record lives in ${namespace}, the namespace of cluster ${member}: refused`, 'ClusterMismatch');
  }
  if (name !== member) return fail('metadata.name', `must be the member's name ${member}`, 'NameMismatch');
  if (typeof spec.renewTime !== 'string' || Number.isNaN(Date.parse(spec.renewTime))) return fail('spec.renewTime', 'must be an RFC 3339 time');
  const exports = entries(spec.exports, 'spec.exports');
  if (!Array.isArray(exports)) return fail(exports.path, exports.message);
  const imports = entries(spec.imports, 'spec.imports', true);
  if (!Array.isArray(imports)) return fail(imports.path, imports.message);
  return {
    ok: true,
    record: {
      formatVersion: RECORD_FORMAT_VERSION,
      cluster: member,
      exports: exports.map(({ namespace: n, name: m }) => ({ namespace: n, name: m })),
      imports,
      renewTime: spec.renewTime,
      resourceVersion: typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '',
    },
  };
}

/** The list's entries, or the first bad one's field and why. */
function entries(value: unknown, path: string, withClusters = false): RecordImport[] | { path: string; message: string } {
  const bad = (p: string, message: string) => ({ path: p, message });
  if (value === undefined) return [];
  if (!Array.isArray(value)) return bad(path, 'must be a list');
  if (value.length > MAX_RECORD_ENTRIES) return bad(path, `${value.length} entries, more than ${MAX_RECORD_ENTRIES}`);
  const seen = new Set<string>();
  const out: RecordImport[] = [];
  for (let i = 0; i < value.length; i++) {
    const e = (value[i] ?? {}) as Record<string, unknown>;
    const at = `${path}[${i}]`;
    if (typeof e.namespace !== 'string' || !LABEL.test(e.namespace) || e.namespace.length > 63) return bad(`${at}.namespace`, 'must be a namespace name');
    if (typeof e.name !== 'string' || !NAME.test(e.name) || e.name.length > 253) return bad(`${at}.name`, 'must be a lower-case RFC 1123 name');
    const key = keyOf(e.namespace, e.name);
    if (seen.has(key)) return bad(at, `${key} listed twice`);
    seen.add(key);
    let clusters: string[] = [];
    if (withClusters) {
      const c = e.exportingClusters;
      if (!Array.isArray(c) || c.length > MAX_EXPORTING_CLUSTERS || !c.every((n) => typeof n === 'string' && LABEL.test(n))) {
        return bad(`${at}.exportingClusters`, 'must be a list of cluster names');
      }
      clusters = c as string[];
    }
    out.push({ namespace: e.namespace, name: e.name, exportingClusters: clusters });
  }
  return out;
}

/** A member's record as the planner sees a member: its exported pools and its imports carrying our entry. */
export function recordPools(record: RecordSpec): PoolView[] {
  return record.exports.map((e) => ({
    metadata: { namespace: e.namespace, name: e.name, labels: {}, annotations: { [EXPORT_ANNOTATION]: EXPORT_VALUE } },
    status: { parents: [] },
  }));
}

export function recordImports(record: RecordSpec, controllerName: string): InferencePoolImport[] {
  return record.imports.map((i) => ({
    kind: 'InferencePoolImport',
    apiVersion: 'inference.networking.x-k8s.io/v1alpha1',
    metadata: { namespace: i.namespace, name: i.name, labels: {}, annotations: {} },
    status: { controllers: [{ name: controllerName, exportingClusters: i.exportingClusters.map((name) => ({ name })), parents: [], conditions: [] }] },
  }));
}
