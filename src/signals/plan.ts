/**
 * Pure: what to probe for each candidate, from the candidate and the router
 * config. Targets are keyed by their full settings, so candidates that share an
 * EPP (or a parent) share one prober, and a settings change makes a new one.
 */
import {
  eppAnswersSchema,
  eppHealthSchema,
  eppMetricsSchema,
  parentProbeSchema,
  type ClusterConfig,
  type EppAnswersConfig,
  type EppHealthConfig,
  type EppMetricsConfig,
  type KubernetesSourceConfig,
  type ParentProbeConfig,
  type RouterConfig,
} from '../config/schema.js';
import { bearerTokenSpec } from '../credentials/bearer-token.js';
import { fromMemberDns } from '../snapshot/address.js';
import type { Candidate, EppTarget } from '../snapshot/types.js';
import type { HealthProbeSettings } from './health-prober.js';
import type { ScrapeSettings } from './metrics-scraper.js';
import type { ParentProbeSettings } from './parent-prober.js';
import { joinHostPort } from './probe-types.js';

export interface Planned<S> {
  readonly key: string;
  readonly settings: S;
  /** Age past which this target's last result counts as unknown. */
  readonly staleMs: number;
  /** Cluster label for failure counters. */
  readonly cluster: string;
}

export interface CandidatePlan {
  readonly candidate: Candidate;
  readonly health?: Planned<HealthProbeSettings>;
  /** `pool` selects the series by label name. */
  readonly metrics?: Planned<ScrapeSettings> & { readonly pool: string };
  readonly parent?: Planned<ParentProbeSettings>;
}

/** Only the parts of the router config the signals read. */
export type SignalsConfig = Pick<RouterConfig, 'clusters' | 'outlier'>;

const DEFAULT_HEALTH: EppHealthConfig = eppHealthSchema.parse({});
const DEFAULT_METRICS: EppMetricsConfig = eppMetricsSchema.parse({});
const DEFAULT_PARENT: ParentProbeConfig = parentProbeSchema.parse({});
const DEFAULT_ANSWERS: EppAnswersConfig = eppAnswersSchema.parse({});

function clusterOf(config: SignalsConfig, name: string): ClusterConfig | undefined {
  return config.clusters.find((c) => c.name === name);
}

export function planHealth(epp: EppTarget, health: EppHealthConfig = DEFAULT_HEALTH, answers: EppAnswersConfig = DEFAULT_ANSWERS): Planned<HealthProbeSettings> {
  const settings: HealthProbeSettings = {
    address: joinHostPort(epp.host, health.port ?? epp.port),
    service: health.service,
    tls: health.tls === 'disabled' ? { ...epp.tls, enabled: false } : epp.tls,
    ipSni: `${epp.service.name}.${epp.service.namespace}.svc`,
    intervalMs: health.intervalMs,
    timeoutMs: health.timeoutMs,
    healthyThreshold: health.healthyThreshold,
    unhealthyThreshold: health.unhealthyThreshold,
    ...(fromMemberDns(epp) ? { cluster: epp.cluster, destinations: answers.destinations } : {}),
  };
  return { key: `health|${JSON.stringify(settings)}`, settings, staleMs: 3 * health.intervalMs + health.timeoutMs, cluster: epp.cluster };
}

export function planMetrics(
  epp: EppTarget,
  pool: string,
  metrics: EppMetricsConfig = DEFAULT_METRICS,
  kubernetes?: KubernetesSourceConfig,
  answers: EppAnswersConfig = DEFAULT_ANSWERS,
): (Planned<ScrapeSettings> & { pool: string }) | undefined {
  if (!metrics.enabled) return undefined;
  const override = metrics.services.find((s) => s.namespace === epp.service.namespace && s.name === epp.service.name);
  const port = override?.port ?? metrics.port;
  const token = bearerTokenSpec(metrics.bearerTokenFile, kubernetes);
  const settings: ScrapeSettings = {
    origin: `${metrics.scheme}://${joinHostPort(epp.host, port)}`,
    path: override?.path ?? metrics.path,
    cluster: epp.cluster,
    ...(fromMemberDns(epp) ? { destinations: answers.destinations } : {}),
    ...(token === undefined ? {} : { bearerToken: token, allowTokenOverPlainHttp: metrics.allowTokenOverPlainHttp }),
    tls: metrics.tls,
    intervalMs: metrics.intervalMs,
    timeoutMs: metrics.timeoutMs,
    maxBytes: metrics.maxBytes,
    names: metrics.names,
  };
  return { key: `metrics|${JSON.stringify(settings)}`, settings, staleMs: 3 * metrics.intervalMs, cluster: epp.cluster, pool };
}

export function planParent(address: string, cluster: string, probe: ParentProbeConfig = DEFAULT_PARENT): Planned<ParentProbeSettings> {
  const settings: ParentProbeSettings = {
    address,
    mode: probe.mode,
    ...(probe.path === undefined ? {} : { path: probe.path }),
    scheme: probe.scheme,
    intervalMs: probe.intervalMs,
    timeoutMs: probe.timeoutMs,
    healthyThreshold: probe.healthyThreshold,
    unhealthyThreshold: probe.unhealthyThreshold,
  };
  return { key: `parent|${JSON.stringify(settings)}`, settings, staleMs: 3 * probe.intervalMs + probe.timeoutMs, cluster };
}

/**
 * A candidate's EPP (when it has one) gets health checks and, when enabled,
 * scrapes, with the settings of the EPP's cluster; a candidate reached via its
 * parent (Parent mode, remote) also gets a parent probe with the settings of
 * the parent's cluster.
 */
export function planCandidate(candidate: Candidate, config: SignalsConfig): CandidatePlan {
  const epp = candidate.epp;
  const eppCluster = epp ? clusterOf(config, epp.cluster) : undefined;
  const parent = candidate.via === 'parent' ? candidate.parent : undefined;
  const health = epp ? planHealth(epp, eppCluster?.epp.health, eppCluster?.eppAnswers) : undefined;
  const metrics = epp ? planMetrics(epp, candidate.pool, eppCluster?.epp.metrics, eppCluster?.kubernetes, eppCluster?.eppAnswers) : undefined;
  const parentPlan = parent ? planParent(parent.address, parent.cluster, clusterOf(config, parent.cluster)?.parentProbe) : undefined;
  return {
    candidate,
    ...(health ? { health } : {}),
    ...(metrics ? { metrics } : {}),
    ...(parentPlan ? { parent: parentPlan } : {}),
  };
}
