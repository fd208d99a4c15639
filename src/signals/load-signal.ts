/**
 * Pure: which pools the picker sees no load for, and why. A pool without a load signal
 * (queue, KV-cache use) is never judged saturated, so requests never spill over from it;
 * the router says so once in its log, in `--check` and on /debug/signals, beside the
 * member settings that weaken security (credentials/posture.ts).
 */
import { securityPosture } from '../credentials/posture.js';
import type { ScrapeState } from './metrics-scraper.js';
import type { CandidatePlan, SignalsConfig } from './plan.js';

/** One warning about the signals or the security of a member or of one of its pools. */
export interface SignalWarning {
  readonly cluster: string;
  /** The pool's candidate id ("cluster/namespace/pool"), for a warning about one pool. */
  readonly candidate?: string;
  /** The config field to look at, e.g. "clusters[1].epp.metrics.enabled". */
  readonly field?: string;
  readonly message: string;
}

const CONSEQUENCE = 'the picker sees no load for this pool, so requests never spill over from it when it saturates';

/**
 * Why the pool of `plan` has no load signal, or undefined when it has one (or has no EPP
 * to scrape). Without `scrape` (the state of its metrics target): only what the config
 * decides; with it: also a scrape that fails, or succeeds without the pool's series.
 */
export function noLoadSignal(plan: CandidatePlan, config: SignalsConfig, scrape?: ScrapeState): SignalWarning | undefined {
  const c = plan.candidate;
  if (c.epp === undefined) return undefined;
  const at = config.clusters.findIndex((m) => m.name === c.epp!.cluster);
  const base = { cluster: c.cluster, candidate: c.id };
  if (plan.metrics === undefined) {
    return { ...base, field: `clusters[${at}].epp.metrics.enabled`, message: `pool ${c.id} has no load signal: its EPP's metrics are not scraped (epp.metrics.enabled: false); ${CONSEQUENCE}` };
  }
  if (scrape === undefined) return undefined;
  const target = `${plan.metrics.settings.origin}${plan.metrics.settings.path}`;
  if (scrape.consecutiveFailures > 0 && scrape.lastError !== undefined) {
    return { ...base, field: `clusters[${at}].epp.metrics`, message: `pool ${c.id} has no load signal: scraping ${target} fails (${scrape.lastError}); ${CONSEQUENCE}` };
  }
  if (scrape.lastSuccessAt !== undefined && !scrape.pools.has(plan.metrics.pool)) {
    return {
      ...base,
      field: `clusters[${at}].epp.metrics.names`,
      message: `pool ${c.id} has no load signal: ${target} has no series labelled name="${plan.metrics.pool}" for the metric names tried; ${CONSEQUENCE}`,
    };
  }
  return undefined;
}

/**
 * What the config alone tells about these candidates: the members' weakened security
 * settings, then each pool that can have no load signal. For `--check` and the start-up log.
 */
export function configWarnings(config: SignalsConfig, plans: Iterable<CandidatePlan>): SignalWarning[] {
  const out: SignalWarning[] = [...securityPosture(config).warnings];
  for (const plan of plans) {
    const w = noLoadSignal(plan, config);
    if (w !== undefined) out.push(w);
  }
  return out;
}

/** One line per warning: "warning: cluster X: field: message". */
export function formatWarnings(warnings: readonly SignalWarning[]): string {
  return warnings.map((w) => `warning: cluster ${w.cluster}: ${w.field === undefined ? '' : `${w.field}: `}${w.message}\n`).join('');
}
