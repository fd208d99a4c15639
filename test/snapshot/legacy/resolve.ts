// Frozen copy of src/snapshot/resolve.ts as of commit 9580a0d (before the build-performance work), kept only as
// the reference for test/snapshot/equivalence.test.ts. Do not edit it, and do not import it from src/.
/**
 * Address resolution for one pool: its Endpoint Picker (any mode) and, for
 * remote pools in Parent mode, its parent Gateway.
 */
import { GROUP_CORE, GROUP_GATEWAY, type Gateway, type InferencePool, type ParentReference, type Service } from '../../../src/model/types.js';
import { isIP, joinHostPort, parseHostPort } from '../../../src/snapshot/address.js';
import { findOverride, nsName, type BuildContext } from './context.js';
import type { EppTarget, ParentTarget } from '../../../src/snapshot/types.js';

/** A resolution failure: CamelCase reason plus a message the operator can act on. */
export interface Failure {
  readonly reason: string;
  readonly message: string;
}

export type Resolved<T> = { readonly ok: true; readonly value: T } | ({ readonly ok: false } & Failure);

const fail = (reason: string, message: string): { ok: false; reason: string; message: string } => ({ ok: false, reason, message });

function poolName(pool: InferencePool, cluster: string): string {
  return `InferencePool ${nsName(pool.metadata.namespace, pool.metadata.name)} in cluster ${cluster}`;
}

type HostSource = Pick<EppTarget, 'host' | 'source'>;

function serviceHost(svc: Service): HostSource | undefined {
  const ingress = svc.status.loadBalancer.ingress[0];
  const lb = ingress?.ip || ingress?.hostname;
  if (lb) return { host: lb, source: 'loadBalancer' };
  const ext = svc.spec.externalIPs[0];
  if (ext) return { host: ext, source: 'externalIP' };
  const cip = svc.spec.clusterIP;
  if (cip && cip !== 'None') return { host: cip, source: 'clusterIP' };
  return undefined;
}

/** Resolves the pool's endpointPickerRef Service in the pool's own cluster. */
export function resolveEpp(ctx: BuildContext, cluster: string, pool: InferencePool): Resolved<EppTarget> {
  const ref = pool.spec.endpointPickerRef;
  const ns = pool.metadata.namespace;
  const who = poolName(pool, cluster);
  if (ref.group !== GROUP_CORE || ref.kind !== 'Service') {
    return fail(
      'InvalidExtensionRef',
      `${who}: endpointPickerRef must be a core Service (group "", kind Service), got group "${ref.group}" kind "${ref.kind}"`,
    );
  }
  if (ref.port === undefined) {
    return fail('InvalidExtensionRef', `${who}: endpointPickerRef.port.number is required for a Service`);
  }
  const svcName = nsName(ns, ref.name);
  const svc = ctx.clusters.get(cluster)?.services.get(svcName);
  if (svc?.spec.type === 'ExternalName') {
    return fail('ExternalNameNotSupported', `${who}: EPP Service ${svcName} is of type ExternalName, which InferencePool forbids; use a ClusterIP or LoadBalancer Service`);
  }
  const override = findOverride(ctx, cluster, 'services', ns, ref.name);
  let host: HostSource;
  let port = ref.port.number;
  if (override !== undefined) {
    const hp = parseHostPort(override.address);
    if (hp === undefined) {
      return fail('InvalidAddressOverride', `clusters[${cluster}].addressOverrides.services ${svcName}: "${override.address}" is not host, host:port or [ipv6]:port`);
    }
    host = { host: hp.host, source: 'override' };
    if (hp.port !== undefined) port = hp.port;
  } else {
    if (svc === undefined) {
      return fail(
        'ServiceNotFound',
        `${who}: EPP Service ${svcName} not found in cluster ${cluster}; add it to that cluster's objects or set clusters[${cluster}].addressOverrides.services`,
      );
    }
    const found = serviceHost(svc);
    if (found === undefined) {
      return fail(
        'NoServiceAddress',
        `${who}: EPP Service ${svcName} has no load-balancer ingress, external IP or cluster IP (headless?); set clusters[${cluster}].addressOverrides.services`,
      );
    }
    host = found;
    if (svc.spec.ports.length > 0 && !svc.spec.ports.some((p) => p.port === port)) {
      ctx.diagnostics.add({
        severity: 'warning',
        subject: `${cluster}: Service ${svcName}`,
        reason: 'ServicePortMismatch',
        message: `endpointPickerRef of ${who} uses port ${port}, which Service ${svcName} does not expose (${svc.spec.ports.map((p) => p.port).join(', ')})`,
      });
    }
  }
  const tls = ctx.clusterConfigs.get(cluster)?.epp.tls;
  if (tls === undefined) return fail('UnknownCluster', `cluster ${cluster} is not in config clusters[]`);
  return {
    ok: true,
    value: {
      address: joinHostPort(host.host, port),
      host: host.host,
      port,
      cluster,
      service: { namespace: ns, name: ref.name },
      source: host.source,
      tls,
    },
  };
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

function tryParent(ctx: BuildContext, cluster: string, ref: ParentReference, ns: string): Resolved<ParentTarget> {
  const key = nsName(ns, ref.name);
  const gw = ctx.clusters.get(cluster)?.gateways.get(key);
  const gateway = { namespace: ns, name: ref.name };
  const override = findOverride(ctx, cluster, 'gateways', ns, ref.name);
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
  return { ok: true, value: { address: joinHostPort(addr.value, port), cluster, gateway, source: 'status' } };
}

/** The first resolvable Gateway (in name order) among the pool's status.parents in its cluster. */
export function resolveParent(ctx: BuildContext, cluster: string, pool: InferencePool): Resolved<ParentTarget> {
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
  const failures: Failure[] = [];
  for (const { ref, ns } of refs) {
    const r = tryParent(ctx, cluster, ref, ns);
    if (r.ok) return r;
    failures.push(r);
  }
  if (failures.length === 1) return fail(failures[0]!.reason, failures[0]!.message);
  return fail('NoResolvableParent', `no parent Gateway of ${poolName(pool, cluster)} resolves: ${failures.map((f) => `${f.reason}: ${f.message}`).join('; ')}`);
}
