/**
 * Starts every member cluster's object source and waits for the initial load.
 *
 * Start-up rules: a source whose initial load fails because of the operator's
 * input (unreadable or invalid manifests) is fatal, so a broken deployment fails
 * fast and loudly. A source that cannot *reach* its cluster (connect, auth,
 * missing CRD) is not fatal: the router serves without it and the source keeps
 * retrying. The local cluster is always required.
 */
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { createObjectSource } from '../sources/create-source.js';
import type { ObjectSource, SourceError, SourceListener } from '../sources/types.js';

const UNREACHABLE: ReadonlySet<SourceError['reason']> = new Set(['connect', 'auth', 'missing-crd']);

export class StartupError extends Error {
  constructor(
    message: string,
    readonly errors: readonly SourceError[],
  ) {
    super(message);
    this.name = 'StartupError';
  }
}

export interface StartedSources {
  readonly sources: readonly ObjectSource[];
  /** Problems with members the router starts without. */
  readonly degraded: readonly SourceError[];
  stop(): Promise<void>;
}

export async function startSources(config: RouterConfig, listener: SourceListener, logger: Logger): Promise<StartedSources> {
  const sources = await Promise.all(config.clusters.map((c) => createObjectSource(c, config, logger.child({ cluster: c.name }))));
  const results = await Promise.allSettled(sources.map((s) => s.start(listener)));
  const fatal: SourceError[] = [];
  const degraded: SourceError[] = [];
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') return;
    const cluster = config.clusters[i]?.name ?? '?';
    const error = toSourceError(cluster, r.reason);
    const local = cluster === config.clusterName;
    (UNREACHABLE.has(error.reason) && !local ? degraded : fatal).push(error);
  });
  const stop = async (): Promise<void> => {
    await Promise.allSettled(sources.map((s) => s.stop()));
  };
  if (fatal.length > 0) {
    await stop();
    throw new StartupError(fatal.map((e) => `cluster ${e.cluster}: ${e.message}`).join('\n'), fatal);
  }
  for (const e of degraded) {
    logger.warn({ cluster: e.cluster, reason: e.reason }, `starting without cluster ${e.cluster}: ${e.message}`);
  }
  return { sources, degraded, stop };
}

/** Sources reject start() with a SourceError-shaped value or a plain Error. */
export function toSourceError(cluster: string, reason: unknown): SourceError {
  if (reason && typeof reason === 'object' && 'reason' in reason && 'message' in reason) {
    const r = reason as Partial<SourceError> & { message: string };
    return {
      cluster: r.cluster ?? cluster,
      reason: (r.reason as SourceError['reason']) ?? 'internal',
      message: r.message,
      errors: r.errors ?? [],
    };
  }
  const message = reason instanceof Error ? reason.message : String(reason);
  return { cluster, reason: 'internal', message, errors: [] };
}
