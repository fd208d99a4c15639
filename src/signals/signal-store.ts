/**
 * SignalStore: owns every prober and scraper, reconciles them against each
 * routing snapshot (one per distinct target, shared by all routes and pools),
 * feeds the outlier detector, and serves the picker an immutable SignalView.
 *
 * Nothing here runs on the request path except view() (returns the cached view,
 * re-evaluating every candidate when older than viewMaxAgeMs) and the outcome
 * reports (O(1), plus one re-evaluation when a candidate is ejected or
 * re-admitted).
 *
 * Evaluation cost: a probe or scrape result re-evaluates only the candidates
 * of that target (not all of them: with thousands of EPPs, results arrive
 * thousands of times a second). A change of readiness, ejection or saturation
 * is published at once; other changes (load values, ages) wait for the next
 * full evaluation, at most viewMaxAgeMs for a reader or evaluateIntervalMs
 * away. A full evaluation keeps the signal objects (and the whole map, when
 * nothing changed) of candidates whose signals are unchanged, and the metrics
 * sink hears only about changes.
 */
import type { Registry } from 'prom-client';
import type { CredentialFiles } from '../credentials/credential-files.js';
import type { Candidate, RoutingSnapshot } from '../snapshot/types.js';
import { DEFAULT_SATURATION } from '../config/defaults.js';
import { eppTrustHint } from '../credentials/epp-trust.js';
import { HealthProber } from './health-prober.js';
import { MetricsScraper } from './metrics-scraper.js';
import { OutlierDetector, type OutlierTransition } from './outlier.js';
import { ParentProber } from './parent-prober.js';
import { configWarnings, noLoadSignal, type SignalWarning } from './load-signal.js';
import { planCandidate, type CandidatePlan, type Planned, type SignalsConfig } from './plan.js';
import { computeSignals, type CandidateInputs } from './readiness.js';
import { NOOP_SIGNAL_METRICS, SignalMetrics, type SignalMetricsSink } from './signal-metrics.js';
import {
  silentLogger,
  signalView,
  systemClock,
  UNKNOWN_SIGNALS,
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
  /** CA / certificate / key files of HTTPS scrapes and health probes, watched for rotation (default: read once). */
  readonly files?: CredentialFiles;
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
  /** The published view; `at` is the time of the last full evaluation. */
  private current: SignalView;
  /** Signals re-evaluated after a probe result since the last publish, not yet in `current` (no state change among them). */
  private readonly pending = new Map<string, CandidateSignals>();
  private readonly listeners = new Set<(changes: readonly SignalChange[]) => void>();
  private readonly timer: NodeJS.Timeout;
  private stopped = false;
  /** Candidates whose missing load signal (metrics disabled) was logged: once each. */
  private readonly toldNoLoad = new Set<string>();

  constructor(private readonly options: SignalStoreOptions) {
    this.config = options.config;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.metrics = options.metrics ?? (options.registry ? new SignalMetrics(options.registry, this.clock) : NOOP_SIGNAL_METRICS);
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
    for (const [id, p] of this.plans) {
      if (!plans.has(id)) {
        this.metrics.removeCandidate(p.candidate);
        this.pending.delete(id);
      }
    }
    this.plans = plans;
    // A pool that leaves and comes back is told about again; gone pools are not remembered.
    for (const id of this.toldNoLoad) if (!plans.has(id)) this.toldNoLoad.delete(id);
    for (const [id, p] of plans) {
      if (this.toldNoLoad.has(id)) continue;
      const w = noLoadSignal(p, this.config);
      if (w === undefined) continue;
      this.toldNoLoad.add(id);
      this.logger.warn({ cluster: w.cluster, candidate: id, field: w.field }, w.message);
    }
    this.outlier.retain(new Set(plans.keys()));
    this.evaluate();
  }

  view(): SignalView {
    if (!this.stopped && this.clock.now() - this.current.at > this.viewMaxAgeMs) this.evaluate();
    return this.current;
  }

  /**
   * The current view without ever evaluating: what the request path reads. Probe
   * and scrape results re-evaluate their own candidates as they arrive, and the
   * background timer (evaluateIntervalMs) catches time-based transitions such as
   * staleness and ejection expiry, so no request pays for a full evaluation.
   */
  cached(): SignalView {
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

  /**
   * The members' weakened security settings and every pool without a load signal now:
   * metrics not scraped, a scrape that fails, or one without the pool's series (for /debug/signals).
   */
  warnings(): SignalWarning[] {
    const out = configWarnings(this.config, []);
    for (const plan of this.plans.values()) {
      const scrape = plan.metrics && this.scrapers.get(plan.metrics.key)?.prober.state();
      const w = noLoadSignal(plan, this.config, scrape);
      if (w !== undefined) out.push(w);
    }
    return out;
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
    let toldUnsupported = false;
    let toldUntrusted = false;
    let toldRefused = false;
    const prober: HealthProber = new HealthProber(plan.settings, {
      clock: this.clock,
      ...(this.options.readFile ? { readFile: this.options.readFile } : {}),
      ...(this.options.files ? { files: this.options.files } : {}),
      onResult: (o) => {
        const t = this.health.get(key);
        if (t?.prober !== prober) return;
        if (o.unsupported !== undefined && !toldUnsupported) {
          toldUnsupported = true;
          this.logger.info(
            { target: plan.settings.address, service: plan.settings.service, code: o.unsupported, candidates: [...t.candidates].sort() },
            'EPP offers no gRPC health signal for this service; its readiness comes from its metrics and outlier detection',
          );
        }
        if (o.reason === 'tls-unverified' && !toldUntrusted) {
          toldUntrusted = true;
          this.logger.warn(
            { target: plan.settings.address, cluster: plan.cluster, candidates: [...t.candidates].sort(), error: o.message },
            `the EPP's TLS certificate is not trusted, so every request to its pools fails: ${eppTrustHint(plan.cluster, o.message)}`,
          );
        }
        if (o.reason === 'destination-refused' && !toldRefused) {
          toldRefused = true;
          this.logger.warn({ target: plan.settings.address, cluster: plan.cluster, error: o.detail }, 'EPP health probe not sent: the host name resolved to an address the member\'s destination rules deny');
        } else if (o.ok) toldRefused = false;
        if (!o.ok && o.unsupported === undefined) this.metrics.probeFailure(plan.cluster, 'epp-health', o.reason ?? 'error');
        // An "unsupported" answer still proves the EPP is up: it may re-admit an ejected pool once its ejection time is over.
        this.afterProbe(t, o.ok || o.unsupported !== undefined);
      },
    });
    return { key, prober, plan, candidates: new Set() };
  }

  private newScraper(key: string, plan: Planned<MetricsScraper['settings']>): Target<MetricsScraper> {
    let toldFailing = false;
    const prober: MetricsScraper = new MetricsScraper(plan.settings, {
      clock: this.clock,
      ...(this.options.files ? { files: this.options.files } : {}),
      onResult: (r) => {
        if (this.scrapers.get(key)?.prober !== prober) return;
        if (!r.ok) {
          this.metrics.scrapeFailure(plan.cluster, r.reason);
          const where = { target: `${plan.settings.origin}${plan.settings.path}`, reason: r.reason, error: r.message };
          if (toldFailing) this.logger.debug(where, 'EPP metrics scrape failed');
          else {
            // Once per target: its pools have no load signal until a scrape succeeds (/debug/signals says while it lasts).
            toldFailing = true;
            const candidates = [...(this.scrapers.get(key)?.candidates ?? [])].sort();
            this.logger.warn({ ...where, cluster: plan.cluster, candidates }, 'EPP metrics scrape failed: these pools have no load signal (no spillover from them) until a scrape succeeds');
          }
        }
        this.evaluateTarget(this.scrapers.get(key)!);
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
    this.evaluateTarget(t);
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

  /**
   * Full evaluation: every candidate at the current time (staleness), then a
   * new published view. Unchanged candidates keep their signal objects, and
   * when nothing changed the view keeps its map; the metrics sink hears only
   * about changes. Logs, counts and notifies state changes.
   */
  private evaluate(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const published = this.current.candidates;
    const next = new Array<CandidateSignals>(this.plans.size);
    let changes: SignalChange[] | undefined;
    let same = this.plans.size === published.size;
    let i = 0;
    for (const [id, plan] of this.plans) {
      const computed = computeSignals(this.inputsOf(plan), now, this.saturation);
      const prev = this.pending.get(id) ?? published.get(id);
      if (prev !== undefined && sameSignals(prev, computed)) {
        next[i++] = prev;
        if (prev !== published.get(id)) same = false;
        continue;
      }
      const s = Object.freeze(computed);
      next[i++] = s;
      same = false;
      this.metrics.setCandidate(plan.candidate, s, now);
      const before = prev ?? UNKNOWN_SIGNALS;
      if (isStateChange(before, s)) {
        (changes ??= []).push({ candidateId: id, before, after: s });
        this.logChange(plan.candidate, before, s);
      }
    }
    this.pending.clear();
    let map = published;
    if (!same) {
      const fresh = new Map<string, CandidateSignals>();
      i = 0;
      for (const id of this.plans.keys()) fresh.set(id, next[i++]!);
      map = fresh;
    }
    this.current = viewOf(map, now);
    if (changes !== undefined) for (const l of this.listeners) l(changes);
  }

  /**
   * After a probe or scrape result: re-evaluates only the target's candidates.
   * State changes (readiness, ejection, saturation) are published at once;
   * anything else waits in `pending` for the next full evaluation.
   */
  private evaluateTarget(t: Target<unknown>): void {
    if (this.stopped) return;
    const now = this.clock.now();
    const published = this.current.candidates;
    let changes: SignalChange[] | undefined;
    for (const id of t.candidates) {
      const plan = this.plans.get(id);
      if (plan === undefined) continue;
      const computed = computeSignals(this.inputsOf(plan), now, this.saturation);
      const prev = this.pending.get(id) ?? published.get(id);
      if (prev !== undefined && sameSignals(prev, computed)) continue;
      const s = Object.freeze(computed);
      this.pending.set(id, s);
      this.metrics.setCandidate(plan.candidate, s, now);
      const before = prev ?? UNKNOWN_SIGNALS;
      if (isStateChange(before, s)) {
        (changes ??= []).push({ candidateId: id, before, after: s });
        this.logChange(plan.candidate, before, s);
      }
    }
    if (changes === undefined) return;
    // Publish: the published map plus everything pending, same `at` (the other candidates were not re-evaluated).
    const map = new Map(published);
    for (const [id, s] of this.pending) map.set(id, s);
    this.pending.clear();
    this.current = viewOf(map, this.current.at);
    for (const l of this.listeners) l(changes);
  }

  private inputsOf(plan: CandidatePlan): CandidateInputs {
    const h = plan.health && this.health.get(plan.health.key);
    const m = plan.metrics && this.scrapers.get(plan.metrics.key);
    const p = plan.parent && this.parents.get(plan.parent.key);
    const inputs: { -readonly [K in keyof CandidateInputs]: CandidateInputs[K] } = {
      via: plan.candidate.via,
      ejected: this.outlier.isEjected(plan.candidate.id),
    };
    if (h) inputs.health = { state: h.prober.state(), staleMs: h.plan.staleMs };
    if (m) inputs.metrics = { state: m.prober.state(), pool: plan.metrics!.pool, staleMs: m.plan.staleMs };
    if (p) inputs.parent = { state: p.prober.state(), staleMs: p.plan.staleMs };
    return inputs;
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

/** A change the store logs and notifies: readiness, ejection or saturation. */
function isStateChange(prev: CandidateSignals, s: CandidateSignals): boolean {
  return prev.ready !== s.ready || prev.ejected !== s.ejected || (prev.saturated === true) !== (s.saturated === true);
}

/**
 * Same fields with the same values. Iterates own keys (enumeration caches make
 * this cheaper than probing every optional field, most of them absent, on
 * objects of many shapes).
 */
function sameSignals(a: CandidateSignals, b: CandidateSignals): boolean {
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    if (x[k] !== y[k] || !(k in y)) return false;
    n++;
  }
  for (const k in y) n--;
  return n === 0;
}

/** A view over a map the store owns and never mutates after publishing (entries already frozen). */
function viewOf(map: ReadonlyMap<string, CandidateSignals>, at: number): SignalView {
  return Object.freeze({
    at,
    candidates: map,
    get: (id: string) => map.get(id) ?? UNKNOWN_SIGNALS,
  });
}
