/**
 * The Endpoint Picker role's servers: one ext_proc server per endpointPicker.ports
 * entry, on endpointPicker.address. A stream accepted on port P is for the
 * multi-cluster pool bound to P in the current snapshot (src/extproc/stream.ts).
 * They share the main server's deps (snapshot, EPP clients, signals, FailOpen cache,
 * held-bytes budget) and drain, shut down and report health with it.
 */
import type { RouterConfig } from '../config/schema.js';
import type { CredentialFiles } from '../credentials/credential-files.js';
import { relayKeySource } from '../credentials/relay-keys.js';
import { RelaySigner } from '../credentials/relay-token.js';
import type { Logger } from '../log.js';
import type { RelayAnswering } from '../extproc/picker-answers.js';
import { createExtProcServer, type ExtProcDeps, type ExtProcServer } from '../extproc/server.js';
import { serverTlsFromConfig, serviceDnsNames, type ServerTls } from '../transport/server-tls.js';
import type { RoutingSnapshot } from '../snapshot/types.js';

export interface PickerListeners {
  /** "host:port" per picker port, in config order. */
  readonly addresses: readonly string[];
  setServing(serving: boolean): void;
  activeStreams(): number;
  drain(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

const NONE: PickerListeners = {
  addresses: [],
  setServing() {},
  activeStreams: () => 0,
  drain: async () => {},
  close: async () => {},
};

/** "host:port" with IPv6 hosts in brackets. */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * How relay answers are made: this pod's relay address (POD_IP) and the signer of
 * endpointPicker.relay.keyFile (`podIpEnv`: the POD_IP environment variable). Throws a startup error when `first` holds a relay pool
 * without them; a relay pool that appears later without them gets its requests refused.
 */
export function relayAnswering(config: RouterConfig, files: CredentialFiles, logger: Logger, podIpEnv: string | undefined, first: RoutingSnapshot | undefined): RelayAnswering {
  const relay = config.endpointPicker.relay;
  const podIp = podIpEnv?.trim();
  const relayPools = [...(first?.pickerPools?.values() ?? [])].filter((p) => p.answer === 'relay').map((p) => `${p.pool.namespace}/${p.pool.name}`);
  if (relayPools.length > 0 && !podIp) {
    throw new Error(`multi-cluster InferencePool ${relayPools.join(', ')} asks for relay answers, but the POD_IP environment variable is not set (set it from the downward API: status.podIP)`);
  }
  if (relayPools.length > 0 && relay.keyFile === undefined) {
    throw new Error(`multi-cluster InferencePool ${relayPools.join(', ')} asks for relay answers, but endpointPicker.relay.keyFile is not set`);
  }
  const signer = relay.keyFile === undefined
    ? undefined
    : new RelaySigner(relayKeySource(files, relay.keyFile, (problem) => logger.error({ problem }, 'relay key file changed but does not parse: the last good keys stay in use')), relay.tokenTtlMs);
  return { ...(podIp ? { address: joinHostPort(podIp, relay.port) } : {}), ...(signer ? { signer } : {}) };
}

/** Binds every picker port; on a bind failure the ones already bound are closed and the error names the port. */
export async function startPickerListeners(config: RouterConfig, deps: ExtProcDeps, relay: RelayAnswering): Promise<PickerListeners> {
  const { ports, address } = config.endpointPicker;
  if (ports.length === 0) return NONE;
  const tls = pickerTls(config);
  const servers: ExtProcServer[] = [];
  const addresses: string[] = [];
  try {
    for (const port of ports) {
      const server = createPickerServer({ ...deps, endpointPicker: { port, relay }, sharesRelayWith: deps }, tls);
      servers.push(server);
      addresses.push(await server.bind(joinHostPort(address, port)));
    }
  } catch (err) {
    await Promise.all(servers.map((s) => s.close()));
    throw new Error(`endpointPicker.ports: cannot listen on ${joinHostPort(address, ports[servers.length - 1]!)}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return {
    addresses,
    setServing: (serving) => servers.forEach((s) => s.setServing(serving)),
    activeStreams: () => servers.reduce((n, s) => n + s.activeStreams(), 0),
    drain: async (timeoutMs) => void (await Promise.all(servers.map((s) => s.drain(timeoutMs)))),
    close: async () => void (await Promise.all(servers.map((s) => s.close()))),
  };
}

/**
 * TLS on the picker ports (endpointPicker.tls): the certificate files, re-read on change, else a
 * self-signed certificate naming the router's Service; plaintext only when asked. Each port's
 * server follows the files on its own (a self-signed certificate is made per port: gateways do
 * not verify it).
 */
export function pickerTls(config: RouterConfig): ServerTls {
  const p = config.endpointPicker;
  const dnsNames = p.serviceName !== undefined && p.namespace !== undefined ? serviceDnsNames(p.serviceName, p.namespace) : [];
  return serverTlsFromConfig(p.tls, { pollIntervalMs: config.credentials.pollIntervalMs, dnsNames });
}

/** The one place a picker port's server is created. */
function createPickerServer(deps: ExtProcDeps, tls: ServerTls): ExtProcServer {
  return createExtProcServer(deps, { tls });
}
