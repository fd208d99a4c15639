/**
 * Object storage behind the Kubernetes API server stand-in: one store per
 * resource, one global, monotonically increasing resourceVersion (like etcd's
 * revision), an event history that watches replay from, and compaction that
 * makes old resourceVersions "too old" (410 Gone).
 */
import { randomUUID } from 'node:crypto';
import type { Json } from './kube-apiserver-patch.js';
import { clone } from './kube-apiserver-patch.js';

export interface ResourceDef {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** Has a /status subresource: the main resource ignores status, /status ignores everything else. */
  readonly status: boolean;
}

export const RESOURCES: readonly ResourceDef[] = [
  { group: 'inference.networking.k8s.io', version: 'v1', plural: 'inferencepools', kind: 'InferencePool', namespaced: true, status: true },
  {
    group: 'inference.networking.x-k8s.io',
    version: 'v1alpha1',
    plural: 'inferencepoolimports',
    kind: 'InferencePoolImport',
    namespaced: true,
    status: true,
  },
  { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute', namespaced: true, status: true },
  { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', kind: 'Gateway', namespaced: true, status: true },
  { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', kind: 'GatewayClass', namespaced: false, status: true },
  { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true, status: true },
  { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true, status: false },
  // The push/pull record (deploy/crds/memberexportrecords.yaml): no status subresource.
  { group: 'mcip-router.dev', version: 'v1alpha1', plural: 'memberexportrecords', kind: 'MemberExportRecord', namespaced: true, status: false },
  // One resource served in two versions (same objects, like a CRD with two served versions).
  { group: 'multicluster.x-k8s.io', version: 'v1alpha1', plural: 'clusterprofiles', kind: 'ClusterProfile', namespaced: true, status: true },
  { group: 'multicluster.x-k8s.io', version: 'v1alpha2', plural: 'clusterprofiles', kind: 'ClusterProfile', namespaced: true, status: true },
  // The About API (KEP-2149): cluster-scoped, served in v1beta1 (the storage version, with /status) and v1alpha1 (without).
  { group: 'about.k8s.io', version: 'v1beta1', plural: 'clusterproperties', kind: 'ClusterProperty', namespaced: false, status: true },
  { group: 'about.k8s.io', version: 'v1alpha1', plural: 'clusterproperties', kind: 'ClusterProperty', namespaced: false, status: false },
];

export function apiVersionOf(def: ResourceDef): string {
  return def.group === '' ? def.version : `${def.group}/${def.version}`;
}

/** An error the server renders as a metav1.Status. */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export type KubeObj = { [key: string]: Json } & { metadata: { [key: string]: Json } };

export interface StoreEvent {
  readonly rv: number;
  readonly plural: string;
  readonly namespace: string;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: KubeObj;
  /** MODIFIED: the object before the change (a label-selector watch turns it into ADDED or DELETED). */
  readonly previous?: KubeObj;
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;

function meta(o: KubeObj): { name: string; namespace: string; resourceVersion?: string } {
  return o.metadata as unknown as { name: string; namespace: string; resourceVersion?: string };
}

/** Everything except metadata and status: a change here bumps metadata.generation. */
function specPart(o: KubeObj): string {
  const { metadata: _m, status: _s, ...rest } = o;
  return JSON.stringify(rest);
}

export class KubeStore {
  private rv = 1000;
  private compactedRv = 0;
  private readonly data = new Map<string, Map<string, KubeObj>>();
  private history: StoreEvent[] = [];
  private readonly listeners = new Set<(e: StoreEvent) => void>();
  /**
   * Per resource, the CRD's structural schema for status: what it does not declare is dropped
   * when status is written (kube-apiserver prunes unknown fields of a CRD without
   * x-kubernetes-preserve-unknown-fields), so a writer reads back only what the installed CRD keeps.
   */
  readonly statusPruners = new Map<string, (status: unknown) => unknown>();

  get resourceVersion(): number {
    return this.rv;
  }

  /** Oldest resourceVersion a watch can still resume from (exclusive). */
  get compacted(): number {
    return this.compactedRv;
  }

  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Drops the event history: watches from any older resourceVersion now get 410 Gone. */
  compact(): void {
    this.compactedRv = this.rv;
    this.history = [];
  }

  eventsSince(plural: string, rv: number, namespace?: string): StoreEvent[] {
    return this.history.filter((e) => e.plural === plural && e.rv > rv && (namespace === undefined || e.namespace === namespace));
  }

  list(plural: string, namespace?: string): KubeObj[] {
    const all = [...(this.data.get(plural)?.values() ?? [])].filter((o) => namespace === undefined || meta(o).namespace === namespace);
    return all.sort((a, b) => keyOf(meta(a).namespace, meta(a).name).localeCompare(keyOf(meta(b).namespace, meta(b).name))).map(clone);
  }

  get(plural: string, namespace: string, name: string): KubeObj | undefined {
    const o = this.data.get(plural)?.get(keyOf(namespace, name));
    return o ? clone(o) : undefined;
  }

  create(def: ResourceDef, input: KubeObj): KubeObj {
    const o = clone(input);
    const m = o.metadata;
    if (typeof m.name !== 'string' || m.name === '') throw new ApiError(422, 'Invalid', 'metadata.name: Required value');
    if (def.namespaced && typeof m.namespace !== 'string') m.namespace = 'default';
    if (!def.namespaced) delete m.namespace;
    const namespace = String(m.namespace ?? '');
    const store = this.bucket(def.plural);
    if (store.has(keyOf(namespace, m.name))) {
      throw new ApiError(409, 'AlreadyExists', `${def.plural} "${m.name}" already exists`);
    }
    o.apiVersion = apiVersionOf(def);
    o.kind = def.kind;
    m.uid = randomUUID();
    m.generation = 1;
    m.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    m.resourceVersion = String(++this.rv);
    store.set(keyOf(namespace, m.name), o);
    this.emit({ rv: this.rv, plural: def.plural, namespace, type: 'ADDED', object: o });
    return clone(o);
  }

  /**
   * Replaces an object the way the API server does for PUT (and for the result
   * of a PATCH): a resourceVersion in the input must match (else 409); on the
   * main resource status is kept, on /status only status is taken; generation
   * is bumped when the spec changed.
   */
  update(def: ResourceDef, input: KubeObj, subresource?: 'status'): KubeObj {
    const { name, namespace: ns, resourceVersion } = meta(input);
    const namespace = def.namespaced ? (ns ?? 'default') : '';
    const store = this.bucket(def.plural);
    const current = store.get(keyOf(namespace, name));
    if (!current) throw new ApiError(404, 'NotFound', `${def.plural} "${name}" not found`);
    if (resourceVersion !== undefined && resourceVersion !== '' && resourceVersion !== current.metadata.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${def.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    let next: KubeObj;
    if (subresource === 'status') {
      next = clone(current);
      const prune = this.statusPruners.get(def.plural);
      if (input.status === undefined) delete next.status;
      else next.status = prune ? (prune(clone(input.status)) as Json) : clone(input.status);
    } else {
      next = clone(input);
      next.metadata = { ...clone(input.metadata) };
      for (const k of ['uid', 'creationTimestamp', 'generation']) {
        const v = current.metadata[k];
        if (v !== undefined) next.metadata[k] = v;
      }
      if (def.status) {
        if (current.status === undefined) delete next.status;
        else next.status = clone(current.status);
      }
      next.apiVersion = apiVersionOf(def);
      next.kind = def.kind;
      next.metadata.namespace = current.metadata.namespace ?? null;
      if (next.metadata.namespace === null) delete next.metadata.namespace;
      if (specPart(next) !== specPart(current)) next.metadata.generation = Number(current.metadata.generation ?? 0) + 1;
    }
    next.metadata.resourceVersion = current.metadata.resourceVersion ?? '';
    if (JSON.stringify(next) === JSON.stringify(current)) return clone(current);
    next.metadata.resourceVersion = String(++this.rv);
    store.set(keyOf(namespace, name), next);
    this.emit({ rv: this.rv, plural: def.plural, namespace, type: 'MODIFIED', object: next, previous: current });
    return clone(next);
  }

  delete(def: ResourceDef, namespace: string, name: string): KubeObj {
    const store = this.bucket(def.plural);
    const current = store.get(keyOf(namespace, name));
    if (!current) throw new ApiError(404, 'NotFound', `${def.plural} "${name}" not found`);
    store.delete(keyOf(namespace, name));
    const gone = clone(current);
    gone.metadata.resourceVersion = String(++this.rv);
    this.emit({ rv: this.rv, plural: def.plural, namespace, type: 'DELETED', object: gone });
    return clone(gone);
  }

  /** Removes every object of a resource without watch events (a CRD being uninstalled). */
  purge(plural: string): void {
    this.data.delete(plural);
  }

  private bucket(plural: string): Map<string, KubeObj> {
    let b = this.data.get(plural);
    if (!b) {
      b = new Map();
      this.data.set(plural, b);
    }
    return b;
  }

  private emit(e: StoreEvent): void {
    this.history.push(e);
    for (const fn of this.listeners) fn(e);
  }
}
