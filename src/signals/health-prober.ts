/**
 * gRPC health checks (grpc.health.v1.Health/Check) of one EPP target, shared by
 * every candidate that uses it. Own channel per target (no shared queue with
 * other targets or with the data path), deadline per check, Envoy thresholds.
 */
import { readFileSync } from 'node:fs';
import { status as GrpcStatus, type ChannelCredentials, type ChannelOptions, type ServiceError } from '@grpc/grpc-js';
import type { LookupFunction } from 'node:net';
import type { EppAnswersConfig, TlsConfig } from '../config/schema.js';
import type { CredentialFiles } from '../credentials/credential-files.js';
import { untrustedCertificate } from '../credentials/epp-trust.js';
import { channelCredentials, tlsNames } from '../credentials/tls-policy.js';
import { HealthStatus } from '../protocol/services.js';
import { destinationsLookup, type ResolveName } from '../transport/guarded-lookup.js';
import { guardedChannelOptions, guardedTarget, WatchedLookup } from '../transport/guarded-resolver.js';
import { createHealthClient, type HealthClient } from './health-client.js';
import { ProbeLoop } from './probe-loop.js';
import type { ProbeListener, ProbeOutcome } from './probe-types.js';
import type { Clock } from './types.js';

export interface HealthProbeSettings {
  /** host:port of the health service. */
  readonly address: string;
  readonly service: string;
  /** TLS settings, as for the ext_proc client; `enabled: false` for plaintext. */
  readonly tls: TlsConfig;
  /** The TLS server name sent when the address is an IP (the EPP Service's DNS name; see tlsNames). */
  readonly ipSni?: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
  /** The member whose objects named the host (for messages). */
  readonly cluster?: string;
  /**
   * Set when the host is a name from the member's objects: every address it resolves to,
   * at each (re)connect, is held to these rules (the member's eppAnswers.destinations).
   */
  readonly destinations?: EppAnswersConfig['destinations'];
}

export interface HealthProberDeps {
  readonly clock: Clock;
  readonly onResult?: ProbeListener;
  readonly readFile?: (path: string) => Buffer;
  /** CA / certificate / key files, watched for rotation: a probe after a change uses the new material (as EPP streams do). */
  readonly files?: CredentialFiles;
  /** How a host name held to `destinations` is resolved (default: the system's resolver). */
  readonly resolve?: ResolveName;
}

/** gRPC codes meaning "nobody answered": the target was not reached. */
const UNREACHED = new Set<number>([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.CANCELLED]);

function reasonOf(err: ServiceError): string {
  // A certificate the channel refused: the EPP is up, but nothing reaches it until the member trusts it.
  if (err.code === GrpcStatus.UNAVAILABLE && untrustedCertificate(err.details)) return 'tls-unverified';
  switch (err.code) {
    case GrpcStatus.DEADLINE_EXCEEDED:
      return 'timeout';
    case GrpcStatus.UNAVAILABLE:
      return 'unavailable';
    default:
      return 'error';
  }
}

/**
 * An EPP without a Health service on the probed port answers UNIMPLEMENTED (a
 * stock llm-d EPP's ext_proc port: health there needs --health-checking); a
 * Health service that does not know the name answers NOT_FOUND. Neither says
 * the EPP is down.
 */
const UNSUPPORTED: ReadonlyMap<number, Omit<ProbeOutcome, 'at'>> = new Map([
  [GrpcStatus.UNIMPLEMENTED, { ok: false, reached: true, reason: 'unimplemented', unsupported: 'UNIMPLEMENTED' }],
  [GrpcStatus.NOT_FOUND, { ok: false, reached: true, reason: 'service-unknown', unsupported: 'NOT_FOUND' }],
]);
const SERVICE_UNKNOWN: Omit<ProbeOutcome, 'at'> = { ok: false, reached: true, reason: 'service-unknown', unsupported: 'SERVICE_UNKNOWN' };

export class HealthProber extends ProbeLoop {
  private client: HealthClient | undefined;
  private credsError: string | undefined;
  /** files.generation when the client was last known current, and the contents it was built from. */
  private built: { generation: number; readonly material: ReadonlyMap<string, Buffer> } | undefined;
  /** Resolves a host name from the member's objects under its rules (undefined: the host is not one). */
  private readonly memberLookup: LookupFunction | undefined;
  /** The current client's watch on that name. */
  private watch: WatchedLookup | undefined;

  constructor(
    readonly settings: HealthProbeSettings,
    private readonly deps: HealthProberDeps,
  ) {
    super(settings, deps.onResult);
    this.memberLookup = settings.destinations === undefined ? undefined : this.guardedLookup(settings.destinations);
  }

  protected release(): void {
    this.client?.close();
    this.client = undefined;
  }

  /** One Check call; never rejects. */
  probeOnce(): Promise<ProbeOutcome> {
    const client = this.ensureClient();
    const now = () => this.deps.clock.now();
    if (!client) return Promise.resolve({ ok: false, reached: false, reason: 'tls-config', at: now() });
    return new Promise<ProbeOutcome>((resolve) => {
      let done = false;
      const finish = (o: Omit<ProbeOutcome, 'at'>) => {
        if (done) return;
        done = true;
        clearTimeout(guard);
        resolve({ ...o, at: now() });
      };
      // Belt and braces: the deadline should fire first; this guards a stuck callback.
      const guard = setTimeout(() => finish({ ok: false, reached: false, reason: 'timeout' }), this.settings.timeoutMs + 500);
      guard.unref();
      try {
        client.Check({ service: this.settings.service }, { deadline: new Date(Date.now() + this.settings.timeoutMs) }, (err, res) => {
          if (err) {
            const refused = err.code === GrpcStatus.UNAVAILABLE ? this.watch?.refusal : undefined;
            if (refused) {
              finish({ ok: false, reached: false, reason: 'destination-refused', detail: refused.message });
              return;
            }
            finish(UNSUPPORTED.get(err.code) ?? { ok: false, reached: !UNREACHED.has(err.code), reason: reasonOf(err), message: err.details });
            return;
          }
          const status = res?.status;
          if (status === HealthStatus.SERVING) finish({ ok: true, reached: true });
          else if (status === HealthStatus.NOT_SERVING) finish({ ok: false, reached: true, reason: 'not-serving' });
          else if (status === HealthStatus.SERVICE_UNKNOWN) finish(SERVICE_UNKNOWN);
          else finish({ ok: false, reached: true, reason: 'unknown-status' });
        });
      } catch {
        finish({ ok: false, reached: false, reason: 'error' });
      }
    });
  }

  private ensureClient(): HealthClient | undefined {
    const files = this.deps.files;
    if (this.client && files && this.built && this.built.generation !== files.generation) {
      // A watched file changed: rebuild when it is one this client was built from.
      if (files.unchanged(this.built.material)) this.built.generation = files.generation;
      else {
        this.client.close();
        this.client = undefined;
      }
    }
    if (this.client && this.watch?.moved) {
      // The name moved to a refused address: a new channel, which dials nothing until it resolves somewhere allowed.
      this.client.close();
      this.client = undefined;
    }
    if (this.client) return this.client;
    if (this.credsError !== undefined) return undefined;
    const { tls, address } = this.settings;
    const names = tlsNames(address.replace(/:\d+$/, ''), tls, this.settings.ipSni ?? 'localhost');
    let creds: ChannelCredentials;
    try {
      const recorder = files?.recorder();
      creds = channelCredentials(tls, recorder?.read ?? this.deps.readFile ?? ((p) => readFileSync(p)), names.verifyHost);
      if (files && recorder) this.built = { generation: files.generation, material: recorder.material };
    } catch (err) {
      this.credsError = (err as Error).message;
      return undefined;
    }
    const options: ChannelOptions = {
      'grpc.initial_reconnect_backoff_ms': Math.min(1000, this.settings.intervalMs),
      'grpc.max_reconnect_backoff_ms': Math.max(1000, this.settings.intervalMs),
      'grpc.enable_retries': 0,
      'grpc.service_config_disable_resolution': 1,
      // Never share a subchannel with the data path's EPP client.
      'grpc.use_local_subchannel_pool': 1,
    };
    if (names.sni !== undefined) options['grpc.ssl_target_name_override'] = names.sni;
    if (tls.enabled && tls.serverName) options['grpc.default_authority'] = tls.serverName;
    this.watch = this.memberLookup ? new WatchedLookup(this.memberLookup) : undefined;
    this.client = this.watch
      ? createHealthClient(guardedTarget(address), creds, { ...options, ...guardedChannelOptions(this.watch.lookup) })
      : createHealthClient(address, creds, options);
    return this.client;
  }

  private guardedLookup(destinations: EppAnswersConfig['destinations']): LookupFunction {
    const port = Number(/:(\d+)$/.exec(this.settings.address)?.[1] ?? 443);
    return destinationsLookup(destinations, this.settings.cluster ?? 'the member', port, this.deps.resolve);
  }
}
