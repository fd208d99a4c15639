/**
 * The load generator's HTTP/2 connections to one target, managed as Envoy
 * manages its connections to the mcip_router cluster: `slots` connection
 * pools (one per Envoy worker thread), streams spread over them round robin,
 * and with `maxRequestsPerConnection` > 0 (Envoy's
 * `max_requests_per_connection`, envoy/envoy.yaml) a connection that has
 * carried that many streams takes no new one (it drains): the next stream on
 * its slot opens a new connection, and the drained one is closed once its
 * open streams have ended. 0 = never rotate (one connection per slot for the
 * whole run).
 *
 * Why: Envoy resets every ext_proc stream, and a Node HTTP/2 server with the
 * default limits sends GOAWAY past 1,000 resets per connection (then 33/s). Without rotation the
 * generator would measure Node's limiter, not the server behind it.
 *
 * Each connection is its own grpc-js Client with a local subchannel pool, so a
 * new Client really is a new TCP connection (grpc-js shares subchannels
 * between equal channels otherwise). New connections are opened on demand,
 * by the stream that needs one, as Envoy does.
 */
import { Client, credentials, type ChannelCredentials, type ChannelOptions } from '@grpc/grpc-js';

interface Connection {
  readonly client: Client;
  /** Streams started on it. */
  started: number;
  /** Streams started and not yet released. */
  inFlight: number;
  draining: boolean;
}

/** One stream's use of a connection: `release()` (idempotent) when the stream has ended. */
export interface Lease {
  readonly client: Client;
  release(): void;
}

export class RotatingConnections {
  private readonly current: (Connection | undefined)[];
  private readonly open = new Set<Connection>();
  private next = 0;
  private opened = 0;

  constructor(
    private readonly address: string,
    slots: number,
    /** Streams per connection before it is drained and replaced; 0 = never. */
    private readonly maxRequestsPerConnection: number,
    private readonly options: ChannelOptions = {},
    /** Plaintext unless given (a picker port serves TLS). */
    private readonly channelCredentials: ChannelCredentials = credentials.createInsecure(),
  ) {
    if (!Number.isInteger(slots) || slots < 1) throw new Error(`connections must be a positive integer, got ${slots}`);
    if (!Number.isInteger(maxRequestsPerConnection) || maxRequestsPerConnection < 0) {
      throw new Error(`maxRequestsPerConnection must be a non-negative integer, got ${maxRequestsPerConnection}`);
    }
    this.current = Array.from({ length: slots }, () => this.connect());
  }

  /** Connections opened so far (the initial ones included). */
  get connectionsOpened(): number {
    return this.opened;
  }

  /** Connections not closed yet (current and draining). */
  get connectionsOpen(): number {
    return this.open.size;
  }

  /** Waits until every current connection is up. */
  async waitForReady(deadline: number): Promise<void> {
    await Promise.all(
      this.current.map(
        (c) => new Promise<void>((resolve, reject) => c!.client.waitForReady(deadline, (err) => (err ? reject(new Error(`${this.address}: ${err.message}`)) : resolve()))),
      ),
    );
  }

  /** The connection for the next stream (round robin over the slots, rotating a full one first). */
  lease(): Lease {
    const slot = this.next++ % this.current.length;
    let c = this.current[slot]!;
    if (c === undefined || (this.maxRequestsPerConnection > 0 && c.started >= this.maxRequestsPerConnection)) {
      if (c) this.retire(c);
      c = this.connect();
      this.current[slot] = c;
    }
    c.started++;
    c.inFlight++;
    let released = false;
    return {
      client: c.client,
      release: () => {
        if (released) return;
        released = true;
        c.inFlight--;
        if (c.draining && c.inFlight === 0) this.retire(c);
      },
    };
  }

  /** Closes every connection (streams still open on them end with it). */
  close(): void {
    for (const c of this.open) c.client.close();
    this.open.clear();
    this.current.fill(undefined);
  }

  private connect(): Connection {
    const c: Connection = {
      client: new Client(this.address, this.channelCredentials, { ...this.options, 'grpc.use_local_subchannel_pool': 1 }),
      started: 0,
      inFlight: 0,
      draining: false,
    };
    this.open.add(c);
    this.opened++;
    return c;
  }

  private retire(c: Connection): void {
    c.draining = true;
    if (c.inFlight === 0 && this.open.delete(c)) c.client.close();
  }
}
