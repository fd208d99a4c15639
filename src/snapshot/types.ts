/**
 * The immutable routing snapshot: everything the data path needs to route a
 * request, compiled from all members' objects and the router config by the
 * pure builder. A new snapshot replaces the old one by reference.
 */
import type { RoutingMode, TlsConfig } from '../config/schema.js';
import type { FailureMode, HeaderModifier, HTTPRouteMatch, UnsupportedField } from '../model/types.js';
import type { PickPolicy } from '../config/pick-policy.js';

export interface NamespacedName {
  readonly namespace: string;
  readonly name: string;
}

/** Where the router dials a pool's Endpoint Picker. */
export interface EppTarget {
  /** host:port to dial; IPv6 hosts in brackets. */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  readonly cluster: string;
  /** The endpointPickerRef Service. */
  readonly service: NamespacedName;
  /** Which Service field the host came from. */
  readonly source: 'override' | 'loadBalancer' | 'externalIP' | 'clusterIP';
  readonly tls: TlsConfig;
}

/** A remote pool's parent Gateway, for Parent mode. */
export interface ParentTarget {
  /** ip:port handed to Envoy in x-gateway-destination-endpoint (IPv6 in brackets). */
  readonly address: string;
  readonly cluster: string;
  readonly gateway: NamespacedName;
  readonly source: 'override' | 'status';
}

interface CandidateBase {
  /** "cluster/namespace/pool": stable, used for metrics, signals and logs. */
  readonly id: string;
  readonly cluster: string;
  readonly namespace: string;
  readonly pool: string;
  /** True when the pool lives in this router's own cluster. */
  readonly local: boolean;
  readonly failureMode: FailureMode;
  readonly targetPorts: readonly number[];
}

/**
 * One pool that can serve a backendRef. `via` says how the data path reaches it:
 * 'epp' relays the ext_proc stream to the pool's EPP (Endpoint mode, and local
 * pools in Parent mode); 'parent' answers Envoy with the remote parent's address.
 */
export type Candidate =
  | (CandidateBase & { readonly via: 'epp'; readonly epp: EppTarget; readonly parent?: ParentTarget })
  | (CandidateBase & { readonly via: 'parent'; readonly parent: ParentTarget; readonly epp?: EppTarget });

/** Something the builder left out, with a reason the operator can act on. */
export interface Exclusion {
  /** What was left out, e.g. "cluster-b/example/llm-pool" or "InferencePool example/missing". */
  readonly subject: string;
  /** CamelCase reason, e.g. "PoolNotFound", "ServiceNotFound", "UnknownCluster". */
  readonly reason: string;
  readonly message: string;
}

/** Where an InferencePoolImport backendRef's exporting clusters came from. */
export interface ImportOrigin {
  /**
   * 'object': the InferencePoolImport's status; 'derived': no object lists any,
   * so the router (reading manifests) derived them from the members' pools
   * annotated inference.networking.x-k8s.io/export: ClusterSet.
   */
  readonly source: 'object' | 'derived';
  readonly exportingClusters: readonly string[];
}

/** One backendRef of a rule, expanded into the candidate pools that can serve it. */
export interface BackendGroup {
  readonly ref: {
    readonly group: string;
    readonly kind: string;
    readonly namespace: string;
    readonly name: string;
  };
  /** The backendRef's weight (Gateway API: default 1, 0 = no traffic). */
  readonly weight: number;
  /** Empty when the backendRef could not be resolved at all (requests picked for it get 500, per Gateway API). */
  readonly candidates: readonly Candidate[];
  readonly excluded: readonly Exclusion[];
  /** InferencePoolImport backendRefs that resolved to exporting clusters: where those came from. */
  readonly import?: ImportOrigin;
}

export interface RouteRule {
  readonly route: NamespacedName;
  /** Set on the rule of a multi-cluster pool (the Endpoint Picker role): `route` is then that InferencePool. */
  readonly kind?: 'InferencePool';
  readonly index: number;
  readonly name?: string;
  readonly backends: readonly BackendGroup[];
  /** Sum of all backend weights (invalid backends included: their share gets 500). */
  readonly totalWeight: number;
  /** Pick policy from the HTTPRoute's mcip-router.dev/pick-policy annotation; absent: the router config's picker.defaultPolicy. */
  readonly policy?: PickPolicy;
  /**
   * Set when the rule uses fields the router does not honour: the rule is refused
   * (Accepted=False, UnsupportedValue) and every request it matches gets HTTP 500.
   */
  readonly unsupported?: readonly UnsupportedField[];
  /** The rule's RequestHeaderModifier, and the same as a request headers answer fragment (src/protocol/header-mutation.ts), built once. */
  readonly requestHeaderModifier?: { readonly modifier: HeaderModifier; readonly fragment: Buffer };
}

/** One parentRef of a route that attached to a served Gateway. */
export interface ParentAttachment {
  /** Index into the route's spec.parentRefs. */
  readonly parentRefIndex: number;
  /** The Gateway, "namespace/name". */
  readonly gateway: string;
  /** The listeners (spec.listeners[].name) the route attached to; empty when the Gateway object is not known. */
  readonly listeners: readonly string[];
}

export interface RouteSummary {
  readonly route: NamespacedName;
  readonly hostnames: readonly string[];
  /** Attached to which served Gateways (namespace/name). */
  readonly parents: readonly string[];
  /** Which parentRefs attached, and to which listeners. */
  readonly attachments: readonly ParentAttachment[];
  readonly creationTimestamp?: string;
  readonly rules: readonly (RouteRule & { readonly matches: readonly HTTPRouteMatch[] })[];
}

/** An object of a member that the builder left out as a whole, and why. */
export interface ExcludedObject {
  readonly cluster: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** Field path of the problem ('' for the object as a whole). */
  readonly field: string;
  /** CamelCase, e.g. "EndpointPickerRefMissing", "InvalidObject", "DuplicateObject". */
  readonly reason: string;
  readonly message: string;
  /** Where it came from, e.g. "/etc/mcip/a/pools.yaml#2". */
  readonly origin?: string;
}

export interface Diagnostic {
  readonly severity: 'error' | 'warning' | 'info';
  /** e.g. "cluster-a: HTTPRoute example/llm-route". */
  readonly subject: string;
  /** Field path inside the object, when the problem is a field. */
  readonly path?: string;
  readonly reason: string;
  readonly message: string;
  /**
   * Set on diagnostics about a Gateway API object of the local cluster (HTTPRoute, Gateway):
   * which status condition it turns False, so the status writer can report it with `reason`
   * (an upstream Gateway API reason such as UnsupportedValue, BackendNotFound, NoMatchingParent).
   */
  readonly status?: StatusTarget;
}

/** The Gateway API object and condition a diagnostic is reported on. */
export interface StatusTarget {
  readonly kind: 'HTTPRoute' | 'Gateway';
  readonly namespace: string;
  readonly name: string;
  /** 'Accepted' or 'ResolvedRefs' for routes; 'Accepted' or 'Programmed' for Gateways. */
  readonly condition: 'Accepted' | 'ResolvedRefs' | 'Programmed';
  /** For a route: the parentRef the condition is about (index into spec.parentRefs); every parent when absent. */
  readonly parentRefIndex?: number;
  /** For a Gateway: the listener the condition is about (spec.listeners[].name); the Gateway itself when absent. */
  readonly listener?: string;
}

/** The request attributes route matching looks at. */
export interface RequestAttributes {
  /** :authority (a port, if any, is ignored for hostname matching). */
  readonly authority: string;
  /** :path including any query string. */
  readonly path: string;
  readonly method: string;
  /** Lower-case header name -> value (first value if repeated). */
  readonly header: (name: string) => string | undefined;
}

export type MatchResult =
  | { readonly type: 'matched'; readonly rule: RouteRule }
  | { readonly type: 'no-route' };

/** Opaque compiled matcher; only src/snapshot reads it. */
export interface MatchTable {
  readonly kind: 'match-table';
}

/** A multi-cluster InferencePool this router is the Endpoint Picker of, served on one picker port. */
export interface PickerPool {
  readonly port: number;
  readonly pool: NamespacedName;
  /** How a pick is answered: the destination itself, or a relay pod with a token. */
  readonly answer: 'direct' | 'relay';
  /** The pool's own endpointPickerRef.failureMode (what its gateway does when the router fails). */
  readonly failureMode: FailureMode;
  /** The Gateways that accepted the pool (status.parents[]) and, when known, their GatewayClass's controller. */
  readonly gateways: readonly { readonly gateway: string; readonly controller?: string }[];
  /** Its declared backends as one rule (matches nothing by itself: the port selects it). */
  readonly rule: RouteRule;
}

export interface RoutingSnapshot {
  /** Increases by one per build in a process. */
  readonly version: number;
  readonly builtAt: string;
  readonly localCluster: string;
  readonly mode: RoutingMode;
  readonly routes: readonly RouteSummary[];
  /** The Endpoint Picker role's multi-cluster pools, by picker port (absent: none). */
  readonly pickerPools?: ReadonlyMap<number, PickerPool>;
  /** Every distinct candidate in the snapshot, by id (what signals probe). */
  readonly candidates: ReadonlyMap<string, Candidate>;
  readonly diagnostics: readonly Diagnostic[];
  /**
   * Objects left out as a whole (one entry per problem field), by cluster, then in source order;
   * then the EPP Services whose address the router refused to dial (EppAddressDenied), by cluster and name.
   */
  readonly excludedObjects: readonly ExcludedObject[];
  /** Per-cluster source state: revision and staleness, for /debug and metrics. */
  readonly clusters: readonly { readonly name: string; readonly revision: string; readonly stale: boolean; readonly objects: number }[];
  readonly table: MatchTable;
}
