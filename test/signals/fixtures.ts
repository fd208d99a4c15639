// Builders for SignalStore tests: candidates as the snapshot builder makes them,
// and the signals part of the router config.
import { clusterSchema, type ClusterConfig, type TlsConfig } from '../../src/config/schema.js';
import type { SignalsConfig } from '../../src/signals/plan.js';
import type { Candidate, EppTarget, ParentTarget } from '../../src/snapshot/types.js';

export const PLAINTEXT: TlsConfig = { enabled: false, insecureSkipVerify: true };

export function eppTarget(cluster: string, address: string, service = { namespace: 'ns', name: 'epp' }): EppTarget {
  const i = address.lastIndexOf(':');
  return { address, host: address.slice(0, i), port: Number(address.slice(i + 1)), cluster, service, source: 'override', tls: PLAINTEXT };
}

export function parentTarget(cluster: string, address: string): ParentTarget {
  return { address, cluster, gateway: { namespace: 'gw', name: 'gateway' }, source: 'override' };
}

const base = (cluster: string, namespace: string, pool: string, local: boolean) => ({
  id: `${cluster}/${namespace}/${pool}`,
  cluster,
  namespace,
  pool,
  local,
  failureMode: 'FailClose' as const,
  targetPorts: [8000],
});

export function viaEpp(cluster: string, pool: string, epp: EppTarget, namespace = 'ns'): Candidate {
  return { ...base(cluster, namespace, pool, cluster === 'local'), via: 'epp', epp };
}

export function viaParent(cluster: string, pool: string, parent: ParentTarget, epp?: EppTarget, namespace = 'ns'): Candidate {
  return { ...base(cluster, namespace, pool, false), via: 'parent', parent, ...(epp ? { epp } : {}) };
}

export function snapshotOf(...candidates: Candidate[]): { candidates: ReadonlyMap<string, Candidate> } {
  return { candidates: new Map(candidates.map((c) => [c.id, c])) };
}

/** Fast intervals for tests; `epp` / `parentProbe` are merged over them per cluster. */
export function signalsConfig(
  clusters: Record<string, { epp?: Record<string, unknown>; parentProbe?: Record<string, unknown>; eppAnswers?: Record<string, unknown> }>,
  outlier = {},
): SignalsConfig {
  const out: ClusterConfig[] = Object.entries(clusters).map(([name, c]) =>
    clusterSchema.parse({
      name,
      manifests: { paths: ['unused.yaml'] },
      epp: {
        ...c.epp,
        health: { intervalMs: 50, timeoutMs: 300, ...(c.epp?.['health'] as object) },
        metrics: { intervalMs: 50, timeoutMs: 300, ...(c.epp?.['metrics'] as object) },
      },
      parentProbe: { intervalMs: 50, timeoutMs: 300, ...c.parentProbe },
      ...(c.eppAnswers ? { eppAnswers: c.eppAnswers } : {}),
    }),
  );
  return { clusters: out, outlier: { consecutiveFailures: 5, baseEjectionMs: 10_000, maxEjectionMs: 300_000, ...outlier } };
}

export function fakeClock(start = Date.now()) {
  let offset = 0;
  return { now: () => start + (Date.now() - start) + offset, advance: (ms: number) => void (offset += ms) };
}

export function memoryLogger() {
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const log = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return { lines, logger: { info: log('info'), warn: log('warn'), debug: log('debug') } };
}
