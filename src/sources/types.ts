/**
 * Object sources: where a ClusterSet member's Kubernetes objects come from
 * (manifest files now, the Kubernetes API later). A source only produces
 * objects; the snapshot builder decides what they mean.
 */
import type { FieldError, KubeObject } from '../model/types.js';

/** Everything one member cluster currently contributes. Immutable once emitted. */
export interface ClusterState {
  readonly cluster: string;
  readonly objects: readonly KubeObject[];
  /**
   * Objects that were present but invalid and therefore left out; the rest
   * serves. Each names the object (FieldError.ref) and the field.
   */
  readonly errors: readonly FieldError[];
  /**
   * A change the source read but could not use (a manifest file that does not
   * parse): this state holds the last good version instead. While it is set the
   * member's last change counts as rejected.
   */
  readonly rejected?: SourceError;
  /** True when the source lost contact and these are the last known objects. */
  readonly stale: boolean;
  /** Opaque, changes whenever the content changes (e.g. a content hash or resourceVersion). */
  readonly revision: string;
}

/** A problem the source could not turn into a new state; the previous state stays in force. */
export interface SourceError {
  readonly cluster: string;
  /** Short machine-friendly reason, used as a metric label. */
  readonly reason: 'read' | 'parse' | 'invalid' | 'connect' | 'auth' | 'missing-crd' | 'internal';
  readonly message: string;
  readonly errors: readonly FieldError[];
}

export interface SourceListener {
  /** A new state for the cluster. Called at least once after a successful start. */
  onState(state: ClusterState): void;
  /** A change was rejected or the source failed; the last good state keeps serving. */
  onError(error: SourceError): void;
}

export interface ObjectSource {
  readonly cluster: string;
  /**
   * Loads the initial state (delivered to listener.onState before the promise
   * resolves) and starts watching. Rejects only if the initial load fails.
   */
  start(listener: SourceListener): Promise<void>;
  /** Stops watching; idempotent. */
  stop(): Promise<void>;
}
