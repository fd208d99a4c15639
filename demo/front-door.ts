/**
 * STAND-IN FOR ENVOY. Production runs Envoy with envoy/envoy.yaml; this small
 * HTTP server does, for one process on a laptop, what that Envoy config does:
 *
 * - strips any client-sent x-gateway-destination-endpoint (the header_mutation
 *   filter), then opens one ext_proc stream to mcip-router per request with the
 *   processing mode envoy.yaml sets: headers SEND, bodies FULL_DUPLEX_STREAMED,
 *   trailers SEND (the client requests here never carry trailers);
 * - sends request_headers (values in raw_value, pseudo-headers included,
 *   protocol_config on the first message), then every body chunk as it arrives
 *   without waiting, the last one with end_of_stream;
 * - applies the headers response's mutation the way Envoy does (raw_value
 *   only; append unset/false overwrites; :authority, host, :method, :scheme
 *   and x-envoy-* skipped), keeps the envoy.lb dynamic metadata, and forwards
 *   only the streamed_response body bytes upstream;
 * - routes like the ORIGINAL_DST cluster: exactly one ip:port in
 *   x-gateway-destination-endpoint, else 503; proxies with undici (HTTP/1.1);
 * - runs the response path through the same stream (response_headers with
 *   envoy.lb metadata_context incl. x-gateway-destination-endpoint-served,
 *   body chunks answered by streamed_response);
 * - treats immediate_response as the client's response, a spurious message
 *   (wrong type, body before headers response, non-streamed body mutation,
 *   empty response) or a gRPC error as a 500, and half-closes then resets the
 *   stream when the request is done.
 *
 * With `routerTransport: 'skip-verify'` it is a gateway calling its Endpoint
 * Picker (the demo's byo shape): Envoy AI Gateway's per-pool ext_proc filter is
 * this same exchange (headers and trailers SEND, bodies FULL_DUPLEX_STREAMED,
 * failure_mode_allow false, ORIGINAL_DST on the header), over TLS without
 * verifying the picker's certificate, with :authority <service>.<ns>.svc:<port>.
 *
 * What it does not do: HTTP/2 to clients, retries, timeouts, access logs,
 * stats, TLS to clients or upstreams, anything of Envoy beyond this one filter chain.
 *
 * Where: this file is the listener and the connections it shares;
 * request-exchange.ts is one request; ext-proc-filter.ts the ext_proc state
 * machine (ext-proc-stream.ts its gRPC stream); upstream.ts the ORIGINAL_DST
 * routing and proxying; envoy-headers.ts header lists and mutation rules;
 * router-connections.ts the connections to the router, rotated every 500
 * streams like envoy.yaml's max_requests_per_connection.
 */
import { createServer, type Server } from 'node:http';
import { Agent } from 'undici';
import { listen } from './layout.js';
import { RequestExchange } from './request-exchange.js';
import type { RequestRecord } from './request-record.js';
import { MAX_REQUESTS_PER_CONNECTION, RouterConnections, type RouterTransport } from './router-connections.js';
import { raceTimeout } from './timing.js';

export interface FrontDoorOptions {
  readonly port: number;
  /** mcip-router's ext_proc address, host:port (in the byo shape, its picker port). */
  readonly extProc: string;
  /** plaintext (default, as envoy.yaml) or skip-verify: TLS accepting any certificate, as gateways call an Endpoint Picker. */
  readonly routerTransport?: RouterTransport;
  /** The :authority of the ext_proc calls (default: the extProc address). */
  readonly authority?: string;
  readonly onRequest: (r: RequestRecord) => void;
  /** ext_proc streams per connection to the router (default 500, as envoy.yaml). */
  readonly maxRequestsPerConnection?: number;
}

const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export class FrontDoor {
  private server: Server | undefined;
  private readonly connections: RouterConnections;
  private readonly agent = new Agent({ keepAliveTimeout: 4000, connect: { timeout: 2000 } });
  private readonly active = new Set<Promise<void>>();

  constructor(private readonly opts: FrontDoorOptions) {
    // HTTP/2 connections to the router as Envoy's mcip_router cluster has them: streams share
    // one, which is replaced every 500 streams (Node's HTTP/2 rapid-reset limit, envoy/README.md).
    this.connections = new RouterConnections(
      opts.extProc,
      {
        'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
        'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
        // The authority's host is the TLS server name too (grpc-js refuses an IP there; the certificate is not verified).
        ...(opts.authority !== undefined ? { 'grpc.default_authority': opts.authority, 'grpc.ssl_target_name_override': opts.authority.replace(/:\d+$/, '') } : {}),
      },
      opts.maxRequestsPerConnection ?? MAX_REQUESTS_PER_CONNECTION,
      opts.routerTransport,
    );
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const p = new RequestExchange(req, res, this.connections, this.agent, this.opts.onRequest).run();
      this.active.add(p);
      void p.finally(() => this.active.delete(p));
    });
    await listen(server, this.opts.port);
    this.server = server;
  }

  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts the rest. */
  async stop(graceMs: number): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await raceTimeout(Promise.all([...this.active]), graceMs);
      server.closeAllConnections();
      await closed;
    }
    this.connections.close();
    await this.agent.close();
  }
}
