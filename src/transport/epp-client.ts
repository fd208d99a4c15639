/**
 * The router's EPP connections (the relay's EppClient, extproc/epp-call.ts): one
 * channel per EPP target (address + TLS settings), a grpc-js channel or a
 * node:http2 connection (extProc.transport), shared by all streams to that EPP,
 * and raw (identity-serialized) ext_proc calls on it so messages pass through
 * byte for byte. A host name from
 * a member's objects is dialled only at addresses its destination rules allow.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { LookupFunction } from 'node:net';
import { Client, Metadata, connectivityState, type ChannelOptions, type ClientDuplexStream } from '@grpc/grpc-js';
import { CredentialFiles } from '../credentials/credential-files.js';
import { channelCredentials } from '../credentials/tls-policy.js';
import { EXT_PROC_PROCESS_PATH } from '../protocol/constants.js';
import { fromMemberDns } from '../snapshot/address.js';
import type { EppTarget } from '../snapshot/types.js';
import { MemberAnswerRules } from '../config/answer-rules.js';
import { destinationJudge, guardedLookup, type ResolveName } from './guarded-lookup.js';
import { guardedChannelOptions, guardedTarget, WatchedLookup } from './guarded-resolver.js';
import { H2Channel, type H2Call } from './h2-channel.js';
import { h2TlsOptions, identityHostFor, serverNameFor } from './tls-options.js';

export interface EppClientPoolOptions {
  /** Max gRPC message size sent to and received from EPPs. */
  readonly maxMessageBytes: number;
  /** How long ready() waits for a cold channel to connect. */
  readonly connectTimeoutMs: number;
  /** HTTP/2 keepalive ping interval on EPP connections (default 60 s; Go servers punish pings more often on idle connections). */
  readonly keepaliveTimeMs?: number;
  /** CA / certificate / key files, watched for rotation (default: read once, never re-read). */
  readonly files?: CredentialFiles;
  /** What carries the calls: grpc-js channels (default) or node:http2 connections (src/transport/). */
  readonly transport?: 'grpc-js' | 'http2';
  /**
   * Each member's destination rules (default: the schema's). The addresses a host name from
   * a member's objects resolves to are held to them each time the router connects, on either
   * transport (grpc-js channels resolve such a name with guarded-resolver.ts).
   */
  readonly destinations?: Pick<MemberAnswerRules, 'of'>;
  /** How such a host name is resolved (default: the system's resolver). */
  readonly resolve?: ResolveName;
}

interface Entry {
  readonly key: string;
  /** The grpc-js channel, or the node:http2 connection (extProc.transport: http2). */
  readonly client: Client | H2Channel;
  closed: boolean;
  /** files.generation when the entry was last known current. */
  generation: number;
  /** The file contents its credentials were built from (CredentialFiles replaces a Buffer when the file changes). */
  readonly material: ReadonlyMap<string, Buffer>;
  /** A grpc-js channel to a host name from a member's objects: its lookup (a name that moved to a refused address retires the channel). */
  readonly watch?: WatchedLookup;
}

const identity = (b: Buffer): Buffer => b;

/** Channel identity: two targets with the same key share one channel. */
export function targetKey(target: EppTarget): string {
  const t = target.tls;
  // A name from a member's objects is dialled under that member's rules: never shared with an override's channel.
  const address = fromMemberDns(target) ? `${target.address}|rules-of=${target.cluster}` : target.address;
  if (!t.enabled) return `${address}|plaintext`;
  return [
    address,
    'tls',
    t.caFile ? `ca=${t.caFile}` : t.insecureSkipVerify ? 'skip-verify' : 'system-roots',
    t.certFile ?? '',
    t.keyFile ?? '',
    t.serverName ?? '',
  ].join('|');
}

export class EppClientPool {
  private readonly byKey = new Map<string, Entry>();
  /** Snapshot targets are immutable and reused by every request: cache their entry by identity. */
  private byTarget = new WeakMap<EppTarget, Entry>();
  private readonly channelOptions: ChannelOptions;
  private readonly files: CredentialFiles;
  private readonly destinations: Pick<MemberAnswerRules, 'of'>;
  private closed = false;

  constructor(private readonly options: EppClientPoolOptions) {
    this.files = options.files ?? new CredentialFiles({ pollIntervalMs: 0 });
    this.destinations = options.destinations ?? new MemberAnswerRules();
    this.channelOptions = {
      'grpc.max_receive_message_length': options.maxMessageBytes,
      'grpc.max_send_message_length': options.maxMessageBytes,
      'grpc.keepalive_time_ms': options.keepaliveTimeMs ?? 60_000,
      'grpc.keepalive_timeout_ms': 20_000,
      'grpc.keepalive_permit_without_calls': 0,
      // A recovered EPP should be used again within seconds, not minutes.
      'grpc.initial_reconnect_backoff_ms': 250,
      'grpc.max_reconnect_backoff_ms': 5_000,
      'grpc.enable_retries': 0,
      // Channelz keeps per-call tracing state; the router exports its own metrics instead.
      'grpc.enable_channelz': 0,
      'grpc.service_config_disable_resolution': 1,
    };
  }

  /** Number of open channels. */
  size(): number {
    return this.byKey.size;
  }

  /**
   * Resolves once the EPP's channel can take a call: at once when it is READY;
   * a cold channel is given up to connectTimeoutMs to connect. A channel that
   * failed to connect resolves too: the call then fails at once with grpc-js's
   * reason (ECONNREFUSED, certificate errors, ...), which says more than we
   * could. Rejects with an Error naming the EPP on timeout or unusable
   * TLS settings.
   */
  ready(target: EppTarget): Promise<void> {
    let entry: Entry;
    try {
      entry = this.entryFor(target);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (entry.client instanceof H2Channel) {
      return entry.client.ready().catch((err: unknown) => {
        throw new Error(entry.closed ? `EPP channel to ${target.address} was closed` : (err as Error).message, { cause: err });
      });
    }
    const client = entry.client;
    const channel = client.getChannel();
    const state = channel.getConnectivityState(true);
    if (state === connectivityState.READY || state === connectivityState.TRANSIENT_FAILURE) return Promise.resolve();
    const deadline = Date.now() + this.options.connectTimeoutMs;
    return new Promise<void>((resolve, reject) => {
      const wait = (current: connectivityState): void => {
        channel.watchConnectivityState(current, deadline, (err) => {
          const now = channel.getConnectivityState(true);
          if (entry.closed) {
            reject(new Error(`EPP channel to ${target.address} was closed`));
          } else if (now === connectivityState.READY || now === connectivityState.TRANSIENT_FAILURE) {
            resolve();
          } else if (err) {
            reject(new Error(`no connection to EPP ${target.address} within ${this.options.connectTimeoutMs} ms`));
          } else {
            wait(now);
          }
        });
      };
      wait(state);
    });
  }

  /**
   * Starts a raw ext_proc call on the EPP's channel (after ready()). grpc-js
   * may report the call's failure on the next tick: attach an 'error'
   * listener synchronously. Throws an Error naming the problem on unusable TLS settings.
   */
  call(target: EppTarget, headers: OutgoingHttpHeaders): H2Call | ClientDuplexStream<Buffer, Buffer> {
    const entry = this.entryFor(target);
    if (entry.client instanceof H2Channel) return entry.client.call(EXT_PROC_PROCESS_PATH, headers);
    const metadata = Metadata.fromHttp2Headers(headers as IncomingHttpHeaders);
    return entry.client.makeBidiStreamRequest<Buffer, Buffer>(EXT_PROC_PROCESS_PATH, identity, identity, metadata, {});
  }

  /** Closes the channels of targets not in `targets` (call after every snapshot change). */
  retain(targets: Iterable<EppTarget>): void {
    const keep = new Set<string>();
    for (const t of targets) keep.add(targetKey(t));
    for (const [key, entry] of this.byKey) {
      if (!keep.has(key)) this.evict(key, entry);
    }
  }

  /** Closes every channel; ready() fails afterwards. In-flight calls are left to finish or be cancelled. */
  close(): void {
    this.closed = true;
    for (const [key, entry] of this.byKey) this.evict(key, entry);
    this.byTarget = new WeakMap();
  }

  /**
   * The target's channel. When a watched CA / certificate / key file changed since the
   * channel was built, the next stream gets a new channel with the new material; streams
   * on the old channel finish on it.
   */
  private entryFor(target: EppTarget): Entry {
    const generation = this.files.generation;
    const cached = this.byTarget.get(target);
    if (cached && !cached.closed && cached.generation === generation && cached.watch?.moved !== true) return cached;
    if (this.closed) throw new Error('EPP client pool is closed');
    const key = targetKey(target);
    let entry = this.byKey.get(key);
    if (entry && ((entry.generation !== generation && !this.files.unchanged(entry.material)) || entry.watch?.moved === true)) {
      this.evict(key, entry);
      entry = undefined;
    }
    if (!entry) {
      const { read, material } = this.files.recorder();
      if (this.options.transport === 'http2') {
        const client = this.h2Channel(target, read);
        entry = { key, client, closed: false, generation, material };
        this.byKey.set(key, entry);
        entry.generation = generation;
        this.byTarget.set(target, entry);
        return entry;
      }
      const creds = channelCredentials(target.tls, read, identityHostFor(target));
      const options: ChannelOptions = { ...this.channelOptions };
      const sni = serverNameFor(target);
      if (sni !== undefined) options['grpc.ssl_target_name_override'] = sni;
      if (target.tls.enabled && target.tls.serverName) options['grpc.default_authority'] = target.tls.serverName;
      const watch = fromMemberDns(target) ? new WatchedLookup(this.memberLookup(target)) : undefined;
      const client = watch
        ? new Client(guardedTarget(target.address), creds, { ...options, ...guardedChannelOptions(watch.lookup) })
        : new Client(target.address, creds, options);
      entry = { key, client, closed: false, generation, material, ...(watch ? { watch } : {}) };
      this.byKey.set(key, entry);
    }
    entry.generation = generation;
    this.byTarget.set(target, entry);
    return entry;
  }

  private h2Channel(target: EppTarget, read: (path: string) => Buffer): H2Channel {
    const tls = h2TlsOptions(target, read);
    return new H2Channel(target.address, {
      maxMessageBytes: this.options.maxMessageBytes,
      connectTimeoutMs: this.options.connectTimeoutMs,
      keepaliveTimeMs: this.options.keepaliveTimeMs ?? 60_000,
      keepaliveTimeoutMs: 20_000,
      ...(tls ? { tls } : {}),
      ...(target.tls.enabled && target.tls.serverName ? { authority: target.tls.serverName } : {}),
      ...(fromMemberDns(target) ? { lookup: this.memberLookup(target) } : {}),
    });
  }

  /** Resolves a host name from the target member's objects, refusing addresses its destination rules deny. */
  private memberLookup(target: EppTarget): LookupFunction {
    return guardedLookup(destinationJudge(this.destinations.of(target.cluster), target.cluster, target.port), this.options.resolve);
  }

  private evict(key: string, entry: Entry): void {
    entry.closed = true;
    this.byKey.delete(key);
    entry.client.close();
  }
}
