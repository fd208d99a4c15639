// The relay listener of the router pod's Envoy (envoy/relay.yaml) as a real HTTP/1.1 listener:
// the header_mutation filter drops any x-gateway-destination-endpoint / x-mcip-destination-kind
// the request came with; the ext_proc filter (the Envoy stand-in) calls the router's relay
// verifier with the request headers only (every other phase SKIP / NONE), failure_mode_allow
// false (an unreachable or failing verifier: 500), an immediate response goes back to the client
// as it is; then the route: x-mcip-destination-kind: parent -> the TLS ORIGINAL_DST cluster (the
// kind header removed, SNI and certificate check from the request's host), anything else -> the
// plain ORIGINAL_DST cluster, both keyed on x-gateway-destination-endpoint.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createEnvoyStandin } from './envoy-standin.js';
import { getHeader, removeHeader, type HeaderList } from './headers.js';
import { forwardHttp, type UpstreamTls } from './http-upstream.js';
import type { ForwardedRequest, StandinOptions } from './standin-types.js';

export const DESTINATION_KIND_HEADER = 'x-mcip-destination-kind';

/** The relay's ext_proc filter: request headers only, fail closed (envoy/relay.yaml). */
export const RELAY_FILTER: StandinOptions = {
  requestHeaderMode: 'SEND',
  requestBodyMode: 'NONE',
  requestTrailerMode: 'SKIP',
  responseHeaderMode: 'SKIP',
  responseBodyMode: 'NONE',
  responseTrailerMode: 'SKIP',
  failureModeAllow: false,
  messageTimeoutMs: 2_000,
  receivingNamespaces: [],
};

/** Dropped before ext_proc: only the verifier's answer may set them. */
const STRIPPED_BEFORE_EXT_PROC = ['x-gateway-destination-endpoint', DESTINATION_KIND_HEADER];
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'host', 'content-length']);

export interface RelayStandin {
  /** ip:port of the relay listener (what the multi-cluster pool's endpoints are). */
  readonly address: string;
  /** Every destination the relay dialled, with the headers it sent there (in order). */
  readonly forwards: { destination: string; tls: boolean; headers: HeaderList }[];
  close(): Promise<void>;
}

export async function startRelayStandin(o: { verifier: string; parentTls?: UpstreamTls }): Promise<RelayStandin> {
  const envoy = createEnvoyStandin(o.verifier);
  const forwards: RelayStandin['forwards'] = [];
  const upstream = (destination: string, fwd: ForwardedRequest) => {
    const parent = getHeader(fwd.headers, DESTINATION_KIND_HEADER) === 'parent';
    const headers = parent ? removeHeader(fwd.headers, DESTINATION_KIND_HEADER) : fwd.headers;
    forwards.push({ destination, tls: parent, headers });
    if (parent && o.parentTls === undefined) throw new Error('no CA for the TLS parent cluster');
    return forwardHttp(destination, { ...fwd, headers }, parent ? o.parentTls : undefined);
  };
  const server: Server = createServer((req, res) => void handle(req, res));
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let headers: HeaderList = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const k = req.rawHeaders[i]!.toLowerCase();
      if (!HOP_BY_HOP.has(k)) headers.push([k, req.rawHeaders[i + 1]!]);
    }
    for (const h of STRIPPED_BEFORE_EXT_PROC) headers = removeHeader(headers, h);
    const r = await envoy.run(
      { authority: req.headers.host ?? '', path: req.url ?? '/', method: req.method ?? 'GET', headers, body: chunks.length ? [Buffer.concat(chunks)] : [], upstream },
      RELAY_FILTER,
    );
    const out: Record<string, string[]> = {};
    for (const [k, v] of r.response.headers) if (!HOP_BY_HOP.has(k)) (out[k] ??= []).push(v);
    res.writeHead(r.status, out);
    res.end(r.response.body);
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    forwards,
    close: () =>
      new Promise<void>((resolve) => {
        envoy.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
