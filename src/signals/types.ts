/**
 * Live pool signals: the types the picker and the data path build on.
 *
 * The picker reads an immutable {@link SignalView} per request (cheap: the
 * store rebuilds it when a signal changes, on a timer, or when it is older than
 * a few hundred ms); the data path reports outcomes through {@link OutcomeSink}.
 * Everything that probes runs on timers off the request path.
 */

/** Readiness summary of one candidate. 'unknown' means "no evidence": no bias either way. */
export type Readiness = 'ready' | 'not-ready' | 'unknown';

/** Where a candidate's readiness came from (for /debug and logs). */
export type ReadinessSource = 'epp-health' | 'epp-metrics' | 'parent-probe' | 'none';

/** The signals of one candidate at the time the view was built. */
export interface CandidateSignals {
  readonly ready: Readiness;
  /** Ejected by the outlier detector (consecutive data-path failures). Independent of `ready`. */
  readonly ejected: boolean;
  /** Load metrics: present only when the last scrape that had this pool is fresh (younger than 3 scrape intervals). */
  readonly readyPods?: number;
  readonly queueSize?: number;
  readonly kvCache?: number;
  readonly runningRequests?: number;
  /** Age of the load metrics (last successful scrape with this pool), fresh or not; absent if never scraped. */
  readonly ageMs?: number;
  /** Queue or KV-cache use over the saturation thresholds; absent when the metrics are unknown. */
  readonly saturated?: boolean;
  readonly source: ReadinessSource;
  /** Short machine-friendly reason for `ready`, e.g. "health:serving", "metrics:no-ready-pods", "parent:unreachable". */
  readonly reason: string;
}

/** An immutable view of every candidate's signals. */
export interface SignalView {
  /** Clock time (ms) of the evaluation of every candidate the view reflects (some may have been re-evaluated since, after a probe result). */
  readonly at: number;
  /** Signals of a candidate id ("cluster/ns/pool"); {@link UNKNOWN_SIGNALS} for ids the store does not know. */
  get(candidateId: string): CandidateSignals;
  readonly candidates: ReadonlyMap<string, CandidateSignals>;
}

/** What the picker depends on. */
export interface SignalSource {
  view(): SignalView;
}

/** Why a data-path attempt against a candidate failed. */
export type FailureReason = 'connect' | 'stream' | 'timeout' | 'status-503' | 'status-429' | 'refused';

/** What the data path depends on: outcomes of attempts against a candidate's EPP. */
export interface OutcomeSink {
  reportSuccess(candidateId: string): void;
  reportFailure(candidateId: string, reason: FailureReason): void;
}

/** Injectable clock (ms). */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** The subset of a pino Logger the signals use. */
export interface SignalLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export const silentLogger: SignalLogger = { info() {}, warn() {}, debug() {} };

/** Saturation thresholds (config `picker.saturation`). */
export interface SaturationThresholds {
  readonly queueSize: number;
  readonly kvCache: number;
}

export const UNKNOWN_SIGNALS: CandidateSignals = Object.freeze({
  ready: 'unknown',
  ejected: false,
  source: 'none',
  reason: 'no-signal',
});

/** Builds an immutable view from a map (also handy for picker tests). */
export function signalView(entries: Iterable<readonly [string, CandidateSignals]>, at = 0): SignalView {
  const map = new Map<string, CandidateSignals>();
  for (const [id, s] of entries) map.set(id, Object.freeze({ ...s }));
  return Object.freeze({
    at,
    candidates: map as ReadonlyMap<string, CandidateSignals>,
    get: (id: string) => map.get(id) ?? UNKNOWN_SIGNALS,
  });
}

/** The null view: every candidate unknown (a router without signals picks by weight alone). */
export const EMPTY_SIGNAL_VIEW: SignalView = signalView([]);
