/**
 * backendRefs -> BackendGroups of shared Candidates. Every pool is resolved
 * once per build (same id => same Candidate object); what cannot be used
 * becomes an Exclusion plus a Diagnostic.
 *
 * Hot path of the build (10,000 pools and imports): candidates are single
 * object literals, lookups go through the nested namespace -> name indexes
 * (no joined-string keys), and messages are only formatted for what fails.
 * A pool's resolution depends only on its cluster's objects and the router
 * config, so it is also kept for later builds while both are the same objects
 * (see {@link resolutionCache}).
 */
import type { RouterConfig } from '../config/schema.js';
import {
  EXPORT_ANNOTATION,
  GROUP_INFERENCE,
  GROUP_INFERENCE_X,
  type BackendRef,
  type HTTPRoute,
  type HTTPRouteMatch,
  type HTTPRouteRule,
  type InferencePool,
  type InferencePoolImport,
} from '../model/types.js';
import { parsePickPolicy, PICK_POLICIES, PICK_POLICY_ANNOTATION, type PickPolicy } from '../config/pick-policy.js';
import { ENDPOINT_PICKER_REF_MISSING, endpointPickerRefMissing, lookup, nsName, ROUTE_REASONS, routeStatus, type BuildContext, type ClusterObjects } from './context.js';
import {
  clusterScope,
  resolveEpp,
  resolveParent,
  type ClusterScope,
  type FailedObject,
} from './resolve.js';
import { encodeRequestHeaderMutation } from '../protocol/header-mutation.js';
import { modifierOutsideEnvoy, reportRuleOutcome } from './rule-outcome.js';
import type { BackendGroup, Candidate, Diagnostic, ExcludedObject, Exclusion, ImportOrigin, RouteRule, StatusTarget } from './types.js';

/** An exclusion plus where its diagnostic points. */
interface Problem {
  readonly exclusion: Exclusion;
  readonly subject: string;
  readonly path?: string;
  /** Set when the problem is the route's own backendRef (the exclusion's reason is then an upstream ResolvedRefs reason). */
  readonly routeRef?: true;
}

export interface Expansion {
  readonly candidates: readonly Candidate[];
  readonly problems: readonly Problem[];
  /** Member objects whose fields the resolution refused (listed with the snapshot's excluded objects). */
  readonly objects?: readonly ExcludedObject[];
  /** For an InferencePoolImport backendRef: where its exporting clusters came from. */
  readonly importOrigin?: ImportOrigin;
}

const NO_PROBLEMS: readonly Problem[] = Object.freeze([]);
const NO_CANDIDATES: readonly Candidate[] = Object.freeze([]);
const NO_WARNINGS: readonly Diagnostic[] = Object.freeze([]);
const NO_OBJECTS: readonly ExcludedObject[] = Object.freeze([]);

/**
 * One pool's resolution against its cluster's objects and the router config:
 * the expansion itself, plus what reusing it needs.
 */
interface Resolution extends Expansion {
  /** Warnings emitted while resolving (replayed into every build that uses the resolution). */
  readonly warnings: readonly Diagnostic[];
  /** Refused member objects (replayed like the warnings). */
  readonly objects: readonly ExcludedObject[];
  /** Stamp of the build that last used it: each build counts its candidate and replays its warnings once. */
  usedIn: number;
}

type ByPool<T> = Map<string, Map<string, T>>;

/**
 * Pool resolutions kept between builds, per cluster index (itself cached per
 * ClusterState object, see context.ts) and valid only for the RouterConfig
 * object they were made with (mode, local cluster, TLS and address overrides
 * all come from it). A rebuild after one member changed re-resolves only that
 * member's pools. Weakly keyed, so bounded by the states still referenced;
 * pools that are not found are not cached (their message depends on who
 * asked). Invisible in the output: a cached resolution is the same value a
 * fresh one would be, and its warnings are replayed where they were raised.
 */
const resolutionCache = new WeakMap<ClusterObjects, { readonly config: RouterConfig; readonly pools: ByPool<Resolution> }>();

function cachedResolutions(objects: ClusterObjects, config: RouterConfig): ByPool<Resolution> {
  let entry = resolutionCache.get(objects);
  if (entry === undefined || entry.config !== config) {
    entry = { config, pools: new Map() };
    resolutionCache.set(objects, entry);
  }
  return entry.pools;
}

function getIn<T>(m: ByPool<T>, namespace: string, name: string): T | undefined {
  const inNamespace = m.get(namespace);
  return inNamespace === undefined ? undefined : inNamespace.get(name);
}

function setIn<T>(m: ByPool<T>, namespace: string, name: string, value: T): void {
  let inNamespace = m.get(namespace);
  if (inNamespace === undefined) {
    inNamespace = new Map();
    m.set(namespace, inNamespace);
  }
  inNamespace.set(name, value);
}

/** Per build and cluster: where to look things up, and the pools resolved so far. */
interface ClusterMemo {
  readonly scope: ClusterScope;
  readonly local: boolean;
  /** Resolutions of pools found in the cluster (shared with other builds); undefined when no objects are loaded. */
  readonly resolved: ByPool<Resolution> | undefined;
  /** This build's answers for pools not found (the first caller's message sticks). */
  readonly missing: ByPool<Expansion>;
  /** This build's usable candidates of the cluster, in the order first used. */
  readonly candidates: Candidate[];
}

/** Build stamps for {@link Resolution.usedIn}: a number, so a cached resolution does not keep a past build alive. */
let builds = 0;

export class CandidateResolver {
  private readonly clusters = new Map<string, ClusterMemo>();
  private readonly imports: ByPool<Expansion> = new Map();
  /** Scratch for the warnings of one resolution. */
  private readonly warnings: Diagnostic[] = [];
  /** This build's refused member objects, once each (see {@link excludedObjects}). */
  private readonly objects = new Map<string, ExcludedObject>();
  private readonly stamp = ++builds;

  constructor(private readonly ctx: BuildContext) {}

  /**
   * An InferencePool in `cluster` (the local one for an InferencePool
   * backendRef); `viaImport` when an InferencePoolImport of the same
   * namespace/name lists the cluster as exporting.
   */
  pool(cluster: string, namespace: string, name: string, viaImport = false): Expansion {
    const memo = this.clusters.get(cluster) ?? this.memoFor(cluster);
    const { objects } = memo.scope;
    const pool = objects === undefined ? undefined : lookup(objects.pools, namespace, name);
    if (pool === undefined || memo.resolved === undefined) {
      let res = getIn(memo.missing, namespace, name);
      if (res === undefined) {
        const why = objects === undefined ? `no objects are loaded for cluster ${cluster}` : `cluster ${cluster} has no InferencePool ${nsName(namespace, name)}`;
        const via = viaImport && !memo.local ? ` (listed as exporting by InferencePoolImport ${nsName(namespace, name)})` : '';
        res = excluded(cluster, namespace, name, 'PoolNotFound', `${why}${via}`);
        setIn(memo.missing, namespace, name, res);
      }
      return res;
    }
    let res = getIn(memo.resolved, namespace, name);
    if (res === undefined) {
      const { warnings } = this;
      warnings.length = 0;
      const { candidates, problems, objects } = resolveFound(this.ctx.mode, memo, pool, warnings);
      res = { candidates, problems, warnings: warnings.length > 0 ? warnings.slice() : NO_WARNINGS, objects: objects ?? NO_OBJECTS, usedIn: 0 };
      setIn(memo.resolved, namespace, name, res);
    }
    if (res.usedIn !== this.stamp) {
      res.usedIn = this.stamp;
      for (const w of res.warnings) this.ctx.diagnostics.add(w);
      for (const o of res.objects) this.objects.set(`${o.cluster}\u0000${o.kind}\u0000${o.namespace}\u0000${o.name}\u0000${o.field}\u0000${o.reason}`, o);
      const c = res.candidates[0];
      if (c !== undefined) memo.candidates.push(c);
    }
    return res;
  }

  private memoFor(cluster: string): ClusterMemo {
    const scope = clusterScope(this.ctx, cluster);
    const memo: ClusterMemo = {
      scope,
      local: cluster === this.ctx.localCluster,
      resolved: scope.objects === undefined ? undefined : cachedResolutions(scope.objects, this.ctx.config),
      missing: new Map(),
      candidates: [],
    };
    this.clusters.set(cluster, memo);
    return memo;
  }

  /** Member objects this build's pools refused a field of (an EPP Service's or parent Gateway's address), by cluster, namespace and name. */
  excludedObjects(): ExcludedObject[] {
    const key = (o: ExcludedObject): string => `${o.cluster}/${o.namespace}/${o.name}`;
    return [...this.objects.values()].sort((a, b) => compareStrings(key(a), key(b)));
  }

  /**
   * Every distinct usable candidate, sorted by id. Ids start with
   * "cluster/", so the clusters' lists are concatenated in that order first:
   * when each list is already in id order (routes and pools named alike), the
   * final sort only confirms one run instead of sorting from scratch.
   */
  sortedCandidates(): Candidate[] {
    const memos = [...this.clusters.values()].sort((a, b) => compareStrings(`${a.scope.cluster}/`, `${b.scope.cluster}/`));
    const out: Candidate[] = [];
    for (const m of memos) for (const c of m.candidates) out.push(c);
    return out.sort(byId);
  }

  /** A local InferencePoolImport: one candidate per exporting cluster. */
  importRef(namespace: string, name: string): Expansion {
    let res = getIn(this.imports, namespace, name);
    if (res === undefined) {
      res = this.expandImport(namespace, name);
      setIn(this.imports, namespace, name, res);
    }
    return res;
  }

  /**
   * The exporting clusters of InferencePoolImport namespace/name: from the
   * local object's status.controllers[].exportingClusters when it lists any;
   * otherwise, when the local member reads manifests (nothing there writes
   * import status), derived from the members' pools of that namespace/name
   * annotated for export.
   */
  private expandImport(namespace: string, name: string): Expansion {
    const { ctx } = this;
    const key = nsName(namespace, name);
    const local = ctx.clusters.get(ctx.localCluster);
    const imp = local === undefined ? undefined : lookup(local.imports, namespace, name);
    const listed = imp === undefined ? [] : listedClusters(imp);
    if (listed.length > 0) return this.expandExporters(key, namespace, name, listed, { source: 'object', exportingClusters: listed.map((l) => l.cluster) });
    if (ctx.clusterConfigs.get(ctx.localCluster)?.manifests !== undefined) {
      const exporters = derivedExporters(ctx, namespace, name);
      if (exporters.length > 0) return this.expandExporters(key, namespace, name, exporters.map((cluster) => ({ cluster })), { source: 'derived', exportingClusters: exporters });
      return importProblem(ctx, key, imp === undefined ? 'ImportNotFound' : 'NoExportingClusters', `no member exports InferencePool ${key} (annotation ${EXPORT_ANNOTATION}: ClusterSet)${imp === undefined ? '' : ` and InferencePoolImport ${key} lists no exporting clusters`}, so the import has no pools`);
    }
    if (imp === undefined) {
      return importProblem(ctx, key, 'ImportNotFound', `InferencePoolImport ${key} not found in cluster ${ctx.localCluster}; has the pool been exported (annotation ${EXPORT_ANNOTATION}: ClusterSet) and synced?`);
    }
    return importProblem(ctx, key, 'NoExportingClusters', `InferencePoolImport ${key} lists no status.controllers[].exportingClusters; no cluster exports this pool yet`);
  }

  private expandExporters(key: string, namespace: string, name: string, exporters: readonly Exporter[], origin: ImportOrigin): Expansion {
    const { ctx } = this;
    const candidates: Candidate[] = [];
    let problems: Problem[] | undefined;
    for (const { cluster, path } of exporters) {
      if (!ctx.clusterConfigs.has(cluster)) {
        (problems ??= []).push({
          exclusion: {
            subject: `${cluster}/${namespace}/${name}`,
            reason: 'UnknownCluster',
            message: `exporting cluster "${cluster}" of InferencePoolImport ${key} is not in config clusters[]; add it with its object source`,
          },
          subject: `${ctx.localCluster}: InferencePoolImport ${key}`,
          ...(path !== undefined ? { path } : {}),
        });
        continue;
      }
      const r = this.pool(cluster, namespace, name, true);
      for (const c of r.candidates) candidates.push(c);
      if (r.problems.length > 0) for (const p of r.problems) (problems ??= []).push(p);
    }
    return { candidates, problems: problems ?? NO_PROBLEMS, importOrigin: origin };
  }
}

/** An exporting cluster and, when an object lists it, where. */
interface Exporter {
  readonly cluster: string;
  readonly path?: string;
}

/** Each exporting cluster of the object once, at its first listing, in order. */
function listedClusters(imp: InferencePoolImport): Exporter[] {
  const seen = new Set<string>();
  const out: Exporter[] = [];
  const controllers = imp.status.controllers;
  for (let i = 0; i < controllers.length; i++) {
    const exporting = controllers[i]!.exportingClusters;
    for (let j = 0; j < exporting.length; j++) {
      const cluster = exporting[j]!.name;
      if (seen.has(cluster)) continue;
      seen.add(cluster);
      out.push({ cluster, path: `status.controllers[${i}].exportingClusters[${j}]` });
    }
  }
  return out;
}

/** Members (sorted by name) whose objects hold InferencePool namespace/name annotated for export to the ClusterSet. */
function derivedExporters(ctx: BuildContext, namespace: string, name: string): string[] {
  const out: string[] = [];
  for (const [cluster, objects] of ctx.clusters) {
    if (lookup(objects.pools, namespace, name)?.metadata.annotations[EXPORT_ANNOTATION] === 'ClusterSet') out.push(cluster);
  }
  return out.sort(compareStrings);
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const byId = (a: Candidate, b: Candidate): number => compareStrings(a.id, b.id);

function importProblem(ctx: BuildContext, key: string, reason: string, message: string): Expansion {
  return {
    candidates: NO_CANDIDATES,
    problems: [{ exclusion: { subject: `InferencePoolImport ${key}`, reason, message }, subject: `${ctx.localCluster}: InferencePoolImport ${key}` }],
  };
}

function excluded(cluster: string, namespace: string, name: string, reason: string, message: string, objects?: readonly FailedObject[]): Expansion {
  return {
    candidates: NO_CANDIDATES,
    problems: [{ exclusion: { subject: `${cluster}/${namespace}/${name}`, reason, message }, subject: `${cluster}: InferencePool ${nsName(namespace, name)}` }],
    ...(objects === undefined ? {} : { objects: objects.map((o) => refusedObject(cluster, reason, message, o)) }),
  };
}

function refusedObject(cluster: string, reason: string, message: string, object: FailedObject): ExcludedObject {
  return { cluster, kind: object.kind, namespace: object.namespace, name: object.name, field: object.field, reason, message };
}

function portNumbers(ports: InferencePool['spec']['targetPorts']): number[] {
  const out = new Array<number>(ports.length);
  for (let i = 0; i < ports.length; i++) out[i] = ports[i]!.number;
  return out;
}

/** The candidate for a pool that exists in its cluster, or why it cannot be used. */
function resolveFound(mode: BuildContext['mode'], memo: ClusterMemo, pool: InferencePool, warnings: Diagnostic[]): Expansion {
  const { scope, local } = memo;
  const { cluster } = scope;
  const namespace = pool.metadata.namespace;
  const name = pool.metadata.name;
  if (!local && pool.metadata.annotations[EXPORT_ANNOTATION] !== 'ClusterSet') {
    const found = pool.metadata.annotations[EXPORT_ANNOTATION];
    return excluded(
      cluster,
      namespace,
      name,
      'NotExported',
      `InferencePool ${nsName(namespace, name)} in cluster ${cluster} is not exported: it needs annotation ${EXPORT_ANNOTATION}: "ClusterSet"` +
        (found === undefined ? '' : ` (found "${found}")`),
    );
  }
  const picker = pool.spec.endpointPickerRef;
  if (picker === undefined) return excluded(cluster, namespace, name, ENDPOINT_PICKER_REF_MISSING, endpointPickerRefMissing(pool, cluster));
  const id = `${cluster}/${namespace}/${name}`;
  const failureMode = picker.failureMode;
  const targetPorts = portNumbers(pool.spec.targetPorts);
  const epp = resolveEpp(scope, pool, warnings);
  // Key order as the builder always had it (id ... targetPorts, via, then parent/epp): /debug/routes JSON is unchanged.
  if (mode === 'Parent' && !local) {
    const parent = resolveParent(scope, pool);
    if (!parent.ok) return excluded(cluster, namespace, name, parent.reason, parent.message, parent.objects);
    const c: Candidate = epp.ok
      ? { id, cluster, namespace, pool: name, local, failureMode, targetPorts, via: 'parent', parent: parent.value, epp: epp.value }
      : { id, cluster, namespace, pool: name, local, failureMode, targetPorts, via: 'parent', parent: parent.value };
    if (epp.ok || epp.objects === undefined) return { candidates: [c], problems: NO_PROBLEMS };
    // Routed through its parent, the pool stays; its EPP is neither probed nor scraped.
    const message = `${epp.message} (the pool is still routed through its parent Gateway; its EPP is neither probed nor scraped)`;
    warnings.push({ severity: 'warning', subject: `${cluster}: InferencePool ${nsName(namespace, name)}`, reason: epp.reason, message });
    return { candidates: [c], problems: NO_PROBLEMS, objects: epp.objects.map((o) => refusedObject(cluster, epp.reason, message, o)) };
  }
  if (!epp.ok) return excluded(cluster, namespace, name, epp.reason, epp.message, epp.objects);
  // A remote FailOpen pool's parent Gateway, when it resolves, is where the data path fails open to.
  if (!local && failureMode === 'FailOpen') {
    const parent = resolveParent(scope, pool);
    if (parent.ok) {
      return { candidates: [{ id, cluster, namespace, pool: name, local, failureMode, targetPorts, via: 'epp', epp: epp.value, parent: parent.value }], problems: NO_PROBLEMS };
    }
  }
  return { candidates: [{ id, cluster, namespace, pool: name, local, failureMode, targetPorts, via: 'epp', epp: epp.value }], problems: NO_PROBLEMS };
}

const refPath = (index: number, j: number): string => `spec.rules[${index}].backendRefs[${j}]`;

function expandRef(ctx: BuildContext, resolver: CandidateResolver, route: HTTPRoute, ref: BackendRef, index: number, j: number): Expansion {
  const routeNs = route.metadata.namespace;
  const ns = ref.namespace ?? routeNs;
  if (ns === routeNs) {
    if (ref.kind === 'InferencePool' && ref.group === GROUP_INFERENCE) return resolver.pool(ctx.localCluster, ns, ref.name);
    if (ref.kind === 'InferencePoolImport' && ref.group === GROUP_INFERENCE_X) return resolver.importRef(ns, ref.name);
  }
  const refProblem = (reason: string, message: string): Expansion => ({
    candidates: NO_CANDIDATES,
    problems: [{
      exclusion: { subject: `${ref.kind} ${nsName(ns, ref.name)}`, reason, message },
      subject: `${ctx.localCluster}: HTTPRoute ${nsName(routeNs, route.metadata.name)}`,
      path: refPath(index, j),
      routeRef: true,
    }],
  });
  if (ns !== routeNs) {
    return refProblem(
      ROUTE_REASONS.refNotPermitted,
      `backendRef to namespace ${ns} from an HTTPRoute in ${routeNs}: cross-namespace references need a ReferenceGrant, ` +
        'and mcip-router does not support ReferenceGrant; put the route and the pool in the same namespace',
    );
  }
  return refProblem(
    ROUTE_REASONS.invalidKind,
    `backendRef group "${ref.group}" kind "${ref.kind}" is not routable by mcip-router; use InferencePool (group ${GROUP_INFERENCE}) ` +
      `or InferencePoolImport (group ${GROUP_INFERENCE_X})`,
  );
}

function expandGroup(ctx: BuildContext, resolver: CandidateResolver, route: HTTPRoute, index: number, ref: BackendRef, j: number): BackendGroup {
  const routeKey = nsName(route.metadata.namespace, route.metadata.name);
  const owner: BackendOwner = {
    subject: `${ctx.localCluster}: HTTPRoute ${routeKey}`,
    label: `backendRef ${refPath(index, j)} of HTTPRoute ${routeKey}`,
    path: refPath(index, j),
    status: routeStatus(route.metadata, 'ResolvedRefs'),
  };
  const group = { group: ref.group, kind: ref.kind, namespace: ref.namespace ?? route.metadata.namespace, name: ref.name };
  return backendGroup(ctx, owner, group, ref.weight, expandRef(ctx, resolver, route, ref, index, j));
}

/** What holds a backend reference (an HTTPRoute rule's backendRef, a multi-cluster pool's backends entry), for its diagnostics. */
export interface BackendOwner {
  /** The diagnostic subject, e.g. "cluster-a: HTTPRoute default/llm". */
  readonly subject: string;
  /** The reference in words, e.g. "backendRef spec.rules[0].backendRefs[1] of HTTPRoute default/llm". */
  readonly label: string;
  readonly path: string;
  /** The condition an unresolved reference turns False (routes only). */
  readonly status?: StatusTarget;
}

/** A local InferencePool (group inference.networking.k8s.io) or InferencePoolImport of `namespace`, expanded into its candidates. */
export function expandLocalRef(ctx: BuildContext, resolver: CandidateResolver, kind: 'InferencePool' | 'InferencePoolImport', namespace: string, name: string): Expansion {
  return kind === 'InferencePool' ? resolver.pool(ctx.localCluster, namespace, name) : resolver.importRef(namespace, name);
}

/** One expanded reference as a BackendGroup; what was left out is reported against `owner`. */
export function backendGroup(ctx: BuildContext, owner: BackendOwner, group: BackendGroup['ref'], refWeight: number, expansion: Expansion): BackendGroup {
  const weight = Number.isFinite(refWeight) ? Math.max(0, refWeight) : 0;
  const { candidates, problems, importOrigin } = expansion;
  const origin = importOrigin !== undefined ? { import: importOrigin } : {};
  if (problems.length === 0) return { ref: group, weight, candidates, excluded: [], ...origin };
  // An exclusion that empties a weighted backendRef costs requests (HTTP 500): an error; otherwise a warning.
  const fatal = candidates.length === 0 && weight > 0;
  const severity = fatal ? 'error' : 'warning';
  const impact = fatal ? ` [${owner.label} has no usable pool: its share of requests gets HTTP 500]` : '';
  const resolvedRefs = owner.status;
  for (const p of problems) {
    ctx.diagnostics.add({
      severity,
      subject: p.subject,
      ...(p.path !== undefined ? { path: p.path } : {}),
      reason: p.exclusion.reason,
      message: p.exclusion.message + impact,
      ...(p.routeRef && resolvedRefs ? { status: resolvedRefs } : {}),
    });
  }
  // A backendRef whose pools are all left out (not found, or unusable) does not resolve: the route's own diagnostic says so.
  if (candidates.length === 0 && !problems.some((p) => p.routeRef)) {
    const why = problems.map((p) => `${p.exclusion.subject}: ${p.exclusion.reason}`).join('; ');
    ctx.diagnostics.add({
      severity,
      subject: owner.subject,
      path: owner.path,
      reason: ROUTE_REASONS.backendNotFound,
      message:
        `backendRef ${group.kind} ${nsName(group.namespace, group.name)} has no usable pool (${why})` +
        (fatal ? '; its share of requests gets HTTP 500' : '; it has weight 0, so no request is sent to it'),
      ...(resolvedRefs ? { status: resolvedRefs } : {}),
    });
  }
  return { ref: group, weight, candidates, excluded: problems.map((p) => p.exclusion), ...origin };
}

/** Expands one HTTPRoute rule into its backend groups; the rule carries its matches for the table and /debug. */
export function expandRule(
  ctx: BuildContext,
  resolver: CandidateResolver,
  route: HTTPRoute,
  index: number,
  rule: HTTPRouteRule,
): RouteRule & { readonly matches: readonly HTTPRouteMatch[] } {
  const refs = rule.backendRefs;
  const backends = new Array<BackendGroup>(refs.length);
  let totalWeight = 0;
  for (let j = 0; j < refs.length; j++) {
    const g = expandGroup(ctx, resolver, route, index, refs[j]!, j);
    backends[j] = g;
    totalWeight += g.weight;
  }
  const policy = routePolicy(ctx, route);
  const blocked = modifierOutsideEnvoy(ctx, rule, index);
  const unsupported = blocked === undefined ? rule.unsupported : [...rule.unsupported, blocked];
  const refused = unsupported.length > 0;
  reportRuleOutcome(ctx, route, index, blocked === undefined ? rule : { ...rule, unsupported }, totalWeight);
  return {
    route: { namespace: route.metadata.namespace, name: route.metadata.name },
    index,
    ...(rule.name !== undefined ? { name: rule.name } : {}),
    backends,
    totalWeight,
    ...(policy !== undefined ? { policy } : {}),
    ...(refused ? { unsupported } : {}),
    ...(rule.requestHeaderModifier !== undefined && blocked === undefined
      ? { requestHeaderModifier: { modifier: rule.requestHeaderModifier, fragment: encodeRequestHeaderMutation(rule.requestHeaderModifier) } }
      : {}),
    matches: rule.matches,
  };
}

/** The route's pick-policy annotation; an unknown value is a warning and the default applies. */
function routePolicy(ctx: BuildContext, route: HTTPRoute): PickPolicy | undefined {
  const value = route.metadata.annotations[PICK_POLICY_ANNOTATION];
  if (value === undefined) return undefined;
  const policy = parsePickPolicy(value);
  if (policy === undefined) {
    ctx.diagnostics.add({
      severity: 'warning',
      subject: `${ctx.localCluster}: HTTPRoute ${nsName(route.metadata.namespace, route.metadata.name)}`,
      path: `metadata.annotations["${PICK_POLICY_ANNOTATION}"]`,
      reason: 'InvalidPickPolicy',
      message: `unknown pick policy "${value}" (expected one of ${PICK_POLICIES.join(', ')}); the router's picker.defaultPolicy applies`,
    });
  }
  return policy;
}
