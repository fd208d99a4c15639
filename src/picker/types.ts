/**
 * Pick outcomes are typed variants, never null. The picker is pure: given a
 * rule (from the snapshot) and a random source it always returns one of these.
 */
import type { BackendGroup, Candidate } from '../snapshot/types.js';

/** Returns a float in [0, 1); injectable so tests are deterministic. */
export type RandomSource = () => number;

export type PickReason = 'weighted';

export type PickResult =
  /** A candidate was chosen; the data path should use `primary`. */
  | { readonly type: 'picked'; readonly primary: Candidate; readonly group: BackendGroup; readonly reason: PickReason }
  /** The weighted choice fell on a backendRef that resolved to no pool: Gateway API says 500. */
  | { readonly type: 'invalid-backend'; readonly group: BackendGroup; readonly message: string }
  /** Nothing can be chosen (no backendRefs, or every weight is 0): 500. */
  | { readonly type: 'unavailable'; readonly message: string };
