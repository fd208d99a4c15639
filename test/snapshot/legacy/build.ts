// Frozen copy of src/snapshot/build.ts as of commit 9580a0d (before the build-performance work), kept only as
// the reference for test/snapshot/equivalence.test.ts. Do not edit it, and do not import it from src/.
/**
 * The pure snapshot builder: all members' objects + the router config ->
 * an immutable RoutingSnapshot and the diagnostics explaining what was left
 * out. Never throws on bad objects.
 */
import type { RouterConfig } from '../../../src/config/schema.js';
import type { ClusterState } from '../../../src/sources/types.js';
import { attachRoutes } from './attach.js';
import { createContext } from './context.js';
import { CandidateResolver, expandRule } from './expand.js';
import { compileMatchTable, type TableRule } from '../../../src/snapshot/match.js';
import type { Diagnostic, RouteSummary, RoutingSnapshot } from '../../../src/snapshot/types.js';

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

  const attached = attachRoutes(ctx).sort((a, b) => {
    const ka = `${a.route.metadata.namespace}/${a.route.metadata.name}`;
    const kb = `${b.route.metadata.namespace}/${b.route.metadata.name}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });

  const routes: RouteSummary[] = [];
  const tableRules: TableRule[] = [];
  for (const a of attached) {
    const rules = a.route.spec.rules.map((r, i) => {
      const rule = { ...expandRule(ctx, resolver, a.route, i, r), matches: r.matches };
      tableRules.push({ attached: a, rule, matches: r.matches });
      return rule;
    });
    routes.push({
      route: { namespace: a.route.metadata.namespace, name: a.route.metadata.name },
      hostnames: a.hostnames,
      parents: a.parents,
      ...(a.route.metadata.creationTimestamp !== undefined ? { creationTimestamp: a.route.metadata.creationTimestamp } : {}),
      rules,
    });
  }
  const table = compileMatchTable(tableRules, ctx.localCluster, (d) => ctx.diagnostics.add(d));

  const diagnostics = ctx.diagnostics.list().sort(compareDiagnostics);
  const candidates = new Map([...resolver.candidates.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const snapshot: RoutingSnapshot = {
    version: input.version,
    builtAt: (input.now ?? new Date()).toISOString(),
    localCluster: ctx.localCluster,
    mode: config.mode,
    routes,
    candidates,
    diagnostics,
    clusters: input.clusters
      .filter((s) => ctx.clusters.has(s.cluster))
      .filter((s, i, all) => all.findIndex((x) => x.cluster === s.cluster) === i)
      .map((s) => ({ name: s.cluster, revision: s.revision, stale: s.stale, objects: s.objects.length })),
    table,
  };
  return { snapshot, diagnostics };
}
