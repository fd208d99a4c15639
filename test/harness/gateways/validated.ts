// agentgateway in front of an InferencePool (the Kubernetes controller's InferenceRouting
// policy): its own ext_proc client (FULL_DUPLEX_STREAMED both ways, trailers sent) calls the
// picker, then reads x-gateway-destination-endpoint from the request headers as the picker
// left them (dynamic metadata is not read). The destination mode the controller sets is
// "validated": the address must be an endpoint of the pool's synthesized Service (workload
// IP and target port), else the request fails with 503 (no healthy endpoints). A value that
// is not an ip:port also fails with 503; no header means its own load balancing over the pool.
import { createEnvoyStandin } from '../envoy-standin.js';
import { getHeader } from '../headers.js';
import type { HostChoice, HostSelector, StandinClientOptions, StandinOptions, StandinRequest, StandinResult } from '../standin-types.js';
import { poolMembers, type PoolMembers } from './pool-members.js';
import { everyPhase } from './filter-modes.js';

export const ENDPOINT_HEADER = 'x-gateway-destination-endpoint';

function refuse(why: string): HostChoice {
  return { status: 503, body: 'no healthy endpoints', reason: `no healthy endpoints (${why})`, details: 'no_healthy_endpoints' };
}

/** Split "ip:port" / "[v6]:port" the way a socket-address parser does; undefined if it is not one. */
function socketAddress(v: string): { ip: string; port: number } | undefined {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(v) ?? /^(\d{1,3}(?:\.\d{1,3}){3}):(\d{1,5})$/.exec(v);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port <= 65535 ? { ip: m[1]!, port } : undefined;
}

/** The validated destination mode over `members`. */
export function validatedSelector(members: PoolMembers): HostSelector {
  return ({ headers }) => {
    const value = getHeader(headers, ENDPOINT_HEADER);
    if (value === undefined) return members.next();
    const addr = socketAddress(value);
    if (!addr) return refuse(`picker returned an invalid address ${JSON.stringify(value)}`);
    const hit = members.list().find((m) => socketAddress(m)?.ip === addr.ip && socketAddress(m)?.port === addr.port);
    return hit !== undefined ? { address: value } : refuse(`${value} is not an endpoint of the pool`);
  };
}

export function agentgatewayOptions(failOpen = false): StandinOptions {
  return everyPhase('FULL_DUPLEX_STREAMED', failOpen);
}

export interface ValidatedGateway {
  readonly members: PoolMembers;
  run(req: StandinRequest): Promise<StandinResult>;
  close(): void;
}

export function createValidatedGateway(
  target: string,
  members: readonly string[],
  o: { failOpen?: boolean } = {},
  copts: StandinClientOptions = {},
): ValidatedGateway {
  const pool = poolMembers(members);
  const envoy = createEnvoyStandin(target, copts);
  const options: StandinOptions = { ...agentgatewayOptions(o.failOpen), hostSelector: validatedSelector(pool) };
  return { members: pool, run: (req) => envoy.run(req, options), close: () => envoy.close() };
}
