/**
 * LeaderElector: leader election on a coordination.k8s.io/v1 Lease, with
 * client-go's semantics.
 *
 * - Acquire: create the Lease, or take it over when its holder is empty or has
 *   not renewed for leaseDuration (measured on OUR clock from when we last saw
 *   the record change, so clock skew between replicas does not matter).
 * - Renew every retryPeriod; when no renewal succeeded for renewDeadline the
 *   leader steps down (renewDeadline < leaseDuration: it stops before anyone
 *   else may take over).
 * - stop() releases the Lease (empty holder) so another replica takes over at once.
 * Every update carries the read resourceVersion; a 409 means someone else won.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { KubeConfig, V1Lease } from '@kubernetes/client-node';
import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { httpStatusOf } from '../sources/kubernetes/api-errors.js';

export interface LeaseClient {
  /** undefined when the Lease does not exist. */
  read(namespace: string, name: string): Promise<V1Lease | undefined>;
  create(namespace: string, lease: V1Lease): Promise<V1Lease>;
  replace(namespace: string, name: string, lease: V1Lease): Promise<V1Lease>;
}

export function createLeaseClient(kc: KubeConfig): LeaseClient {
  const api = kc.makeApiClient(CoordinationV1Api);
  return {
    async read(namespace, name) {
      try {
        return await api.readNamespacedLease({ namespace, name });
      } catch (err) {
        if (httpStatusOf(err) === 404) return undefined;
        throw err;
      }
    },
    create: (namespace, body) => api.createNamespacedLease({ namespace, body }),
    replace: (namespace, name, body) => api.replaceNamespacedLease({ namespace, name, body }),
  };
}

export interface LeaderElectorOptions {
  readonly client: LeaseClient;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly onStartedLeading?: () => void;
  readonly onStoppedLeading?: () => void;
  readonly logger?: Logger;
}

/** A controller's leaderElection settings (the config's leaderElectionSchema). */
export interface LeaseSettings {
  readonly leaseName: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** The elector for a controller's settings and Lease (client, namespace, identity). */
export function electorFor(
  settings: LeaseSettings,
  lease: { readonly client: LeaseClient; readonly namespace: string; readonly identity: string },
  onStartedLeading: () => void,
  logger: Logger,
): LeaderElector {
  const { leaseName: name, leaseDurationMs, renewDeadlineMs, retryPeriodMs } = settings;
  return new LeaderElector({ ...lease, name, leaseDurationMs, renewDeadlineMs, retryPeriodMs, onStartedLeading, logger });
}

export class LeaderElector {
  private leading = false;
  private stopped = true;
  private loop: Promise<void> | undefined;
  private lastRenewAt = 0;
  /** The last lease record we saw, and when (our clock) we first saw it. */
  private observed: { key: string; at: number; resourceVersion?: string } | undefined;
  /** Aborted by stop(): ends a retry pause at once. */
  private readonly stopping = new AbortController();

  constructor(private readonly o: LeaderElectorOptions) {}

  isLeader(): boolean {
    return this.leading;
  }

  /** The holder of the lease as last observed ('' = free). */
  get holder(): string | undefined {
    return this.observed?.key.split('|')[0];
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.loop = this.run().catch((err: unknown) => this.o.logger?.error({ err }, 'leader election loop crashed'));
  }

  /** Stops campaigning; a leader releases the Lease. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopping.abort();
    await this.loop;
    if (this.leading) {
      this.setLeading(false);
      await this.release().catch((err: unknown) => this.o.logger?.warn({ err }, 'could not release the lease'));
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const ok = await this.withDeadline(this.tryAcquireOrRenew());
      if (this.stopped) return;
      const now = Date.now();
      if (ok) {
        this.lastRenewAt = now;
        if (!this.leading) this.setLeading(true);
      } else if (this.leading && this.holder !== undefined && this.holder !== '' && this.holder !== this.o.identity) {
        this.o.logger?.warn({ lease: this.leaseName, holder: this.holder }, 'the lease is held by another replica: stepping down');
        this.setLeading(false);
      } else if (this.leading && now - this.lastRenewAt > this.o.renewDeadlineMs) {
        this.o.logger?.warn({ lease: this.leaseName }, `could not renew the lease within ${this.o.renewDeadlineMs} ms: stepping down`);
        this.setLeading(false);
      }
      await this.pause(this.leading ? this.o.retryPeriodMs : this.o.retryPeriodMs * (1 + Math.random() * 0.2));
    }
  }

  private get leaseName(): string {
    return `${this.o.namespace}/${this.o.name}`;
  }

  private setLeading(v: boolean): void {
    this.leading = v;
    this.o.logger?.info({ lease: this.leaseName, identity: this.o.identity }, v ? 'became leader' : 'no longer leader');
    try {
      (v ? this.o.onStartedLeading : this.o.onStoppedLeading)?.();
    } catch (err) {
      this.o.logger?.error({ err }, 'leader callback failed');
    }
  }

  /** A renewal that hangs longer than renewDeadline counts as failed. */
  private async withDeadline(p: Promise<boolean>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), this.o.renewDeadlineMs)));
    try {
      return await Promise.race([p.catch(() => false), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity } = this.o;
    const now = new V1MicroTime();
    const durationSeconds = Math.max(1, Math.ceil(this.o.leaseDurationMs / 1000));
    const lease = await client.read(namespace, name);
    if (!lease) {
      try {
        const created = await client.create(namespace, {
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
        });
        this.observe(created);
        return true;
      } catch (err) {
        if (httpStatusOf(err) === 409) return false;
        throw err;
      }
    }
    this.observe(lease);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const heldByOther = holder !== '' && holder !== identity;
    const leaseMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (heldByOther && (this.observed?.at ?? 0) + leaseMs > Date.now()) return false;
    const mine = holder === identity;
    const body: V1Lease = {
      metadata: { ...lease.metadata, name, namespace },
      spec: {
        ...spec,
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: mine && spec.acquireTime ? spec.acquireTime : now,
        renewTime: now,
        leaseTransitions: mine ? (spec.leaseTransitions ?? 0) : (spec.leaseTransitions ?? 0) + 1,
      },
    };
    try {
      this.observe(await client.replace(namespace, name, body));
      return true;
    } catch (err) {
      if (httpStatusOf(err) === 409) return false;
      throw err;
    }
  }

  private observe(lease: V1Lease): void {
    const s = lease.spec ?? {};
    const key = `${s.holderIdentity ?? ''}|${String(s.renewTime ?? '')}|${s.leaseTransitions ?? 0}`;
    if (this.observed?.key !== key) this.observed = { key, at: Date.now(), resourceVersion: lease.metadata?.resourceVersion };
  }

  private async release(): Promise<void> {
    const { client, namespace, name, identity } = this.o;
    const lease = await client.read(namespace, name);
    if (!lease || lease.spec?.holderIdentity !== identity) return;
    const now = new V1MicroTime();
    await client.replace(namespace, name, {
      metadata: { ...lease.metadata, name, namespace },
      spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
    });
    this.o.logger?.info({ lease: this.leaseName }, 'lease released');
  }

  /** Pauses `ms`, or less if stop() is called meanwhile. */
  private async pause(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }
}
