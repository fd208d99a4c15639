/**
 * Lists and watches the ClusterProfiles of one hub namespace (optionally by
 * label selector) and hands on the member plan whenever it changes: profiles
 * added, removed, relabelled, or their status (health, access providers)
 * changed. A burst of watch events becomes one plan (the coalescer of the
 * Kubernetes sources). Losing the hub keeps the last plan: members already
 * known keep running; the status says the hub is unreachable.
 */
import type { Logger } from 'pino';
import type { BoundedKubeConfig } from '../kubernetes/api-access.js';
import { Backoff, TokenBucket } from '../kubernetes/backoff.js';
import { Coalescer } from '../kubernetes/coalescer.js';
import { ResourceInformer, type InformerStatus } from '../kubernetes/informer.js';
import type { WatchPacing } from '../kubernetes/kubernetes-source.js';
import { createLister, type ListFn } from '../kubernetes/lister.js';
import { resourceName, resourceSpec } from '../kubernetes/resources.js';
import { CLUSTER_PROFILE_GROUP, type DecodedProfile, type LocalCluster, type MemberPlan, decodeClusterProfile, planMembers } from './cluster-profile.js';

export interface ClusterProfileWatchOptions extends WatchPacing {
  readonly kubeConfig: BoundedKubeConfig;
  readonly namespace: string;
  readonly labelSelector: string;
  /** ClusterProfile version served by the hub (v1alpha1, ...). */
  readonly apiVersion: string;
  /** clusters[] names: a profile claiming one is refused. */
  readonly staticMembers: ReadonlySet<string>;
  /** The local cluster and its own profile: never a member. */
  readonly local?: LocalCluster;
  readonly logger?: Logger;
  readonly list?: ListFn;
}

/** What /debug and --check show of the hub. */
export interface HubStatus {
  readonly resource: string;
  readonly namespace: string;
  readonly labelSelector: string;
  readonly state: InformerStatus['state'];
  readonly reason?: string;
  readonly message?: string;
  readonly profiles: number;
}

export class ClusterProfileWatch {
  private informer: ResourceInformer<DecodedProfile> | undefined;
  private readonly coalescer: Coalescer;
  private onPlan: ((plan: MemberPlan) => void) | undefined;
  private stopped = false;

  constructor(private readonly o: ClusterProfileWatchOptions) {
    this.coalescer = new Coalescer(() => this.emit(), o.coalesceMs, o.coalesceMaxMs);
  }

  /**
   * Starts listing and watching; resolves with the first plan once the first list came back,
   * or with no plan when the hub did not answer within initialSyncTimeoutMs (the watch keeps
   * retrying and later plans arrive through onPlan).
   */
  async start(onPlan: (plan: MemberPlan) => void): Promise<MemberPlan | undefined> {
    if (this.onPlan) throw new Error('ClusterProfile watch already started');
    this.onPlan = onPlan;
    const spec = resourceSpec('ClusterProfile', CLUSTER_PROFILE_GROUP, this.o.apiVersion, 'clusterprofiles');
    const informer = new ResourceInformer<DecodedProfile>({
      spec,
      namespace: this.o.namespace,
      ...(this.o.labelSelector !== '' ? { labelSelector: this.o.labelSelector } : {}),
      list: this.o.list ?? createLister(this.o.kubeConfig),
      watch: this.o.kubeConfig.watch,
      limiter: new TokenBucket(this.o.qps, this.o.burst),
      backoff: new Backoff(this.o.backoffInitialMs, this.o.backoffMaxMs),
      decode: (raw) => decodeClusterProfile(raw),
      onChange: () => this.coalescer.trigger(),
      onStatus: (s) => this.statusChanged(s),
      watchTimeoutSeconds: this.o.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300),
      ...(this.o.logger ? { logger: this.o.logger } : {}),
    });
    this.informer = informer;
    informer.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([informer.firstOutcome(), new Promise<void>((r) => (timer = setTimeout(r, this.o.initialSyncTimeoutMs)))]);
    clearTimeout(timer);
    if (this.stopped || informer.status.state !== 'synced') return undefined;
    this.coalescer.cancel();
    return this.plan();
  }

  status(): HubStatus {
    const s = this.informer?.status ?? { state: 'pending' as const };
    return {
      resource: resourceName(resourceSpec('ClusterProfile', CLUSTER_PROFILE_GROUP, this.o.apiVersion, 'clusterprofiles')),
      namespace: this.o.namespace,
      labelSelector: this.o.labelSelector,
      state: s.state,
      ...(s.state === 'failed' ? { reason: s.failure.reason, message: s.failure.message } : {}),
      profiles: this.informer?.store.size ?? 0,
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.coalescer.cancel();
    this.informer?.stop();
  }

  private plan(): MemberPlan {
    const decoded = [...(this.informer?.store.values() ?? [])].map((e) => e.result);
    return planMembers(decoded, this.o.staticMembers, this.o.local);
  }

  private emit(): void {
    if (!this.stopped && this.informer?.status.state === 'synced') this.onPlan?.(this.plan());
  }

  private statusChanged(s: InformerStatus): void {
    if (s.state === 'failed') this.o.logger?.warn({ reason: s.failure.reason }, `hub ClusterProfiles: ${s.failure.message}; the last known members keep running; retrying with backoff`);
    else if (s.state === 'synced') this.coalescer.trigger();
  }
}
