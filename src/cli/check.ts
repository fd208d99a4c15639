/**
 * `mcip-router --check`: load every member's objects once, build the snapshot,
 * print the routing table. Errors (unreadable or invalid input) are printed and
 * make the check fail; exclusions are part of the table, not errors.
 */
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { buildSnapshot } from '../snapshot/build.js';
import { formatRoutingTable } from '../snapshot/describe.js';
import { createObjectSource } from '../sources/create-source.js';
import type { ClusterState, SourceError } from '../sources/types.js';
import { toSourceError } from '../runtime/load-sources.js';

export interface CheckResult {
  readonly ok: boolean;
  readonly output: string;
}

export async function runCheck(config: RouterConfig, logger: Logger): Promise<CheckResult> {
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
    if (state) {
      states.push(state);
      for (const e of state.errors) errors.push({ cluster: cluster.name, reason: 'invalid', message: e.message, errors: [e] });
    }
  }
  if (errors.length > 0) return { ok: false, output: formatErrors(errors) };
  const { snapshot, diagnostics } = buildSnapshot({ config, clusters: states, version: 1 });
  return { ok: true, output: formatRoutingTable(snapshot, diagnostics) };
}

export function formatErrors(errors: readonly SourceError[]): string {
  const lines: string[] = [];
  for (const e of errors) {
    if (e.errors.length === 0) {
      lines.push(`error: cluster ${e.cluster}: ${e.message}`);
      continue;
    }
    for (const f of e.errors) {
      const where = f.origin ? ` (${f.origin})` : '';
      lines.push(`error: cluster ${e.cluster}: ${f.object}: ${f.path}: ${f.message}${where}`);
    }
  }
  lines.push(`${lines.length} error(s)`);
  return `${lines.join('\n')}\n`;
}
