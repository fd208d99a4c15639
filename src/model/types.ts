/**
 * Typed, normalised views of the Kubernetes objects the router reads.
 *
 * Decoders in this folder turn raw YAML/JSON objects into these shapes: defaults
 * are applied, unknown fields are dropped, and every optional list is present
 * (possibly empty) so consumers never test for undefined lists.
 */

export const GROUP_INFERENCE = 'inference.networking.k8s.io';
export const GROUP_INFERENCE_X = 'inference.networking.x-k8s.io';
export const GROUP_GATEWAY = 'gateway.networking.k8s.io';
export const GROUP_CORE = '';

export const EXPORT_ANNOTATION = 'inference.networking.x-k8s.io/export';

export type ObjectKind = 'InferencePool' | 'InferencePoolImport' | 'HTTPRoute' | 'Gateway' | 'GatewayClass' | 'Service';

export interface ObjectMeta {
  readonly name: string;
  readonly namespace: string;
  readonly uid?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  /** RFC 3339; used for HTTPRoute precedence ties. */
  readonly creationTimestamp?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface Condition {
  readonly type: string;
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason?: string;
  readonly message?: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime?: string;
}

/** Gateway API ParentReference (defaults applied: group gateway.networking.k8s.io, kind Gateway). */
export interface ParentReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  /** Absent means the namespace of the object holding the reference. */
  readonly namespace?: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface ParentStatus {
  readonly parentRef: ParentReference;
  readonly controllerName?: string;
  readonly conditions: readonly Condition[];
}

export type FailureMode = 'FailOpen' | 'FailClose';

export interface EndpointPickerRef {
  /** Default "" (core). */
  readonly group: string;
  /** Default "Service". */
  readonly kind: string;
  readonly name: string;
  /** Required when kind is Service. */
  readonly port?: { readonly number: number };
  /** Default FailClose. */
  readonly failureMode: FailureMode;
}

export interface InferencePool {
  readonly kind: 'InferencePool';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly selector: { readonly matchLabels: Readonly<Record<string, string>> };
    readonly targetPorts: readonly { readonly number: number }[];
    /** Default "http". */
    readonly appProtocol: string;
    /**
     * Optional since InferencePool v1.6: a pool without one is a valid object, but
     * the router cannot pick endpoints for it (the builder excludes it with reason
     * EndpointPickerRefMissing).
     */
    readonly endpointPickerRef?: EndpointPickerRef;
  };
  readonly status: { readonly parents: readonly ParentStatus[] };
}

export interface ExportingCluster {
  readonly name: string;
}

export interface ImportController {
  readonly name: string;
  readonly exportingClusters: readonly ExportingCluster[];
  readonly parents: readonly ParentStatus[];
  readonly conditions: readonly Condition[];
}

export interface InferencePoolImport {
  readonly kind: 'InferencePoolImport';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly status: { readonly controllers: readonly ImportController[] };
}

export type PathMatchType = 'Exact' | 'PathPrefix' | 'RegularExpression';
export type ValueMatchType = 'Exact' | 'RegularExpression';

export interface HTTPPathMatch {
  readonly type: PathMatchType;
  readonly value: string;
}

export interface HTTPValueMatch {
  readonly type: ValueMatchType;
  /** Header names are lower-cased by the decoder; query param names are case-sensitive. */
  readonly name: string;
  readonly value: string;
}

export interface HTTPRouteMatch {
  /** The decoder applies the spec default (PathPrefix "/") when path is absent. */
  readonly path: HTTPPathMatch;
  readonly headers: readonly HTTPValueMatch[];
  readonly queryParams: readonly HTTPValueMatch[];
  /** Upper-case HTTP method, absent = any. */
  readonly method?: string;
}

export interface BackendRef {
  /** Default "" (core). */
  readonly group: string;
  /** Default "Service". */
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  readonly port?: number;
  /** Default 1. */
  readonly weight: number;
}

/** A field of an HTTPRoute rule that mcip-router does not honour; the rule is refused rather than routed without it. */
export interface UnsupportedField {
  /** Field path in the route, e.g. "spec.rules[0].filters[1]". */
  readonly path: string;
  /** What it is, e.g. "filter RequestMirror", "timeouts", "field backendRef". */
  readonly feature: string;
  /** Why it is refused. */
  readonly message: string;
}

/** A RequestHeaderModifier filter: header names lower-case, applied as Envoy applies an ext_proc header mutation. */
export interface HeaderModifier {
  /** Overwrite (or add) these headers. */
  readonly set: readonly { readonly name: string; readonly value: string }[];
  /** Append these values to any existing ones. */
  readonly add: readonly { readonly name: string; readonly value: string }[];
  readonly remove: readonly string[];
}

export interface HTTPRouteRule {
  readonly name?: string;
  /** The rule's RequestHeaderModifier filter, honoured on the request headers answer. */
  readonly requestHeaderModifier?: HeaderModifier;
  /** The decoder applies the spec default (one match: PathPrefix "/") when matches is empty. */
  readonly matches: readonly HTTPRouteMatch[];
  readonly backendRefs: readonly BackendRef[];
  /** Fields of the rule (its matches and backendRefs included) the router does not honour; empty when none. */
  readonly unsupported: readonly UnsupportedField[];
}

export interface HTTPRoute {
  readonly kind: 'HTTPRoute';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly parentRefs: readonly ParentReference[];
    readonly hostnames: readonly string[];
    readonly rules: readonly HTTPRouteRule[];
  };
  /** status.parents[] as read; absent when it does not read as RouteParentStatus entries (it is never a reason to refuse the route). */
  readonly status: { readonly parents?: readonly ParentStatus[] };
}

/** A route kind a listener allows (allowedRoutes.kinds[]); group default gateway.networking.k8s.io. */
export interface RouteGroupKind {
  readonly group: string;
  readonly kind: string;
}

export interface GatewayListener {
  readonly name: string;
  readonly hostname?: string;
  readonly port: number;
  readonly protocol: string;
  /**
   * Default { namespaces: { from: 'Same' } }, as in Gateway API. `kinds` is present only when the
   * listener lists route kinds; absent = the kinds its protocol carries (HTTPRoute for HTTP/HTTPS).
   */
  readonly allowedRoutes: {
    readonly namespaces: { readonly from: 'All' | 'Same' | 'Selector' };
    readonly kinds?: readonly RouteGroupKind[];
  };
  /** spec.listeners[].tls.mode (default Terminate) when the listener has a tls block. */
  readonly tls?: { readonly mode: 'Terminate' | 'Passthrough' };
}

export interface GatewayAddress {
  /** Default "IPAddress". */
  readonly type: string;
  readonly value: string;
}

export interface Gateway {
  readonly kind: 'Gateway';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners: readonly GatewayListener[];
    /** spec.addresses[]: addresses asked of the implementation (a value may be empty: "any of this type"). */
    readonly addresses: readonly { readonly type: string; readonly value?: string }[];
  };
  readonly status: { readonly addresses: readonly GatewayAddress[] };
}

/** GatewayClass (cluster-scoped): which controller implements the Gateways of the class. */
export interface GatewayClass {
  readonly kind: 'GatewayClass';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: { readonly controllerName: string };
}

export interface ServicePort {
  readonly name?: string;
  readonly port: number;
  readonly protocol: string;
  readonly appProtocol?: string;
}

export interface Service {
  readonly kind: 'Service';
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: {
    /** Default "ClusterIP". */
    readonly type: string;
    /** "None" for headless Services. */
    readonly clusterIP?: string;
    readonly externalIPs: readonly string[];
    readonly ports: readonly ServicePort[];
  };
  readonly status: {
    readonly loadBalancer: { readonly ingress: readonly { readonly ip?: string; readonly hostname?: string }[] };
  };
}

export type KubeObject = InferencePool | InferencePoolImport | HTTPRoute | Gateway | GatewayClass | Service;

/** Kind, namespace and name of an object (namespace default applied). */
export interface ObjectRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
}

/** Where a reported problem sits: the object and the field path inside it. */
export interface FieldError {
  /** e.g. "InferencePool example/llm-pool"; for a document that has no usable identity, its file and index. */
  readonly object: string;
  /** The object's identity, when it has one (a string kind and name): it can then be excluded alone. */
  readonly ref?: ObjectRef;
  /** CamelCase reason when it is not a field validation error, e.g. "DuplicateObject". */
  readonly reason?: string;
  /** Dotted path with indices, e.g. "spec.rules[0].backendRefs[1].weight". */
  readonly path: string;
  readonly message: string;
  /** Where the object came from, e.g. "cluster-a: /etc/mcip/a/pools.yaml#2". */
  readonly origin?: string;
}

/** Result of decoding one raw object. */
export type DecodeResult =
  | { readonly type: 'ok'; readonly object: KubeObject }
  | { readonly type: 'invalid'; readonly errors: readonly FieldError[] }
  /** A kind the router does not read (ConfigMap, Deployment, ...); not an error. */
  | { readonly type: 'ignored'; readonly kind: string; readonly apiVersion: string };

/** Stable identity of an object within one cluster. */
export function objectKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export function describeObject(kind: string, namespace: string | undefined, name: string | undefined): string {
  return `${kind} ${namespace ?? '?'}/${name ?? '?'}`;
}
