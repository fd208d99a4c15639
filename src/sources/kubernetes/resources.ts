/**
 * The Kubernetes resources the router reads: group/version/plural per kind,
 * and which kinds are watched in the local cluster and in remote members.
 */
import type { ObjectKind } from '../../model/types.js';
import { GROUP_CORE, GROUP_GATEWAY, GROUP_INFERENCE, GROUP_INFERENCE_X } from '../../model/types.js';

export interface ResourceSpec {
  /** One of the router's kinds (RESOURCE_SPECS), or another resource read with the same machinery (ClusterProfile). */
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly apiVersion: string;
}

export function resourceSpec(kind: string, group: string, version: string, plural: string): ResourceSpec {
  return { kind, group, version, plural, apiVersion: group === GROUP_CORE ? version : `${group}/${version}` };
}

export const RESOURCE_SPECS: Readonly<Record<ObjectKind, ResourceSpec>> = {
  InferencePool: resourceSpec('InferencePool', GROUP_INFERENCE, 'v1', 'inferencepools'),
  InferencePoolImport: resourceSpec('InferencePoolImport', GROUP_INFERENCE_X, 'v1alpha1', 'inferencepoolimports'),
  HTTPRoute: resourceSpec('HTTPRoute', GROUP_GATEWAY, 'v1', 'httproutes'),
  Gateway: resourceSpec('Gateway', GROUP_GATEWAY, 'v1', 'gateways'),
  GatewayClass: resourceSpec('GatewayClass', GROUP_GATEWAY, 'v1', 'gatewayclasses'),
  Service: resourceSpec('Service', GROUP_CORE, 'v1', 'services'),
};

/** The local cluster: everything routing and the import controller need. */
export const LOCAL_KINDS: readonly ObjectKind[] = ['InferencePool', 'InferencePoolImport', 'HTTPRoute', 'Gateway', 'Service'];

/** The local cluster in the Endpoint Picker role: also GatewayClasses, to tell which gateway calls a multi-cluster pool. */
export const LOCAL_PICKER_KINDS: readonly ObjectKind[] = [...LOCAL_KINDS, 'GatewayClass'];

/** Kinds without a namespace: listed cluster-wide whatever namespaces the source is limited to. */
export const CLUSTER_SCOPED_KINDS: ReadonlySet<ObjectKind> = new Set(['GatewayClass']);

/** Remote members: only what resolves an exported pool's EPP and parent (least privilege). */
export const REMOTE_KINDS: readonly ObjectKind[] = ['InferencePool', 'Service', 'Gateway'];

/** "/apis/group/version[/namespaces/ns]/plural" or "/api/v1[/namespaces/ns]/plural". */
export function collectionPath(s: ResourceSpec, namespace?: string): string {
  const base = s.group === GROUP_CORE ? `/api/${s.version}` : `/apis/${s.group}/${s.version}`;
  return namespace === undefined ? `${base}/${s.plural}` : `${base}/namespaces/${encodeURIComponent(namespace)}/${s.plural}`;
}

/** "inferencepoolimports.inference.networking.x-k8s.io/v1alpha1", "services/v1": how kubectl and RBAC name it. */
export function resourceName(s: ResourceSpec): string {
  return s.group === GROUP_CORE ? `${s.plural}/${s.version}` : `${s.plural}.${s.group}/${s.version}`;
}
