/**
 * Metric/log labels of the snapshot objects a stream was routed with. Snapshot
 * objects are immutable and shared by every request, so each label string is
 * built once per object, not per request.
 */
import type { Candidate, RouteRule } from '../snapshot/types.js';

export interface CandidateLabels {
  /** "namespace/pool". */
  readonly pool: string;
  readonly cluster: string;
}

const routeLabels = new WeakMap<RouteRule, string>();
const candidateLabelCache = new WeakMap<Candidate, CandidateLabels>();

/** "namespace/name" of the rule's HTTPRoute; "InferencePool/namespace/name" for a multi-cluster pool's rule. */
export function routeLabel(rule: RouteRule): string {
  let label = routeLabels.get(rule);
  if (label === undefined) {
    label = rule.kind === undefined ? `${rule.route.namespace}/${rule.route.name}` : `${rule.kind}/${rule.route.namespace}/${rule.route.name}`;
    routeLabels.set(rule, label);
  }
  return label;
}

export function candidateLabels(c: Candidate): CandidateLabels {
  let labels = candidateLabelCache.get(c);
  if (labels === undefined) {
    labels = { pool: `${c.namespace}/${c.pool}`, cluster: c.cluster };
    candidateLabelCache.set(c, labels);
  }
  return labels;
}
