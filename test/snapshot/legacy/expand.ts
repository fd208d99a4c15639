// Frozen copy of src/snapshot/expand.ts as of commit 9580a0d (before the build-performance work), kept only as
// the reference for test/snapshot/equivalence.test.ts. Do not edit it, and do not import it from src/.
/**
 * backendRefs -> BackendGroups of shared Candidates. Every pool is resolved
 * once per build (same id => same Candidate object); what cannot be used
 * becomes an Exclusion plus a Diagnostic.
 */
import {
  EXPORT_ANNOTATION,
  GROUP_INFERENCE,
  GROUP_INFERENCE_X,
  type BackendRef,
  type HTTPRoute,
  type HTTPRouteRule,
  type InferencePool,
} from '../../../src/model/types.js';
import { parsePickPolicy, PICK_POLICIES, PICK_POLICY_ANNOTATION, type PickPolicy } from '../../../src/picker/policy.js';
import { nsName, type BuildContext } from './context.js';
import { resolveEpp, resolveParent } from './resolve.js';
import type { BackendGroup, Candidate, Exclusion, RouteRule } from '../../../src/snapshot/types.js';

/** An exclusion plus where its diagnostic points. */
interface Problem {
  readonly exclusion: Exclusion;
  readonly subject: string;
  readonly path?: string;
}

interface Expansion {
  readonly candidates: readonly Candidate[];
  readonly problems: readonly Problem[];
}

export class CandidateResolver {
  /** Every distinct usable candidate, by id. */
  readonly candidates = new Map<string, Candidate>();
  private readonly pools = new Map<string, Expansion>();
  private readonly imports = new Map<string, Expansion>();

  constructor(private readonly ctx: BuildContext) {}

  /** An InferencePool in `cluster` (the local one for an InferencePool backendRef). */
  pool(cluster: string, namespace: string, name: string, importName?: string): Expansion {
    const id = `${cluster}/${namespace}/${name}`;
    let res = this.pools.get(id);
    if (res === undefined) {
      res = this.resolvePool(id, cluster, namespace, name, importName);
      this.pools.set(id, res);
      if (res.candidates[0] !== undefined) this.candidates.set(id, res.candidates[0]);
    }
    return res;
  }

  /** A local InferencePoolImport: one candidate per exporting cluster. */
  importRef(namespace: string, name: string): Expansion {
    const key = nsName(namespace, name);
    let res = this.imports.get(key);
    if (res === undefined) {
      res = this.expandImport(namespace, name);
      this.imports.set(key, res);
    }
    return res;
  }

  private expandImport(namespace: string, name: string): Expansion {
    const { ctx } = this;
    const key = nsName(namespace, name);
    const subject = `${ctx.localCluster}: InferencePoolImport ${key}`;
    const problem = (reason: string, message: string, who = `InferencePoolImport ${key}`, path?: string): Problem => ({
      exclusion: { subject: who, reason, message },
      subject,
      ...(path !== undefined ? { path } : {}),
    });
    const imp = ctx.clusters.get(ctx.localCluster)?.imports.get(key);
    if (imp === undefined) {
      return { candidates: [], problems: [problem('ImportNotFound', `InferencePoolImport ${key} not found in cluster ${ctx.localCluster}; has the pool been exported (annotation ${EXPORT_ANNOTATION}: ClusterSet) and synced?`)] };
    }
    /** Exporting cluster name -> field path of its first listing (deduplicated, in order). */
    const listed = new Map<string, string>();
    imp.status.controllers.forEach((c, i) =>
      c.exportingClusters.forEach((e, j) => {
        if (!listed.has(e.name)) listed.set(e.name, `status.controllers[${i}].exportingClusters[${j}]`);
      }),
    );
    if (listed.size === 0) {
      return { candidates: [], problems: [problem('NoExportingClusters', `InferencePoolImport ${key} lists no status.controllers[].exportingClusters; no cluster exports this pool yet`)] };
    }
    const candidates: Candidate[] = [];
    const problems: Problem[] = [];
    for (const [cluster, path] of listed) {
      if (!ctx.clusterConfigs.has(cluster)) {
        problems.push(problem(
          'UnknownCluster',
          `exporting cluster "${cluster}" of InferencePoolImport ${key} is not in config clusters[]; add it with its object source`,
          `${cluster}/${namespace}/${name}`,
          path,
        ));
        continue;
      }
      const r = this.pool(cluster, namespace, name, key);
      candidates.push(...r.candidates);
      problems.push(...r.problems);
    }
    return { candidates, problems };
  }

  private resolvePool(id: string, cluster: string, namespace: string, name: string, importName?: string): Expansion {
    const { ctx } = this;
    const local = cluster === ctx.localCluster;
    const subject = `${cluster}: InferencePool ${nsName(namespace, name)}`;
    const excluded = (reason: string, message: string): Expansion => ({
      candidates: [],
      problems: [{ exclusion: { subject: id, reason, message }, subject }],
    });
    const objs = ctx.clusters.get(cluster);
    const pool = objs?.pools.get(nsName(namespace, name));
    if (pool === undefined) {
      const why = objs === undefined ? `no objects are loaded for cluster ${cluster}` : `cluster ${cluster} has no InferencePool ${nsName(namespace, name)}`;
      const via = importName !== undefined && !local ? ` (listed as exporting by InferencePoolImport ${importName})` : '';
      return excluded('PoolNotFound', `${why}${via}`);
    }
    if (!local && pool.metadata.annotations[EXPORT_ANNOTATION] !== 'ClusterSet') {
      const found = pool.metadata.annotations[EXPORT_ANNOTATION];
      return excluded(
        'NotExported',
        `InferencePool ${nsName(namespace, name)} in cluster ${cluster} is not exported: it needs annotation ${EXPORT_ANNOTATION}: "ClusterSet"` +
          (found === undefined ? '' : ` (found "${found}")`),
      );
    }
    const base = candidateBase(id, cluster, local, pool);
    const epp = resolveEpp(ctx, cluster, pool);
    if (ctx.mode === 'Parent' && !local) {
      const parent = resolveParent(ctx, cluster, pool);
      if (!parent.ok) return excluded(parent.reason, parent.message);
      const c: Candidate = epp.ok
        ? { ...base, via: 'parent', parent: parent.value, epp: epp.value }
        : { ...base, via: 'parent', parent: parent.value };
      return { candidates: [c], problems: [] };
    }
    if (!epp.ok) return excluded(epp.reason, epp.message);
    // A remote FailOpen pool's parent Gateway, when it resolves, is where the data path fails open to.
    const parent = !local && base.failureMode === 'FailOpen' ? resolveParent(ctx, cluster, pool) : undefined;
    if (parent?.ok) return { candidates: [{ ...base, via: 'epp', epp: epp.value, parent: parent.value }], problems: [] };
    return { candidates: [{ ...base, via: 'epp', epp: epp.value }], problems: [] };
  }
}

function candidateBase(id: string, cluster: string, local: boolean, pool: InferencePool) {
  return {
    id,
    cluster,
    namespace: pool.metadata.namespace,
    pool: pool.metadata.name,
    local,
    failureMode: pool.spec.endpointPickerRef.failureMode,
    targetPorts: pool.spec.targetPorts.map((p) => p.number),
  };
}

function expandRef(ctx: BuildContext, resolver: CandidateResolver, route: HTTPRoute, ref: BackendRef, path: string): Expansion {
  const routeNs = route.metadata.namespace;
  const ns = ref.namespace ?? routeNs;
  const who = `${ref.kind} ${nsName(ns, ref.name)}`;
  const routeSubject = `${ctx.localCluster}: HTTPRoute ${nsName(routeNs, route.metadata.name)}`;
  const refProblem = (reason: string, message: string): Expansion => ({
    candidates: [],
    problems: [{ exclusion: { subject: who, reason, message }, subject: routeSubject, path }],
  });
  if (ns !== routeNs) {
    return refProblem(
      'RefNotPermitted',
      `backendRef to namespace ${ns} from an HTTPRoute in ${routeNs}: cross-namespace references need a ReferenceGrant, ` +
        'and mcip-router does not support ReferenceGrant; put the route and the pool in the same namespace',
    );
  }
  if (ref.kind === 'InferencePool' && ref.group === GROUP_INFERENCE) return resolver.pool(ctx.localCluster, ns, ref.name);
  if (ref.kind === 'InferencePoolImport' && ref.group === GROUP_INFERENCE_X) return resolver.importRef(ns, ref.name);
  return refProblem(
    'InvalidKind',
    `backendRef group "${ref.group}" kind "${ref.kind}" is not routable by mcip-router; use InferencePool (group ${GROUP_INFERENCE}) ` +
      `or InferencePoolImport (group ${GROUP_INFERENCE_X})`,
  );
}

/** Expands one HTTPRoute rule into its backend groups. */
export function expandRule(ctx: BuildContext, resolver: CandidateResolver, route: HTTPRoute, index: number, rule: HTTPRouteRule): RouteRule {
  const backends: BackendGroup[] = rule.backendRefs.map((ref, j) => {
    const weight = Number.isFinite(ref.weight) ? Math.max(0, ref.weight) : 0;
    const path = `spec.rules[${index}].backendRefs[${j}]`;
    const { candidates, problems } = expandRef(ctx, resolver, route, ref, path);
    // An exclusion that empties a weighted backendRef costs requests (HTTP 500): an error; otherwise a warning.
    const fatal = candidates.length === 0 && weight > 0;
    const severity = fatal ? 'error' : 'warning';
    const impact = fatal
      ? ` [backendRef ${path} of HTTPRoute ${nsName(route.metadata.namespace, route.metadata.name)} has no usable pool: its share of requests gets HTTP 500]`
      : '';
    for (const p of problems) {
      ctx.diagnostics.add({
        severity,
        subject: p.subject,
        ...(p.path !== undefined ? { path: p.path } : {}),
        reason: p.exclusion.reason,
        message: p.exclusion.message + impact,
      });
    }
    return {
      ref: { group: ref.group, kind: ref.kind, namespace: ref.namespace ?? route.metadata.namespace, name: ref.name },
      weight,
      candidates,
      excluded: problems.map((p) => p.exclusion),
    };
  });
  const totalWeight = backends.reduce((sum, b) => sum + b.weight, 0);
  const policy = routePolicy(ctx, route);
  return {
    route: { namespace: route.metadata.namespace, name: route.metadata.name },
    index,
    ...(rule.name !== undefined ? { name: rule.name } : {}),
    backends,
    totalWeight,
    ...(policy !== undefined ? { policy } : {}),
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
