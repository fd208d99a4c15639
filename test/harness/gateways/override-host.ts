// Gateways that send an InferencePool's traffic to an EDS/static cluster of the pool's own
// pods and let the picker steer the load balancer: a pick that is not one of those pods is
// skipped and the fallback policy round-robins over the pods (a silent misroute).
//
// Istio: a shadow Service built from the pool's selector; its cluster's LB policy is Envoy's
// override_host with one source, the envoy.lb/x-gateway-destination-endpoint dynamic metadata
// (a string; the header is not read), and round robin as fallback. The listener's ext_proc
// filter receives only the envoy.lb namespace; the route override sets FULL_DUPLEX_STREAMED
// both ways, every header and trailer phase, and failure_mode_allow from the pool's failureMode.
//
// kgateway (static cluster + subset LB on envoy.lb/x-gateway-destination-endpoint, fallback
// ANY_ENDPOINT): a header_to_metadata filter after ext_proc copies the header into the same
// metadata key, so either carrier steers it and the header overwrites the picker's metadata;
// the fallback is the same round robin over the pool's pods.
import { createEnvoyStandin } from '../envoy-standin.js';
import { getHeader } from '../headers.js';
import type { HostChoice, HostSelectionInput, HostSelector, StandinClientOptions, StandinOptions, StandinRequest, StandinResult } from '../standin-types.js';
import { poolMembers, type PoolMembers } from './pool-members.js';
import { everyPhase } from './filter-modes.js';

export const LB_NAMESPACE = 'envoy.lb';
export const ENDPOINT_KEY = 'x-gateway-destination-endpoint';

export interface OverrideHostConfig {
  /** Also read the header (kgateway's header_to_metadata); Istio reads only the metadata. */
  readHeader?: boolean;
}

/** The override address list: (readHeader) the header if present, else envoy.lb metadata if a string. */
function overrideList(input: HostSelectionInput, cfg: OverrideHostConfig): string[] {
  const md = input.dynamicMetadata[LB_NAMESPACE]?.[ENDPOINT_KEY];
  const header = cfg.readHeader ? getHeader(input.headers, ENDPOINT_KEY) : undefined;
  const raw = header ?? (typeof md === 'string' ? md : undefined);
  if (raw === undefined || raw === '') return [];
  return raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * override_host on a cluster of `members`: the first listed address that is a host of the
 * cluster (primary, then failovers), else the fallback round robin over the hosts.
 */
export function overrideHostSelector(members: PoolMembers, cfg: OverrideHostConfig = {}): HostSelector {
  return (input): HostChoice => {
    const hit = overrideList(input, cfg).find((a) => members.has(a));
    return hit !== undefined ? { address: hit } : members.next();
  };
}

/** Istio's ext_proc filter for a route to an InferencePool (route override over the listener filter). */
export function istioOptions(failOpen = false): StandinOptions {
  return { ...everyPhase('FULL_DUPLEX_STREAMED', failOpen), messageTimeoutMs: 1_000_000, receivingNamespaces: [LB_NAMESPACE] };
}

/** kgateway's subset-era filter: the same phases, failure_mode_allow fixed true, 5 s message timeout. */
export function kgatewaySubsetOptions(): StandinOptions {
  return { ...everyPhase('FULL_DUPLEX_STREAMED', true), messageTimeoutMs: 5_000, receivingNamespaces: [LB_NAMESPACE] };
}

export interface OverrideHostGateway {
  readonly members: PoolMembers;
  run(req: StandinRequest): Promise<StandinResult>;
  close(): void;
}

/** A gateway (Istio by default) whose pool cluster holds `members`, calling the picker at `target`. */
export function createOverrideHostGateway(
  target: string,
  members: readonly string[],
  o: { flavour?: 'istio' | 'kgateway'; failOpen?: boolean } = {},
  copts: StandinClientOptions = {},
): OverrideHostGateway {
  const pool = poolMembers(members);
  const envoy = createEnvoyStandin(target, copts);
  const kgateway = o.flavour === 'kgateway';
  const filter = kgateway ? kgatewaySubsetOptions() : istioOptions(o.failOpen);
  const options: StandinOptions = { ...filter, hostSelector: overrideHostSelector(pool, { readHeader: kgateway }) };
  return { members: pool, run: (req) => envoy.run(req, options), close: () => envoy.close() };
}
