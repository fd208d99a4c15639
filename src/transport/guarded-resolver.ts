/**
 * The grpc-js side of guarded-lookup.ts: a name resolver for grpc-js channels
 * whose host name comes from a member's objects. grpc-js resolves a name itself
 * and offers no connect-time lookup hook, so such a channel is given the target
 * `guardedTarget(address)` and the channel option `guardedChannelOptions(lookup)`:
 * the name is resolved with that (guarded) lookup, the channel dials only the IPs
 * it answered, and a refusal leaves the channel no address at all: its calls fail
 * (UNAVAILABLE) with the refusal's message and no connection is opened. grpc-js asks for a new resolution
 * whenever it leaves idle or a connection fails or ends (paced by its reconnect
 * backoff), so every reconnect follows and re-checks the name's current addresses.
 * TLS is unchanged: the channel's authority is still `host:port`, so the name is
 * sent as SNI and the certificate verified against it.
 */
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { experimental, status as Status, type ChannelOptions } from '@grpc/grpc-js';
import { DestinationRefusedError } from './guarded-lookup.js';

const SCHEME = 'mcip-guarded';
/** The channel option holding the lookup (grpc-js passes unknown options through to the resolver). */
const LOOKUP_OPTION = 'mcip.guarded_lookup';

/** The grpc-js target of a channel to `address` ("host:port") resolved by the guarded lookup. */
export function guardedTarget(address: string): string {
  register();
  return `${SCHEME}:${address}`;
}

/** Channel options carrying the lookup a `guardedTarget` channel resolves its name with. */
export function guardedChannelOptions(lookup: LookupFunction): ChannelOptions {
  return { [LOOKUP_OPTION]: lookup };
}

class GuardedResolver implements experimental.Resolver {
  private readonly host: string;
  private readonly port: number;
  private readonly lookup: LookupFunction | undefined;
  private pending = false;
  private destroyed = false;

  constructor(
    target: experimental.GrpcUri,
    private readonly listener: experimental.ResolverListener,
    options: ChannelOptions,
  ) {
    const hostPort = experimental.splitHostPort(target.path);
    this.host = hostPort?.host ?? target.path;
    this.port = hostPort?.port ?? 443;
    const lookup: unknown = options[LOOKUP_OPTION];
    this.lookup = typeof lookup === 'function' ? (lookup as LookupFunction) : undefined;
  }

  updateResolution(): void {
    this.destroyed = false;
    if (this.pending) return;
    this.pending = true;
    // Never call the listener synchronously with updateResolution (the Resolver contract).
    setImmediate(() => this.resolve());
  }

  destroy(): void {
    this.destroyed = true;
  }

  static getDefaultAuthority(target: experimental.GrpcUri): string {
    return target.path;
  }

  private resolve(): void {
    const report = (err: Error | null, addresses: readonly LookupAddress[]): void => {
      this.pending = false;
      if (this.destroyed) return;
      if (err instanceof DestinationRefusedError) {
        // First no address at all, so the channel forgets the addresses it had: it must not keep
        // dialling where the name used to point (nor does the http2 transport, which resolves at
        // each connect). Then the refusal, which the channel's calls fail with (UNAVAILABLE).
        this.listener(experimental.statusOrFromValue([]), {}, null, err.message);
      }
      if (err !== null) {
        // Another lookup error keeps the addresses the channel has, as grpc-js's DNS resolver does.
        this.listener(experimental.statusOrFromError({ code: Status.UNAVAILABLE, details: err.message }), {}, null, '');
        return;
      }
      const endpoints = addresses.map((a) => ({ addresses: [{ host: a.address, port: this.port }] }));
      this.listener(experimental.statusOrFromValue(endpoints), {}, null, '');
    };
    if (this.lookup === undefined) {
      report(new Error(`no lookup for ${SCHEME}:${this.host}:${this.port} (channel option ${LOOKUP_OPTION} missing)`), []);
      return;
    }
    this.lookup(this.host, { all: true }, (err, addresses) => {
      if (err) report(err, []);
      else report(null, typeof addresses === 'string' ? [{ address: addresses, family: addresses.includes(':') ? 6 : 4 }] : addresses);
    });
  }
}

let registered = false;

function register(): void {
  if (registered) return;
  registered = true;
  experimental.registerResolver(SCHEME, GuardedResolver);
}

/**
 * The guarded lookup of one grpc-js channel, watched: it remembers its last refusal (for
 * messages) and notices when a name that had resolved to allowed addresses now resolves
 * to a refused one. grpc-js keeps a working connection to a name's old addresses through
 * such an update (and reconnects to them while it re-resolves), so the owner then replaces
 * the channel: the new one dials nothing until the name resolves somewhere allowed again.
 */
export class WatchedLookup {
  /** The last answer's refusal; undefined after an allowed answer. */
  refusal: DestinationRefusedError | undefined;
  /** The name moved from allowed addresses to a refused one: replace the channel. */
  moved = false;
  readonly lookup: LookupFunction;
  private answered = false;

  constructor(guarded: LookupFunction) {
    this.lookup = (hostname, options, callback) =>
      guarded(hostname, options, (err, address, family) => {
        this.refusal = err instanceof DestinationRefusedError ? err : undefined;
        if (this.refusal !== undefined && this.answered) this.moved = true;
        if (!err) this.answered = true;
        callback(err, address, family);
      });
  }
}
