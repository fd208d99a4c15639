/**
 * The signals' Prometheus metrics, registered on the router's prom-client
 * Registry. Per-candidate gauges carry {cluster, namespace, pool}; unknown
 * values are NaN; a candidate that leaves the snapshot loses its series.
 * Gauges are written on change only (see {@link SignalMetrics}).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { systemClock, type CandidateSignals, type Clock } from './types.js';

export interface CandidateLabels {
  readonly cluster: string;
  readonly namespace: string;
  readonly pool: string;
}

/** What the store reports; a no-op implementation is used when no registry is given. */
export interface SignalMetricsSink {
  /**
   * The candidate's signals as evaluated at clock time `at` (ms). The store
   * calls this only when a candidate's signals changed (and once for each new
   * candidate), so an idle router does not touch its gauges.
   */
  setCandidate(labels: CandidateLabels, signals: CandidateSignals, at: number): void;
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
type CandidateGauge = Gauge<(typeof CANDIDATE)[number]>;

function gauge(registry: Registry, name: string, help: string): CandidateGauge {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as CandidateGauge;
  return new Gauge({ name, help, labelNames: CANDIDATE, registers: [registry] });
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<L>;
  return new Counter({ name, help, labelNames, registers: [registry] });
}

const num = (v: number | undefined): number => (v === undefined ? NaN : v);
/** Equal as gauge values (NaN equals NaN). */
const same = (a: number, b: number): boolean => a === b || (a !== a && b !== b);

/** The values last written for one candidate's series. */
interface Series {
  readonly labels: { readonly cluster: string; readonly namespace: string; readonly pool: string };
  ready: number;
  ejected: number;
  readyPods: number;
  queueSize: number;
  kvCache: number;
  /** Clock time (ms) of the last successful scrape the age counts from; NaN when never scraped. */
  scrapedAt: number;
  /** Age last written to the gauge (s). */
  age: number;
}

/**
 * Writes a gauge only when its value changes: prom-client hashes the label set
 * on every set(), which for thousands of candidates evaluated every second was
 * most of an idle router's CPU. The signal age grows with the clock, so it is
 * not written per evaluation at all: the age gauge computes it from the last
 * successful scrape's time when Prometheus collects.
 */
export class SignalMetrics implements SignalMetricsSink {
  private readonly ready: CandidateGauge;
  private readonly ejected: CandidateGauge;
  private readonly readyPods: CandidateGauge;
  private readonly queueSize: CandidateGauge;
  private readonly kvCache: CandidateGauge;
  private readonly age: CandidateGauge;
  private readonly scrapeFailures: Counter<'cluster' | 'reason'>;
  private readonly probeFailures: Counter<'cluster' | 'probe' | 'reason'>;
  private readonly ejections: Counter<'cluster' | 'reason'>;
  private readonly series = new Map<string, Series>();

  constructor(registry: Registry, private readonly clock: Clock = systemClock) {
    this.ready = gauge(registry, 'mcip_pool_ready', 'Candidate pool readiness: 1 ready, 0 not ready, NaN unknown.');
    this.ejected = gauge(registry, 'mcip_pool_ejected', 'Candidate pool ejected by outlier detection (1) or not (0).');
    this.readyPods = gauge(registry, 'mcip_pool_ready_pods', 'Ready pods reported by the pool\'s EPP (NaN when unknown or stale).');
    this.queueSize = gauge(registry, 'mcip_pool_queue_size', 'Average queue size per pod reported by the pool\'s EPP (NaN when unknown or stale).');
    this.kvCache = gauge(registry, 'mcip_pool_kv_cache_utilization', 'Average KV-cache utilization (0-1) reported by the pool\'s EPP (NaN when unknown or stale).');
    // Computed at collection from this instance's series: a gauge left by an earlier instance on the registry is replaced.
    const ageName = 'mcip_pool_signal_age_seconds';
    if (registry.getSingleMetric(ageName)) registry.removeSingleMetric(ageName);
    const self = this;
    this.age = new Gauge({
      name: ageName,
      help: 'Age of the pool\'s last successful metrics scrape (NaN if never scraped).',
      labelNames: CANDIDATE,
      registers: [registry],
      collect() {
        self.collectAges();
      },
    });
    this.scrapeFailures = counter(registry, 'mcip_signal_scrape_failures_total', 'Failed EPP metrics scrapes, by EPP cluster and reason.', ['cluster', 'reason']);
    this.probeFailures = counter(registry, 'mcip_signal_probe_failures_total', 'Failed EPP health and parent probes, by cluster, probe and reason.', ['cluster', 'probe', 'reason']);
    this.ejections = counter(registry, 'mcip_outlier_ejections_total', 'Candidate pools ejected by outlier detection, by cluster and last failure reason.', ['cluster', 'reason']);
  }

  setCandidate(labels: CandidateLabels, s: CandidateSignals, at: number): void {
    const key = seriesKey(labels);
    const ready = s.ready === 'ready' ? 1 : s.ready === 'not-ready' ? 0 : NaN;
    const ejected = s.ejected ? 1 : 0;
    const readyPods = num(s.readyPods);
    const queueSize = num(s.queueSize);
    const kvCache = num(s.kvCache);
    const scrapedAt = s.ageMs === undefined ? NaN : at - s.ageMs;
    let e = this.series.get(key);
    if (e === undefined) {
      const l = { cluster: labels.cluster, namespace: labels.namespace, pool: labels.pool };
      e = { labels: l, ready, ejected, readyPods, queueSize, kvCache, scrapedAt, age: NaN };
      this.series.set(key, e);
      this.ready.set(l, ready);
      this.ejected.set(l, ejected);
      this.readyPods.set(l, readyPods);
      this.queueSize.set(l, queueSize);
      this.kvCache.set(l, kvCache);
      this.age.set(l, NaN);
      return;
    }
    const l = e.labels;
    if (!same(e.ready, ready)) this.ready.set(l, (e.ready = ready));
    if (e.ejected !== ejected) this.ejected.set(l, (e.ejected = ejected));
    if (!same(e.readyPods, readyPods)) this.readyPods.set(l, (e.readyPods = readyPods));
    if (!same(e.queueSize, queueSize)) this.queueSize.set(l, (e.queueSize = queueSize));
    if (!same(e.kvCache, kvCache)) this.kvCache.set(l, (e.kvCache = kvCache));
    e.scrapedAt = scrapedAt;
  }

  removeCandidate(labels: CandidateLabels): void {
    this.series.delete(seriesKey(labels));
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

  /** Ages as of now, written when the registry collects (a Prometheus scrape, not every evaluation). */
  private collectAges(): void {
    const now = this.clock.now();
    for (const e of this.series.values()) {
      const age = Number.isNaN(e.scrapedAt) ? NaN : Math.max(0, now - e.scrapedAt) / 1000;
      if (!same(e.age, age)) this.age.set(e.labels, (e.age = age));
    }
  }
}

function seriesKey(l: CandidateLabels): string {
  return `${l.cluster}\u0000${l.namespace}\u0000${l.pool}`;
}
