/**
 * Which entry of an InferencePool's status.parents[] is the export controller's
 * own: the one naming its InferencePoolImport parent.
 *
 * GIE's InferencePool CRD declares status.parents[].controllerName only from
 * v1.1.0 on; an API server with an older CRD prunes it from what we write. Our
 * entry then comes back as parentRef + conditions. It is still recognised, and
 * only it: the parentRef names exactly this pool's InferencePoolImport (same
 * group, kind, name and namespace), controllerName is absent (an entry naming
 * another controller is never ours), and its conditions are only `Exported`
 * ones, which is all we write there.
 */
import { GROUP_INFERENCE_X } from '../model/types.js';

/** Fields of our entry a CRD may not declare (the API server then prunes them). */
export const PRUNABLE_POOL_PARENT_FIELDS = ['controllerName'] as const;

export const EXPORTED_CONDITION = 'Exported';

type ParentLike = { parentRef?: unknown; controllerName?: unknown; conditions?: unknown };

/** The predicate for our entry in the status of InferencePool namespace/name. */
export function ownsPoolParent(me: string, namespace: string, name: string): (entry: ParentLike) => boolean {
  return (entry) => {
    const ref = (entry.parentRef ?? {}) as Record<string, unknown>;
    if (ref.kind !== 'InferencePoolImport') return false;
    if (entry.controllerName !== undefined && entry.controllerName !== '') return entry.controllerName === me;
    const conditions = Array.isArray(entry.conditions) ? (entry.conditions as { type?: unknown }[]) : [];
    return (
      ref.group === GROUP_INFERENCE_X &&
      ref.name === name &&
      (ref.namespace === undefined || ref.namespace === namespace) &&
      conditions.every((c) => c.type === EXPORTED_CONDITION)
    );
  };
}

/** Our entry as read has lost controllerName: the member's CRD does not declare it. */
export const controllerNamePruned = (entry: ParentLike): boolean => entry.controllerName === undefined || entry.controllerName === '';
