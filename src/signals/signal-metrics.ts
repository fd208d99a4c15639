/**
 * The signals' Prometheus metrics, registered on the router's prom-client
 * Registry. Per-candidate gauges carry {cluster, namespace, pool}; unknown
 * values are NaN; a candidate that leaves the snapshot loses its series.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { CandidateSignals } from './types.js';

export interface CandidateLabels {
  readonly cluster: string;
  readonly namespace: string;
  readonly pool: string;
}

/** What the store reports; a no-op implementation is used when no registry is given. */
export interface SignalMetricsSink {
  setCandidate(labels: CandidateLabels, signals: CandidateSignals): void;
  removeCandidate(labels: CandidateLabels): void;
  scrapeFailure(cluster: string, reason: string): void;
  probeFailure(cluster: string, probe: 'epp-health' | 'parent', reason: string): void;
  ejection(cluster: string, reason: string): void;
}

export const NOOP_SIGNAL_METRICS: SignalMetricsSink = {
  setCandidate() {},
  removeCandidate() {},
  scrapeFailure() {},
  probeFailure() {},
  ejection() {},
};

const CANDIDATE = ['cluster', 'namespace', 'pool'] as const;

function gauge(registry: Registry, name: string, help: string): Gauge<(typeof CANDIDATE)[number]> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Gauge<(typeof CANDIDATE)[number]>;
  return new Gauge({ name, help, labelNames: CANDIDATE, registers: [registry] });
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

const num = (v: number | undefined): number => (v === undefined ? NaN : v);

export class SignalMetrics implements SignalMetricsSink {
  private readonly ready: Gauge<(typeof CANDIDATE)[number]>;
  private readonly ejected: Gauge<(typeof CANDIDATE)[number]>;
  private readonly readyPods: Gauge<(typeof CANDIDATE)[number]>;
  private readonly queueSize: Gauge<(typeof CANDIDATE)[number]>;
  private readonly kvCache: Gauge<(typeof CANDIDATE)[number]>;
  private readonly age: Gauge<(typeof CANDIDATE)[number]>;
  private readonly scrapeFailures: Counter<'cluster' | 'reason'>;
  private readonly probeFailures: Counter<'cluster' | 'probe' | 'reason'>;
  private readonly ejections: Counter<'cluster' | 'reason'>;

  constructor(registry: Registry) {
    this.ready = gauge(registry, 'mcip_pool_ready', 'Candidate pool readiness: 1 ready, 0 not ready, NaN unknown.');
    this.ejected = gauge(registry, 'mcip_pool_ejected', 'Candidate pool ejected by outlier detection (1) or not (0).');
    this.readyPods = gauge(registry, 'mcip_pool_ready_pods', 'Ready pods reported by the pool\'s EPP (NaN when unknown or stale).');
    this.queueSize = gauge(registry, 'mcip_pool_queue_size', 'Average queue size per pod reported by the pool\'s EPP (NaN when unknown or stale).');
    this.kvCache = gauge(registry, 'mcip_pool_kv_cache_utilization', 'Average KV-cache utilization (0-1) reported by the pool\'s EPP (NaN when unknown or stale).');
    this.age = gauge(registry, 'mcip_pool_signal_age_seconds', 'Age of the pool\'s last successful metrics scrape (NaN if never scraped).');
    this.scrapeFailures = counter(registry, 'mcip_signal_scrape_failures_total', 'Failed EPP metrics scrapes, by EPP cluster and reason.', ['cluster', 'reason']);
    this.probeFailures = counter(registry, 'mcip_signal_probe_failures_total', 'Failed EPP health and parent probes, by cluster, probe and reason.', ['cluster', 'probe', 'reason']);
    this.ejections = counter(registry, 'mcip_outlier_ejections_total', 'Candidate pools ejected by outlier detection, by cluster and last failure reason.', ['cluster', 'reason']);
  }

  setCandidate(labels: CandidateLabels, s: CandidateSignals): void {
    const l = { cluster: labels.cluster, namespace: labels.namespace, pool: labels.pool };
    this.ready.set(l, s.ready === 'ready' ? 1 : s.ready === 'not-ready' ? 0 : NaN);
    this.ejected.set(l, s.ejected ? 1 : 0);
    this.readyPods.set(l, num(s.readyPods));
    this.queueSize.set(l, num(s.queueSize));
    this.kvCache.set(l, num(s.kvCache));
    this.age.set(l, s.ageMs === undefined ? NaN : s.ageMs / 1000);
  }

  removeCandidate(labels: CandidateLabels): void {
    const l = { cluster: labels.cluster, namespace: labels.namespace, pool: labels.pool };
    for (const g of [this.ready, this.ejected, this.readyPods, this.queueSize, this.kvCache, this.age]) g.remove(l);
  }

  scrapeFailure(cluster: string, reason: string): void {
    this.scrapeFailures.inc({ cluster, reason });
  }

  probeFailure(cluster: string, probe: 'epp-health' | 'parent', reason: string): void {
    this.probeFailures.inc({ cluster, probe, reason });
  }

  ejection(cluster: string, reason: string): void {
    this.ejections.inc({ cluster, reason });
  }
}
