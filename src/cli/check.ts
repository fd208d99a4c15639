/**
 * `mcip-router --check`: load every member's objects once, build the snapshot,
 * print the routing table. The exit code tells a pipeline what it found:
 * 0 no error diagnostic; 1 loaded, but the table has errors (an object left out
 * as invalid, a backendRef whose share of requests gets HTTP 500, a refused rule,
 * a route attached to no served Gateway, ...); 2 a
 * member's manifests could not be loaded at all (unreadable files). After the table, one
 * `warning:` line per weakened security setting (e.g. epp.tls.insecureSkipVerify) and per pool
 * without a load signal; warnings do not change the exit code. With fleet.clusterProfiles the
 * members the hub's ClusterProfiles name are loaded too, and a fleet section follows (check-fleet.ts).
 * The local cluster's name, and where it came from, is printed after the table; when it cannot
 * be decided (sources disagree, none names it) that is the one load error.
 */
import { type LoadedRouterConfig } from '../config/schema.js';
import { configuredName } from '../config/local-name.js';
import type { Logger } from '../log.js';
import { configWarnings, formatWarnings } from '../signals/load-signal.js';
import { planCandidate } from '../signals/plan.js';
import { buildSnapshot } from '../snapshot/build.js';
import { formatRoutingTable } from '../snapshot/describe.js';
import { createObjectSource } from '../sources/create-source.js';
import type { ClusterState, SourceError } from '../sources/types.js';
import { toSourceError } from '../runtime/load-sources.js';
import { loadFleet } from './check-fleet.js';
import { IdentityError } from '../sources/identity/cluster-identity.js';
import { type ResolvedLocal, resolveLocalCluster } from '../sources/identity/resolve-local.js';

export const CHECK_OK = 0;
export const CHECK_ROUTE_ERRORS = 1;
export const CHECK_LOAD_ERRORS = 2;

export interface CheckResult {
  readonly code: typeof CHECK_OK | typeof CHECK_ROUTE_ERRORS | typeof CHECK_LOAD_ERRORS;
  /** The routing table (stdout); or, for load errors, every error (stderr). */
  readonly output: string;
}

export async function runCheck(loaded: LoadedRouterConfig, logger: Logger): Promise<CheckResult> {
  // The local cluster's name first: every later stage reads it. Not decidable: a load error.
  let named: ResolvedLocal;
  try {
    named = await resolveLocalCluster(loaded);
  } catch (err) {
    if (!(err instanceof IdentityError)) throw err;
    const cluster = configuredName(loaded)?.value ?? 'local';
    return { code: CHECK_LOAD_ERRORS, output: formatErrors([{ cluster, reason: 'read', message: err.message, errors: [] }]) };
  }
  const { config, identity } = named;
  const states: ClusterState[] = [];
  const errors: SourceError[] = [];
  for (const cluster of config.clusters) {
    const source = await createObjectSource(cluster, config, logger.child({ cluster: cluster.name }));
    let state: ClusterState | undefined;
    try {
      await source.start({
        onState: (s) => {
          state = s;
        },
        onError: (e) => errors.push(e),
      });
    } catch (err) {
      errors.push(toSourceError(cluster.name, err));
    } finally {
      await source.stop();
    }
    if (state) states.push(state);
  }
  const fleet = await loadFleet(config, logger);
  if (fleet) {
    states.push(...fleet.states);
    errors.push(...fleet.errors);
  }
  // "cluster name: X from ...", after the table.
  const section = `cluster name: ${identity.name} from ${identity.from}\n${fleet?.section ?? ''}`;
  if (errors.length > 0) return { code: CHECK_LOAD_ERRORS, output: formatErrors(errors) + section };
  const routing = fleet?.config ?? config;
  const { snapshot, diagnostics } = buildSnapshot({ config: routing, clusters: states, version: 1 });
  const failed = diagnostics.some((d) => d.severity === 'error');
  // Weakened security and pools without a load signal: warnings, never a failed check.
  const warnings = configWarnings(routing, [...snapshot.candidates.values()].map((c) => planCandidate(c, routing)));
  return { code: failed ? CHECK_ROUTE_ERRORS : CHECK_OK, output: formatRoutingTable(snapshot, diagnostics) + formatWarnings(warnings) + section };
}

export function formatErrors(errors: readonly SourceError[]): string {
  const lines: string[] = [];
  for (const e of errors) {
    if (e.errors.length === 0) {
      lines.push(`error: cluster ${e.cluster}: ${e.message}`);
      continue;
    }
    for (const f of e.errors) {
      // A problem of the text itself (a YAML syntax error) has no field path: its message gives line and column.
      const where = f.origin ? ` (${f.origin})` : '';
      const field = f.path === '' ? '' : `${f.path}: `;
      lines.push(`error: cluster ${e.cluster}: ${f.object}: ${field}${f.message}${where}`);
    }
  }
  lines.push(`${lines.length} error(s)`);
  return `${lines.join('\n')}\n`;
}
