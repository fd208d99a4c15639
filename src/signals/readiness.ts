/**
 * Pure: one candidate's signals from its probe and scrape states at time `now`.
 *
 * - Load metrics count only while fresh (younger than 3 scrape intervals);
 *   probe results only while younger than 3 probe intervals + timeout. Older is
 *   "unknown": no bias either way.
 * - Reached via its EPP: health failing (unhealthy threshold) -> not-ready;
 *   fresh metrics with 0 ready pods -> not-ready; health serving or ready pods
 *   > 0 -> ready; otherwise unknown. An EPP that offers no health signal
 *   (status 'unsupported', e.g. a stock EPP's ext_proc port) leaves readiness
 *   to the metrics (and ejection to the outlier detector).
 * - Reached via its parent (Parent mode, remote): a failing parent probe ->
 *   not-ready (it is the only way there); else the EPP's health while the EPP
 *   is reachable, else fresh EPP metrics, else the parent probe. An EPP that
 *   does not answer (or never did) never marks the candidate down.
 */
import type { ScrapeState } from './metrics-scraper.js';
import type { ProbeState } from './probe-types.js';
import type { CandidateSignals, SaturationThresholds } from './types.js';

export interface CandidateInputs {
  readonly via: 'epp' | 'parent';
  readonly health?: { readonly state: ProbeState; readonly staleMs: number };
  readonly metrics?: { readonly state: ScrapeState; readonly pool: string; readonly staleMs: number };
  readonly parent?: { readonly state: ProbeState; readonly staleMs: number };
  readonly ejected: boolean;
}

type Verdict = Pick<CandidateSignals, 'ready' | 'source' | 'reason'>;

const NO_SIGNAL: Verdict = { ready: 'unknown', source: 'none', reason: 'no-signal' };
const NO_HEALTH_SIGNAL: Verdict = { ready: 'unknown', source: 'none', reason: 'health:unsupported' };

function freshStatus(p: { state: ProbeState; staleMs: number } | undefined, now: number): ProbeState['status'] {
  if (!p || p.state.lastProbeAt === undefined || now - p.state.lastProbeAt > p.staleMs) return 'unknown';
  return p.state.status;
}

function fromHealth(p: CandidateInputs['health'], now: number): Verdict | undefined {
  const status = freshStatus(p, now);
  if (status === 'unhealthy') return { ready: 'not-ready', source: 'epp-health', reason: `health:${p?.state.lastError ?? 'failing'}` };
  if (status === 'healthy') return { ready: 'ready', source: 'epp-health', reason: 'health:serving' };
  return undefined;
}

function fromMetrics(readyPods: number | undefined): Verdict | undefined {
  if (readyPods === undefined) return undefined;
  return readyPods > 0
    ? { ready: 'ready', source: 'epp-metrics', reason: 'metrics:ready-pods' }
    : { ready: 'not-ready', source: 'epp-metrics', reason: 'metrics:no-ready-pods' };
}

export function computeSignals(inputs: CandidateInputs, now: number, saturation: SaturationThresholds): CandidateSignals {
  // Load.
  let load: Omit<CandidateSignals, 'ready' | 'ejected' | 'source' | 'reason'> = {};
  const m = inputs.metrics;
  const pm = m?.state.pools.get(m.pool);
  if (m && pm && m.state.lastSuccessAt !== undefined) {
    const ageMs = Math.max(0, now - m.state.lastSuccessAt);
    if (ageMs <= m.staleMs) {
      const known = pm.queueSize !== undefined || pm.kvCache !== undefined;
      load = {
        ...pm,
        ageMs,
        ...(known ? { saturated: (pm.queueSize ?? 0) > saturation.queueSize || (pm.kvCache ?? 0) > saturation.kvCache } : {}),
      };
    } else {
      load = { ageMs };
    }
  }

  let verdict: Verdict | undefined;
  if (inputs.via === 'epp') {
    const health = fromHealth(inputs.health, now);
    const metrics = fromMetrics(load.readyPods);
    verdict = health?.ready === 'not-ready' ? health : metrics?.ready === 'not-ready' ? metrics : (health ?? metrics);
    if (verdict === undefined && freshStatus(inputs.health, now) === 'unsupported') verdict = NO_HEALTH_SIGNAL;
  } else {
    const parentStatus = freshStatus(inputs.parent, now);
    if (parentStatus === 'unhealthy') {
      verdict = { ready: 'not-ready', source: 'parent-probe', reason: `parent:${inputs.parent?.state.lastError ?? 'failing'}` };
    } else {
      const eppReachable = inputs.health?.state.reachable === true;
      const health = eppReachable ? fromHealth(inputs.health, now) : undefined;
      const metrics = fromMetrics(load.readyPods);
      verdict =
        health?.ready === 'not-ready' ? health
        : metrics?.ready === 'not-ready' ? metrics
        : (health ?? metrics ?? (parentStatus === 'healthy' ? { ready: 'ready', source: 'parent-probe', reason: 'parent:reachable' } : undefined));
    }
  }
  return { ...(verdict ?? NO_SIGNAL), ejected: inputs.ejected, ...load };
}
