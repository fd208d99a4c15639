/**
 * Per-route pick policies and how an operator chooses them (the picker,
 * src/picker/, applies them). Dependency-free: the config schema, the snapshot
 * builder and the picker all import it.
 *
 * - `weighted` (default): Gateway API backendRef weights hold exactly while
 *   the pools are ready and not saturated; not-ready pools get nothing and
 *   saturated ones get traffic only once no unsaturated candidate is left.
 * - `prefer-local`: pools in the router's own cluster first (by weight);
 *   remote pools only when every local one is saturated or not ready.
 * - `least-loaded`: each candidate's weight is scaled by its free capacity
 *   (headroom below the saturation thresholds). Deliberately departs from
 *   exact backendRef weights; meant for imports spread over many clusters.
 *
 * Chosen per HTTPRoute with the annotation {@link PICK_POLICY_ANNOTATION}
 * (applies to every rule of the route), else the router config's
 * `picker.defaultPolicy`.
 */

export const PICK_POLICIES = ['weighted', 'prefer-local', 'least-loaded'] as const;

export type PickPolicy = (typeof PICK_POLICIES)[number];

/**
 * HTTPRoute annotation choosing the pick policy of all its rules. Under the
 * project's own domain (the one of its controller name, mcip-router.dev):
 * x-k8s.io is reserved for Kubernetes SIG projects.
 */
export const PICK_POLICY_ANNOTATION = 'mcip-router.dev/pick-policy';

/** The policy an annotation value names (trimmed, case-insensitive), or undefined if it names none. */
export function parsePickPolicy(value: string): PickPolicy | undefined {
  const v = value.trim().toLowerCase();
  return (PICK_POLICIES as readonly string[]).includes(v) ? (v as PickPolicy) : undefined;
}
