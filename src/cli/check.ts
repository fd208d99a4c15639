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
 */
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { configWarnings, formatWarnings } from '../signals/load-signal.js';
import { planCandidate } from '../signals/plan.js';
import { buildSnapshot } from '../snapshot/build.js';
import { formatRoutingTable } from '../snapshot/describe.js';
import { createObjectSource } from '../sources/create-source.js';
import type { ClusterState, ObjectSource, SourceError } from '../sources/types.js';
import { toSourceError } from '../runtime/load-sources.js';
import { loadFleet } from './check-fleet.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { IdentityMismatchError, resolveIdentity } from '../sources/identity/cluster-identity.js';

export const CHECK_OK = 0;
export const CHECK_ROUTE_ERRORS = 1;
export const CHECK_LOAD_ERRORS = 2;

export interface CheckResult {
  readonly code: typeof CHECK_OK | typeof CHECK_ROUTE_ERRORS | typeof CHECK_LOAD_ERRORS;
  /** The routing table (stdout); or, for load errors, every error (stderr). */
  readonly output: string;
}

export async function runCheck(config: RouterConfig, logger: Logger): Promise<CheckResult> {
  const states: ClusterState[] = [];
  const errors: SourceError[] = [];
  let identity = '';
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
    if (cluster.name === config.clusterName) identity = await checkIdentity(config.clusterName, source, errors);
  }
  const fleet = await loadFleet(config, logger);
  if (fleet) {
    states.push(...fleet.states);
    errors.push(...fleet.errors);
  }
  const section = identity + (fleet?.section ?? '');
  if (errors.length > 0) return { code: CHECK_LOAD_ERRORS, output: formatErrors(errors) + section };
  const routing = fleet?.config ?? config;
  const { snapshot, diagnostics } = buildSnapshot({ config: routing, clusters: states, version: 1 });
  const failed = diagnostics.some((d) => d.severity === 'error');
  // Weakened security and pools without a load signal: warnings, never a failed check.
  const warnings = configWarnings(routing, [...snapshot.candidates.values()].map((c) => planCandidate(c, routing)));
  return { code: failed ? CHECK_ROUTE_ERRORS : CHECK_OK, output: formatRoutingTable(snapshot, diagnostics) + formatWarnings(warnings) + section };
}

/** "cluster name: X (from ...)" after the table; a mismatch with the local cluster's About API is a load error. */
async function checkIdentity(clusterName: string, source: ObjectSource, errors: SourceError[]): Promise<string> {
  // A Kubernetes source has its KubeConfig once started; a manifests source has none.
  const kubeConfig = (source as { kubeConfig?: KubeConfig }).kubeConfig;
  if (!kubeConfig) return `cluster name: ${clusterName} from ${resolveIdentity(clusterName, undefined).from}\n`;
  const { localIdentity } = await import('../sources/identity/about-api.js');
  try {
    return `cluster name: ${clusterName} from ${(await localIdentity(clusterName, kubeConfig)).from}\n`;
  } catch (err) {
    if (!(err instanceof IdentityMismatchError)) throw err;
    errors.push({ cluster: clusterName, reason: 'read', message: err.message, errors: [] });
    return '';
  }
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
