/**
 * SignalStore: owns every prober and scraper, reconciles them against each
 * routing snapshot (one per distinct target, shared by all routes and pools),
 * feeds the outlier detector, and serves the picker an immutable SignalView.
 *
 * Nothing here runs on the request path except view() (returns the cached view,
 * rebuilding it in O(candidates) when older than viewMaxAgeMs) and the outcome
 * reports (O(1), plus one rebuild when a candidate is ejected or re-admitted).
 */
import type { Registry } from 'prom-client';
import type { Candidate, RoutingSnapshot } from '../snapshot/types.js';
import { HealthProber } from './health-prober.js';
import { MetricsScraper } from './metrics-scraper.js';
import { OutlierDetector, type OutlierTransition } from './outlier.js';
import { ParentProber } from './parent-prober.js';
import { planCandidate, type CandidatePlan, type Planned, type SignalsConfig } from './plan.js';
import { computeSignals } from './readiness.js';
import { NOOP_SIGNAL_METRICS, SignalMetrics, type SignalMetricsSink } from './signal-metrics.js';
import {
  DEFAULT_SATURATION,
  silentLogger,
  signalView,
  systemClock,
  type CandidateSignals,
  type Clock,
  type FailureReason,
  type OutcomeSink,
  type SaturationThresholds,
  type SignalLogger,
  type SignalSource,
  type SignalView,
} from './types.js';

export interface SignalStoreOptions {
  readonly config: SignalsConfig;
  /** The router's registry; the signals' gauges and counters are registered on it. */
  readonly registry?: Registry;
  /** Alternative to `registry` (tests, or a custom sink). */
  readonly metrics?: SignalMetricsSink;
  readonly logger?: SignalLogger;
  readonly clock?: Clock;
  readonly saturation?: SaturationThresholds;
  /** view() rebuilds a cached view older than this (default 250 ms). */
  readonly viewMaxAgeMs?: number;
  /** Background re-evaluation period: staleness, gauges, state-change logs (default 1000 ms). */
  readonly evaluateIntervalMs?: number;
  /** Reads TLS files for the health probers (default fs.readFileSync). */
  readonly readFile?: (path: string) => Buffer;
}

/** A candidate whose ready / ejected / saturated state changed. */
export interface SignalChange {
  readonly candidateId: string;
  readonly before: CandidateSignals;
  readonly after: CandidateSignals;
}

interface Target<P> {
  readonly key: string;
  readonly prober: P;
  readonly plan: Planned<unknown>;
  readonly candidates: Set<string>;
}

/** Debug description of one probed target. */
export interface TargetInfo {
  readonly kind: 'epp-health' | 'epp-metrics' | 'parent';
  readonly target: string;
  readonly candidates: readonly string[];
  readonly state: unknown;
}

export class SignalStore implements SignalSource, OutcomeSink {
  private config: SignalsConfig;
  private readonly clock: Clock;
  private readonly logger: SignalLogger;
  private readonly metrics: SignalMetricsSink;
  private readonly saturation: SaturationThresholds;
  private readonly viewMaxAgeMs: number;
  private readonly outlier: OutlierDetector;
  private plans = new Map<string, CandidatePlan>();
  private readonly health = new Map<string, Target<HealthProber>>();
  private readonly scrapers = new Map<string, Target<MetricsScraper>>();
  private readonly parents = new Map<string, Target<ParentProber>>();
  private current: SignalView;
  private readonly listeners = new Set<(changes: readonly SignalChange[]) => void>();
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly options: SignalStoreOptions) {
    this.config = options.config;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.metrics = options.metrics ?? (options.registry ? new SignalMetrics(options.registry) : NOOP_SIGNAL_METRICS);
    this.saturation = options.saturation ?? DEFAULT_SATURATION;
    this.viewMaxAgeMs = options.viewMaxAgeMs ?? 250;
    this.outlier = new OutlierDetector(options.config.outlier, this.clock, (t) => this.onOutlier(t));
    this.current = signalView([], this.clock.now());
    this.timer = setInterval(() => this.evaluate(), options.evaluateIntervalMs ?? 1000);
    this.timer.unref();
  }

  /** Reconciles probers with a new snapshot (and optionally a new config). */
  update(snapshot: Pick<RoutingSnapshot, 'candidates'>, config?: SignalsConfig): void {
    if (this.stopped) return;
    if (config) {
      this.config = config;
      this.outlier.setSettings(config.outlier);
    }
    const plans = new Map<string, CandidatePlan>();
    for (const [id, candidate] of snapshot.candidates) plans.set(id, planCandidate(candidate, this.config));
    type Want<S> = Map<string, { plan: Planned<S>; ids: Set<string> }>;
    const want = {
      health: new Map() as Want<HealthProber['settings']>,
      metrics: new Map() as Want<MetricsScraper['settings']>,
      parent: new Map() as Want<ParentProber['settings']>,
    };
    const add = <S>(m: Want<S>, plan: Planned<S>, id: string) => {
      const w = m.get(plan.key) ?? m.set(plan.key, { plan, ids: new Set() }).get(plan.key)!;
      w.ids.add(id);
    };
    for (const [id, p] of plans) {
      if (p.health) add(want.health, p.health, id);
      if (p.metrics) add(want.metrics, p.metrics, id);
      if (p.parent) add(want.parent, p.parent, id);
    }
    this.reconcile(this.health, want.health, (key, plan) => this.newHealth(key, plan));
    this.reconcile(this.scrapers, want.metrics, (key, plan) => this.newScraper(key, plan));
    this.reconcile(this.parents, want.parent, (key, plan) => this.newParent(key, plan));
    for (const [id, p] of this.plans) if (!plans.has(id)) this.metrics.removeCandidate(p.candidate);
    this.plans = plans;
    this.outlier.retain(new Set(plans.keys()));
    this.evaluate();
  }

  view(): SignalView {
    if (!this.stopped && this.clock.now() - this.current.at > this.viewMaxAgeMs) this.evaluate();
    return this.current;
  }

  reportSuccess(candidateId: string): void {
    this.outlier.reportSuccess(candidateId);
  }

  reportFailure(candidateId: string, reason: FailureReason): void {
    this.outlier.reportFailure(candidateId, reason);
  }

  /** Called after each evaluation in which some candidate's ready/ejected/saturated state changed. */
  onChange(listener: (changes: readonly SignalChange[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Every probed target with its candidates and raw state (for /debug). */
  targets(): TargetInfo[] {
    const info = (kind: TargetInfo['kind'], t: Target<{ state(): unknown }>, target: string): TargetInfo => ({
      kind,
      target,
      candidates: [...t.candidates].sort(),
      state: t.prober.state(),
    });
    return [
      ...[...this.health.values()].map((t) => info('epp-health', t, `${t.prober.settings.address} ${t.prober.settings.service}`)),
      ...[...this.scrapers.values()].map((t) => info('epp-metrics', t, `${t.prober.settings.origin}${t.prober.settings.path}`)),
      ...[...this.parents.values()].map((t) => info('parent', t, `${t.prober.settings.mode} ${t.prober.settings.address}`)),
    ];
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    for (const m of [this.health, this.scrapers, this.parents] as Map<string, Target<{ stop(): void }>>[]) {
      for (const t of m.values()) t.prober.stop();
      m.clear();
    }
    this.listeners.clear();
  }

  private reconcile<P extends { start(): void; stop(): void }, S>(
    have: Map<string, Target<P>>,
    want: Map<string, { plan: Planned<S>; ids: Set<string> }>,
    create: (key: string, plan: Planned<S>) => Target<P>,
  ): void {
    for (const [key, t] of have) {
      if (want.has(key)) continue;
      t.prober.stop();
      have.delete(key);
    }
    for (const [key, { plan, ids }] of want) {
      let t = have.get(key);
      if (!t) {
        t = create(key, plan);
        have.set(key, t);
        t.prober.start();
      }
      t.candidates.clear();
      for (const id of ids) t.candidates.add(id);
    }
  }

  private newHealth(key: string, plan: Planned<HealthProber['settings']>): Target<HealthProber> {
    const prober: HealthProber = new HealthProber(plan.settings, {
      clock: this.clock,
      ...(this.options.readFile ? { readFile: this.options.readFile } : {}),
      onResult: (o) => {
        if (this.health.get(key)?.prober !== prober) return;
        if (!o.ok) this.metrics.probeFailure(plan.cluster, 'epp-health', o.reason ?? 'error');
        this.afterProbe(this.health.get(key)!, o.ok);
      },
    });
    return { key, prober, plan, candidates: new Set() };
  }

  private newScraper(key: string, plan: Planned<MetricsScraper['settings']>): Target<MetricsScraper> {
    const prober: MetricsScraper = new MetricsScraper(plan.settings, {
      clock: this.clock,
      onResult: (r) => {
        if (this.scrapers.get(key)?.prober !== prober) return;
        if (!r.ok) {
          this.metrics.scrapeFailure(plan.cluster, r.reason);
          this.logger.debug({ target: `${plan.settings.origin}${plan.settings.path}`, reason: r.reason, error: r.message }, 'EPP metrics scrape failed');
        }
        this.evaluate();
      },
    });
    return { key, prober, plan, candidates: new Set() };
  }

  private newParent(key: string, plan: Planned<ParentProber['settings']>): Target<ParentProber> {
    const prober: ParentProber = new ParentProber(plan.settings, {
      clock: this.clock,
      onResult: (o) => {
        if (this.parents.get(key)?.prober !== prober) return;
        if (!o.ok) this.metrics.probeFailure(plan.cluster, 'parent', o.reason ?? 'error');
        this.afterProbe(this.parents.get(key)!, o.ok);
      },
    });
    return { key, prober, plan, candidates: new Set() };
  }

  private afterProbe(t: Target<unknown>, ok: boolean): void {
    if (ok) for (const id of t.candidates) this.outlier.probeSucceeded(id);
    this.evaluate();
  }

  private onOutlier(t: OutlierTransition): void {
    const c = this.plans.get(t.candidateId)?.candidate;
    const labels = c ? { cluster: c.cluster, namespace: c.namespace, pool: c.pool } : { candidate: t.candidateId };
    if (t.type === 'ejected') {
      if (c) this.metrics.ejection(c.cluster, t.reason);
      this.logger.info({ candidate: t.candidateId, ...labels, reason: t.reason, durationMs: t.durationMs, level: t.level }, 'pool ejected');
    } else {
      this.logger.info({ candidate: t.candidateId, ...labels, by: t.by }, 'pool re-admitted');
    }
    this.evaluate();
  }

  /** Rebuilds the view; logs, counts and notifies state changes. */
  private evaluate(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const before = this.current;
    const entries: [string, CandidateSignals][] = [];
    const changes: SignalChange[] = [];
    for (const [id, plan] of this.plans) {
      const s = computeSignals(this.inputsOf(plan), now, this.saturation);
      entries.push([id, s]);
      this.metrics.setCandidate(plan.candidate, s);
      const prev = before.get(id);
      if (prev.ready !== s.ready || prev.ejected !== s.ejected || (prev.saturated === true) !== (s.saturated === true)) {
        changes.push({ candidateId: id, before: prev, after: s });
        this.logChange(plan.candidate, prev, s);
      }
    }
    this.current = signalView(entries, now);
    if (changes.length > 0) for (const l of this.listeners) l(changes);
  }

  private inputsOf(plan: CandidatePlan): Parameters<typeof computeSignals>[0] {
    const h = plan.health && this.health.get(plan.health.key);
    const m = plan.metrics && this.scrapers.get(plan.metrics.key);
    const p = plan.parent && this.parents.get(plan.parent.key);
    return {
      via: plan.candidate.via,
      ejected: this.outlier.isEjected(plan.candidate.id),
      ...(h ? { health: { state: h.prober.state(), staleMs: h.plan.staleMs } } : {}),
      ...(m ? { metrics: { state: m.prober.state(), pool: plan.metrics!.pool, staleMs: m.plan.staleMs } } : {}),
      ...(p ? { parent: { state: p.prober.state(), staleMs: p.plan.staleMs } } : {}),
    };
  }

  private logChange(c: Candidate, prev: CandidateSignals, s: CandidateSignals): void {
    const base = { candidate: c.id, cluster: c.cluster, namespace: c.namespace, pool: c.pool };
    if (prev.ready !== s.ready) {
      this.logger.info({ ...base, from: prev.ready, to: s.ready, source: s.source, reason: s.reason }, 'pool readiness changed');
    }
    if ((prev.saturated === true) !== (s.saturated === true)) {
      this.logger.info({ ...base, saturated: s.saturated === true, queueSize: s.queueSize, kvCache: s.kvCache }, 'pool saturation changed');
    }
  }
}
