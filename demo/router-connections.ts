/**
 * The front door's HTTP/2 connections to mcip-router, used as Envoy uses its
 * mcip_router cluster with envoy/envoy.yaml: ext_proc streams share a
 * connection, and after `max_requests_per_connection` streams (500) the
 * connection takes no new ones, closes once its open streams are done, and the
 * next stream opens a new one.
 *
 * Why: the front door ends every stream as Envoy does, half-close then
 * RST_STREAM, and a Node HTTP/2 server with nghttp2's default rapid-reset guard
 * sends GOAWAY after 1,000 resets on one connection (then 33/s), failing every
 * stream on it (the router raises its own limit; rotation does not rely on it):
 * without rotation, `npm run demo -- --load 100` would see
 * a burst of 500s every few seconds after the first ~15 s (envoy/README.md).
 *
 * Plaintext (h2c) by default, as envoy.yaml's mcip_router cluster; with `skip-verify`,
 * TLS that accepts any server certificate, as gateways call an Endpoint Picker
 * (Envoy AI Gateway: an empty validation context).
 */
import { Client, credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';

/** Same as max_requests_per_connection on the mcip_router cluster in envoy/envoy.yaml (test/demo checks it). */
export const MAX_REQUESTS_PER_CONNECTION = 500;

/** How the connections are secured: `plaintext` (h2c) or `skip-verify` (TLS, any certificate accepted). */
export type RouterTransport = 'plaintext' | 'skip-verify';

function channelCredentials(transport: RouterTransport): ChannelCredentials {
  if (transport === 'plaintext') return credentials.createInsecure();
  // Encrypted, not authenticated: what a gateway does with an Endpoint Picker's self-signed certificate.
  return credentials.createSsl(null, null, null, { rejectUnauthorized: false, checkServerIdentity: () => undefined });
}

/** One stream's use of a connection: its client, and release() once the stream is closed. */
export interface ConnectionLease {
  readonly client: Client;
  /** The stream is done (closed or reset). Idempotent. */
  release(): void;
}

interface Connection {
  readonly client: Client;
  started: number;
  open: number;
  draining: boolean;
}

export class RouterConnections {
  private current: Connection | undefined;
  private readonly live = new Set<Connection>();
  private opened = 0;
  private closed = false;
  private readonly credentials: ChannelCredentials;

  constructor(
    private readonly target: string,
    private readonly options: ChannelOptions,
    private readonly maxRequestsPerConnection = MAX_REQUESTS_PER_CONNECTION,
    transport: RouterTransport = 'plaintext',
  ) {
    if (!Number.isInteger(maxRequestsPerConnection) || maxRequestsPerConnection < 1) {
      throw new Error(`maxRequestsPerConnection must be a positive integer, got ${maxRequestsPerConnection}`);
    }
    this.credentials = channelCredentials(transport);
  }

  /** Connections opened so far. */
  get connectionsOpened(): number {
    return this.opened;
  }

  /** The connection for one new stream. */
  lease(): ConnectionLease {
    let c = this.current;
    if (c === undefined || c.started >= this.maxRequestsPerConnection) {
      if (c) this.drain(c);
      // Its own subchannel pool: grpc-js would otherwise share one connection between equal channels.
      const client = new Client(this.target, this.credentials, { ...this.options, 'grpc.use_local_subchannel_pool': 1 });
      // After close() (a request racing the shutdown), a one-off connection, closed with its stream.
      c = { client, started: 0, open: 0, draining: this.closed };
      if (!this.closed) this.current = c;
      this.live.add(c);
      this.opened++;
    }
    c.started++;
    c.open++;
    const conn = c;
    let released = false;
    return {
      client: conn.client,
      release: () => {
        if (released) return;
        released = true;
        conn.open--;
        if (conn.draining && conn.open === 0) this.drain(conn);
      },
    };
  }

  /** Closes every connection (streams still open on them fail); a later stream gets a one-off connection. */
  close(): void {
    this.closed = true;
    for (const c of this.live) c.client.close();
    this.live.clear();
    this.current = undefined;
  }

  /** No new streams on `c`; closed once its last stream is released. */
  private drain(c: Connection): void {
    c.draining = true;
    if (c.open > 0) return;
    this.live.delete(c);
    c.client.close();
  }
}
