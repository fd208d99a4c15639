/**
 * Address resolution for one pool: its Endpoint Picker (any mode) and, for
 * remote pools in Parent mode, its parent Gateway.
 */
import type { ClusterConfig } from '../config/schema.js';
import { memberRules } from '../config/answer-rules.js';
import { GROUP_CORE, GROUP_GATEWAY, type Gateway, type InferencePool, type ParentReference, type Service } from '../model/types.js';
import { isIP, joinHostPort, parseHostPort, urlHostname } from './address.js';
import {
  ENDPOINT_PICKER_REF_MISSING,
  endpointPickerRefMissing,
  findOverride,
  lookup,
  nsName,
  type BuildContext,
  type ClusterObjects,
} from './context.js';
import type { Diagnostic, EppTarget, ParentTarget } from './types.js';

/** A resolution failure: CamelCase reason plus a message the operator can act on. */
export interface Failure {
  readonly reason: string;
  readonly message: string;
}

/** A member's object whose field caused a failure (it is listed among the excluded objects). */
export interface FailedObject {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly field: string;
}

/** A resolution; a failure names the member objects whose fields caused it, when any did. */
export type Resolved<T> = { readonly ok: true; readonly value: T } | ({ readonly ok: false; readonly objects?: readonly FailedObject[] } & Failure);

type Failed = { ok: false; reason: string; message: string; objects?: readonly FailedObject[] };
const fail = (reason: string, message: string, objects?: readonly FailedObject[]): Failed =>
  objects === undefined || objects.length === 0 ? { ok: false, reason, message } : { ok: false, reason, message, objects };

function poolName(pool: InferencePool, cluster: string): string {
  return `InferencePool ${nsName(pool.metadata.namespace, pool.metadata.name)} in cluster ${cluster}`;
}

/** Where one cluster's objects and settings are looked up: its index (undefined when not loaded) and config. */
export interface ClusterScope {
  readonly cluster: string;
  readonly objects: ClusterObjects | undefined;
  readonly config: ClusterConfig | undefined;
}

export function clusterScope(ctx: BuildContext, cluster: string): ClusterScope {
  return { cluster, objects: ctx.clusters.get(cluster), config: ctx.clusterConfigs.get(cluster) };
}

/**
 * Resolves the pool's endpointPickerRef Service in the pool's own cluster.
 * Warnings that do not stop the resolution (a port the Service does not
 * expose) are appended to `warnings`.
 */
export function resolveEpp(scope: ClusterScope, pool: InferencePool, warnings: Diagnostic[]): Resolved<EppTarget> {
  const { cluster } = scope;
  const ref = pool.spec.endpointPickerRef;
  const ns = pool.metadata.namespace;
  if (ref === undefined) return fail(ENDPOINT_PICKER_REF_MISSING, endpointPickerRefMissing(pool, cluster));
  if (ref.group !== GROUP_CORE || ref.kind !== 'Service') {
    return fail(
      'InvalidExtensionRef',
      `${poolName(pool, cluster)}: endpointPickerRef must be a core Service (group "", kind Service), got group "${ref.group}" kind "${ref.kind}"`,
    );
  }
  if (ref.port === undefined) {
    return fail('InvalidExtensionRef', `${poolName(pool, cluster)}: endpointPickerRef.port.number is required for a Service`);
  }
  const svc = scope.objects === undefined ? undefined : lookup(scope.objects.services, ns, ref.name);
  if (svc !== undefined && svc.spec.type === 'ExternalName') {
    return fail(
      'ExternalNameNotSupported',
      `${poolName(pool, cluster)}: EPP Service ${nsName(ns, ref.name)} is of type ExternalName, which InferencePool forbids; use a ClusterIP or LoadBalancer Service`,
    );
  }
  const override = findOverride(scope.config, 'services', ns, ref.name);
  let host: string;
  let source: EppTarget['source'];
  let port = ref.port.number;
  if (override !== undefined) {
    const hp = parseHostPort(override.address);
    if (hp === undefined) {
      return fail('InvalidAddressOverride', `clusters[${cluster}].addressOverrides.services ${nsName(ns, ref.name)}: "${override.address}" is not host, host:port or [ipv6]:port`);
    }
    host = hp.host;
    source = 'override';
    if (hp.port !== undefined) port = hp.port;
  } else {
    if (svc === undefined) {
      return fail(
        'ServiceNotFound',
        `${poolName(pool, cluster)}: EPP Service ${nsName(ns, ref.name)} not found in cluster ${cluster}; add it to that cluster's objects or set clusters[${cluster}].addressOverrides.services`,
      );
    }
    const ingress = svc.status.loadBalancer.ingress[0];
    const ext = svc.spec.externalIPs[0];
    const cip = svc.spec.clusterIP;
    let field: ServiceAddressField;
    if (ingress?.ip) {
      host = ingress.ip;
      source = 'loadBalancer';
      field = 'status.loadBalancer.ingress[0].ip';
    } else if (ingress?.hostname) {
      host = ingress.hostname;
      source = 'loadBalancer';
      field = 'status.loadBalancer.ingress[0].hostname';
    } else if (ext) {
      host = ext;
      source = 'externalIP';
      field = 'spec.externalIPs[0]';
    } else if (cip && cip !== 'None') {
      host = cip;
      source = 'clusterIP';
      field = 'spec.clusterIP';
    } else {
      return fail(
        'NoServiceAddress',
        `${poolName(pool, cluster)}: EPP Service ${nsName(ns, ref.name)} has no load-balancer ingress, external IP or cluster IP (headless?); set clusters[${cluster}].addressOverrides.services`,
      );
    }
    const denied = serviceAddressRefusal(scope, host, port, field);
    if (denied !== undefined) {
      const allow = isIP(host) || isIP(urlHostname(host) ?? '') ? `, or allow the address in clusters[${cluster}].eppAnswers.destinations` : '';
      return fail(
        EPP_ADDRESS_DENIED,
        `${poolName(pool, cluster)}: EPP Service ${nsName(ns, ref.name)} ${field}: ${denied}, so the router does not dial it; ` +
          `set clusters[${cluster}].addressOverrides.services for the Service${allow}`,
        [{ kind: 'Service', namespace: ns, name: ref.name, field }],
      );
    }
    const ports = svc.spec.ports;
    if (ports.length > 0 && !exposes(ports, port)) {
      const svcName = nsName(ns, ref.name);
      warnings.push({
        severity: 'warning',
        subject: `${cluster}: Service ${svcName}`,
        reason: 'ServicePortMismatch',
        message: `endpointPickerRef of ${poolName(pool, cluster)} uses port ${port}, which Service ${svcName} does not expose (${ports.map((p) => p.port).join(', ')})`,
      });
    }
  }
  const tls = scope.config?.epp.tls;
  if (tls === undefined) return fail('UnknownCluster', `cluster ${cluster} is not in config clusters[]`);
  return {
    ok: true,
    value: {
      address: joinHostPort(host, port),
      host,
      port,
      cluster,
      service: { namespace: ns, name: ref.name },
      source,
      tls,
    },
  };
}

/** The Service fields an EPP address may come from, in the order they are tried. */
export type ServiceAddressField =
  | 'status.loadBalancer.ingress[0].ip'
  | 'status.loadBalancer.ingress[0].hostname'
  | 'spec.externalIPs[0]'
  | 'spec.clusterIP';

/** The reason of a pool left out because its EPP Service's address is refused. */
export const EPP_ADDRESS_DENIED = 'EppAddressDenied';

/** A DNS name: dot-separated labels of letters, digits and hyphens (a trailing dot allowed). */
const DNS_NAME = /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;

/**
 * Why an EPP address read from the member's Service may not be dialled, or undefined.
 * An IP is held to the member's destination rules, as its EPPs' answers are; a field that
 * holds IPs must hold one; a load-balancer hostname must be a DNS name, and its resolved
 * addresses are held to the same rules when the router connects (see transport/guarded-lookup.ts);
 * a hostname that a URL reads as an IPv4 address (`127.0.0.1.`, `2130706433`) is judged here as
 * that address, since Node dials it without resolving it.
 */
function serviceAddressRefusal(scope: ClusterScope, host: string, port: number, field: ServiceAddressField): string | undefined {
  if (isIP(host)) {
    const denied = memberRules(scope.config?.eppAnswers).destinationRefusal(joinHostPort(host, port));
    return denied?.detail;
  }
  if (field !== 'status.loadBalancer.ingress[0].hostname') return `"${host}" is not an IP address`;
  const dialled = DNS_NAME.test(host) ? urlHostname(host) : undefined;
  if (dialled === undefined) return `"${host}" is not a DNS name`;
  // A name the URL parser reads as an IPv4 address is dialled as that address, without the connect-time check.
  if (isIP(dialled)) {
    const denied = memberRules(scope.config?.eppAnswers).destinationRefusal(joinHostPort(dialled, port));
    return denied === undefined ? undefined : `"${host}" is the IP address ${dialled}: ${denied.detail}`;
  }
  return undefined;
}

function exposes(ports: Service['spec']['ports'], port: number): boolean {
  for (let i = 0; i < ports.length; i++) if (ports[i]!.port === port) return true;
  return false;
}

/** The listener port for a parentRef: sectionName listener, parentRef.port, first HTTP listener, first listener. */
function listenerPort(gw: Gateway | undefined, ref: ParentReference): number | undefined {
  if (gw !== undefined && ref.sectionName !== undefined) {
    const l = gw.spec.listeners.find((x) => x.name === ref.sectionName);
    if (l !== undefined) return l.port;
  }
  if (ref.port !== undefined) return ref.port;
  if (gw === undefined) return undefined;
  return (gw.spec.listeners.find((l) => l.protocol.toUpperCase() === 'HTTP') ?? gw.spec.listeners[0])?.port;
}

function tryParent(scope: ClusterScope, ref: ParentReference, ns: string): Resolved<ParentTarget> {
  const { cluster } = scope;
  const key = nsName(ns, ref.name);
  const gw = scope.objects === undefined ? undefined : lookup(scope.objects.gateways, ns, ref.name);
  const gateway = { namespace: ns, name: ref.name };
  const override = findOverride(scope.config, 'gateways', ns, ref.name);
  if (override !== undefined) {
    const hp = parseHostPort(override.address);
    if (hp === undefined || !isIP(hp.host)) {
      return fail(
        'InvalidAddressOverride',
        `clusters[${cluster}].addressOverrides.gateways ${key}: "${override.address}" must be ip or ip:port (Envoy ORIGINAL_DST needs ip:port)`,
      );
    }
    const port = hp.port ?? listenerPort(gw, ref);
    if (port === undefined) {
      return fail('NoParentPort', `Gateway ${key} in cluster ${cluster}: the address override has no port and no listener port is known; add :port to the override`);
    }
    return { ok: true, value: { address: joinHostPort(hp.host, port), cluster, gateway, source: 'override' } };
  }
  if (gw === undefined) {
    return fail('ParentNotFound', `Gateway ${key} not found in cluster ${cluster}; add it to that cluster's objects or set clusters[${cluster}].addressOverrides.gateways`);
  }
  const addr = gw.status.addresses[0];
  if (addr === undefined) {
    return fail('NoParentAddress', `Gateway ${key} in cluster ${cluster} has no status.addresses; set clusters[${cluster}].addressOverrides.gateways`);
  }
  if (addr.type === 'Hostname' || !isIP(addr.value)) {
    return fail(
      'ParentAddressNotIP',
      `Gateway ${key} in cluster ${cluster} has address "${addr.value}", not an IP; Envoy ORIGINAL_DST needs ip:port, set clusters[${cluster}].addressOverrides.gateways`,
    );
  }
  const port = listenerPort(gw, ref);
  if (port === undefined) return fail('NoParentPort', `Gateway ${key} in cluster ${cluster} has no listeners to take a port from`);
  const address = joinHostPort(addr.value, port);
  // The address comes from the member's objects: held to the member's destination rules, as its EPPs' answers are.
  const denied = memberRules(scope.config?.eppAnswers).destinationRefusal(address);
  if (denied !== undefined) {
    return fail(
      'ParentAddressDenied',
      `Gateway ${key} in cluster ${cluster} status.addresses: ${denied.detail} (clusters[${cluster}].eppAnswers.destinations); set clusters[${cluster}].addressOverrides.gateways or allow it there`,
      [{ kind: 'Gateway', namespace: ns, name: ref.name, field: 'status.addresses[0]' }],
    );
  }
  return { ok: true, value: { address, cluster, gateway, source: 'status' } };
}

/** The first resolvable Gateway (in name order) among the pool's status.parents in its cluster. */
export function resolveParent(scope: ClusterScope, pool: InferencePool): Resolved<ParentTarget> {
  const { cluster } = scope;
  const poolNs = pool.metadata.namespace;
  const refs = pool.status.parents
    .map((p) => p.parentRef)
    .filter((r) => r.group === GROUP_GATEWAY && r.kind === 'Gateway')
    .map((r) => ({ ref: r, ns: r.namespace ?? poolNs }))
    .sort((a, b) => (a.ref.name < b.ref.name ? -1 : a.ref.name > b.ref.name ? 1 : a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
  if (refs.length === 0) {
    return fail(
      'NoParentGateway',
      `${poolName(pool, cluster)} has no Gateway in status.parents; Parent mode routes remote pools through that cluster's Gateway (is the pool attached to an HTTPRoute there?)`,
    );
  }
  const failures: Failed[] = [];
  for (const { ref, ns } of refs) {
    const r = tryParent(scope, ref, ns);
    if (r.ok) return r;
    failures.push(r);
  }
  if (failures.length === 1) return failures[0]!;
  return fail(
    'NoResolvableParent',
    `no parent Gateway of ${poolName(pool, cluster)} resolves: ${failures.map((f) => `${f.reason}: ${f.message}`).join('; ')}`,
    failures.flatMap((f) => f.objects ?? []),
  );
}
