/** Live pool signals: readiness, load, outlier ejection (see signal-store.ts). */
export * from './types.js';
export { SignalStore, type SignalStoreOptions, type SignalChange, type TargetInfo } from './signal-store.js';
export { OutlierDetector, type OutlierSettings, type OutlierState, type OutlierTransition } from './outlier.js';
export { SignalMetrics, NOOP_SIGNAL_METRICS, type SignalMetricsSink, type CandidateLabels } from './signal-metrics.js';
export { HealthProber, type HealthProbeSettings } from './health-prober.js';
export { MetricsScraper, selectPoolMetrics, type MetricNames, type PoolMetrics, type ScrapeSettings, type ScrapeState } from './metrics-scraper.js';
export { ParentProber, type ParentProbeSettings } from './parent-prober.js';
export { parsePromText, parsePromValue, type PromSample, type PromParseResult } from './prom-text.js';
export { computeSignals, type CandidateInputs } from './readiness.js';
export { planCandidate, type CandidatePlan, type SignalsConfig } from './plan.js';
