/**
 * The pure snapshot builder: all members' objects + the router config ->
 * an immutable RoutingSnapshot and the diagnostics explaining what was left
 * out. Never throws on bad objects.
 */
import type { RouterConfig } from '../config/schema.js';
import type { ClusterState } from '../sources/types.js';
import { attachRoutes } from './attach.js';
import { createContext } from './context.js';
import { CandidateResolver, expandRule } from './expand.js';
import { compileMatchTable, type TableRule } from './match.js';
import { buildPickerPools } from './picker-pools.js';
import type { Candidate, Diagnostic, RouteSummary, RoutingSnapshot } from './types.js';

export interface BuildInput {
  readonly config: RouterConfig;
  readonly clusters: readonly ClusterState[];
  /** Increases by one per build in a process. */
  readonly version: number;
  readonly now?: Date;
}

export interface BuildResult {
  readonly snapshot: RoutingSnapshot;
  readonly diagnostics: readonly Diagnostic[];
}

const SEVERITY_ORDER: Record<Diagnostic['severity'], number> = { error: 0, warning: 1, info: 2 };

function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
    a.subject.localeCompare(b.subject) ||
    (a.path ?? '').localeCompare(b.path ?? '') ||
    a.reason.localeCompare(b.reason)
  );
}

export function buildSnapshot(input: BuildInput): BuildResult {
  const { config } = input;
  const ctx = createContext(config, input.clusters);
  const resolver = new CandidateResolver(ctx);

  // Routes in "namespace/name" order (keys built once, not per comparison).
  const attached = attachRoutes(ctx)
    .map((a) => ({ a, key: `${a.route.metadata.namespace}/${a.route.metadata.name}` }))
    .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));

  const routes: RouteSummary[] = [];
  const tableRules: TableRule[] = [];
  for (const { a } of attached) {
    const specRules = a.route.spec.rules;
    const rules = new Array<RouteSummary['rules'][number]>(specRules.length);
    for (let i = 0; i < specRules.length; i++) {
      const r = specRules[i]!;
      const rule = expandRule(ctx, resolver, a.route, i, r);
      tableRules.push({ attached: a, rule, matches: r.matches });
      rules[i] = rule;
    }
    routes.push({
      route: { namespace: a.route.metadata.namespace, name: a.route.metadata.name },
      hostnames: a.hostnames,
      parents: a.parents,
      attachments: a.attachments,
      ...(a.route.metadata.creationTimestamp !== undefined ? { creationTimestamp: a.route.metadata.creationTimestamp } : {}),
      rules,
    });
  }
  const pickerPools = buildPickerPools(ctx, resolver);
  const table = compileMatchTable(tableRules, ctx.localCluster, config.routes.regex, (d) => ctx.diagnostics.add(d));

  const diagnostics = ctx.diagnostics.list().sort(compareDiagnostics);
  const refusedObjects = resolver.excludedObjects();
  const candidates = new Map<string, Candidate>();
  for (const c of resolver.sortedCandidates()) candidates.set(c.id, c);
  const snapshot: RoutingSnapshot = {
    version: input.version,
    builtAt: (input.now ?? new Date()).toISOString(),
    localCluster: ctx.localCluster,
    mode: config.mode,
    routes,
    ...(pickerPools.size > 0 ? { pickerPools } : {}),
    candidates,
    diagnostics,
    excludedObjects: refusedObjects.length === 0 ? ctx.excludedObjects : [...ctx.excludedObjects, ...refusedObjects],
    clusters: input.clusters
      .filter((s) => ctx.clusters.has(s.cluster))
      .filter((s, i, all) => all.findIndex((x) => x.cluster === s.cluster) === i)
      .map((s) => ({ name: s.cluster, revision: s.revision, stale: s.stale, objects: s.objects.length })),
    table,
  };
  return { snapshot, diagnostics };
}
