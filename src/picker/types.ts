/**
 * Pick outcomes are typed variants, never null. The picker is pure: given a
 * rule (from the snapshot), a signal view and a random source it always
 * returns one of these.
 */
import type { SaturationThresholds } from '../signals/types.js';
import type { BackendGroup, Candidate } from '../snapshot/types.js';
import type { PickPolicy } from '../config/pick-policy.js';

export type { PickPolicy } from '../config/pick-policy.js';

/** Returns a float in [0, 1); injectable so tests are deterministic. */
export type RandomSource = () => number;

/**
 * Why the primary was chosen:
 * - 'weighted' / 'least-loaded' / 'prefer-local': the policy's normal choice
 *   among ready, unsaturated candidates (not-ready ones simply left out);
 * - 'spillover': every preferred candidate is saturated (or, prefer-local,
 *   every local one is saturated or not ready), so a less preferred one got it;
 * - 'panic': every candidate of the rule is unavailable; tried anyway.
 */
export type PickReason = 'weighted' | 'spillover' | 'panic' | 'prefer-local' | 'least-loaded';

/** A candidate was chosen; the data path uses `primary`, then `fallbacks` in order on failure. */
export interface Picked {
  readonly type: 'picked';
  readonly primary: Candidate;
  /** The backendRef the primary was drawn through. */
  readonly group: BackendGroup;
  readonly reason: PickReason;
  readonly policy: PickPolicy;
  /**
   * The remaining usable candidates (distinct ids, primary excluded), best
   * first: ready+unsaturated before saturated (prefer-local: local before
   * remote in each), each by effective weight, descending. Not-ready and
   * ejected candidates appear only in panic mode. Computed on first access
   * (nothing is built for requests that never fail over), then memoized.
   */
  readonly fallbacks: readonly Candidate[];
}

export type PickResult =
  | Picked
  /** The weighted choice fell on a backendRef that resolved to no pool: Gateway API says 500. */
  | { readonly type: 'invalid-backend'; readonly group: BackendGroup; readonly message: string }
  /** Nothing can be chosen (no backendRefs, or every weight is 0): 500. */
  | { readonly type: 'unavailable'; readonly message: string };

/** The router config's `picker` block, as the data path hands it over. */
export interface PickerSettings {
  /** Policy of routes without the pick-policy annotation. */
  readonly defaultPolicy: PickPolicy;
  /**
   * Saturation thresholds. When given, the picker re-derives "saturated" from
   * the view's queue / KV metrics with them; when absent it uses the view's
   * own `saturated` flag (the signal store's thresholds).
   */
  readonly saturation?: SaturationThresholds;
}
