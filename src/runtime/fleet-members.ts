/**
 * Members from a fleet manager: the ClusterProfiles of one hub namespace,
 * each read with a token from the operator's credential plugin. Follows the
 * hub live:
 *
 * - a profile that becomes a member gets its own Kubernetes source (the
 *   remote kinds, the namespaces of fleet.clusterProfiles.members), connected
 *   to the server its access provider gives, with a bearer token the provider
 *   file's plugin prints for it (no kubeconfig, no Secret on the hub);
 * - a profile removed (or no longer selected, or refused) stops its source,
 *   and the listener hears the member is gone (onRemoved);
 * - a changed connection (server, CA, plugin call) restarts the member; its last
 *   objects are kept (stale) until the new connection answered a first time, so a
 *   wrong server or CA published on the hub does not take its pools away;
 * - a profile not ControlPlaneHealthy is an outage: the member's state is
 *   empty (its pools get no traffic) and its last objects are held back until
 *   it is healthy again; the reason is reported as the member's source error;
 * - a profile no provider of the file can serve is reported and not started.
 *
 * Applying plans is serialized: one plan at a time, in the order they came.
 */
import type { ClusterConfig, ClusterProfilesConfig, RouterConfig } from '../config/schema.js';
import type { ExportFleet } from '../controller/export-runtime.js';
import { ExecTokenSource, type ExecTokenStatus } from '../credentials/exec-token.js';
import { type ProviderFile, loadProviderFile, planPluginCall } from '../credentials/provider-file.js';
import type { Logger } from '../log.js';
import { type ClusterProfile, type MemberPlan, firstOf } from '../sources/fleet/cluster-profile.js';
import { memberKubeConfig } from '../sources/fleet/member-kubeconfig.js';
import { ClusterProfileWatch, type HubStatus } from '../sources/fleet/profile-watch.js';
import { KubernetesSource, REMOTE_KINDS, loadKubeConfig } from '../sources/kubernetes/index.js';
import type { ObjectKind } from '../model/types.js';
import type { ClusterState, SourceError, SourceListener } from '../sources/types.js';
import { toSourceError } from './load-sources.js';
import { Slots } from './slots.js';

/**
 * A member from a profile as routing sees it: the members template of fleet.clusterProfiles.
 * It has no `kubernetes` settings: those would name a kubeconfig, and the member's metrics
 * scrapes would fall back to the router's own default credentials; its objects come from
 * FleetMembers, and a scrape token only from epp.metrics.bearerTokenFile.
 */
export function fleetClusterConfig(cp: ClusterProfilesConfig, cluster: string): ClusterConfig {
  const m = cp.members;
  return {
    name: cluster,
    epp: m.epp,
    eppAnswers: m.eppAnswers,
    parentProbe: m.parentProbe,
    failOpen: { endpoints: [] },
    addressOverrides: { services: [], gateways: [] },
  };
}

/** The config with the fleet's members added to clusters[] (what routing sees). */
export function withFleetMembers(config: RouterConfig, members: readonly string[]): RouterConfig {
  const cp = config.fleet.clusterProfiles;
  if (!cp || members.length === 0) return config;
  return { ...config, clusters: [...config.clusters, ...members.map((name) => fleetClusterConfig(cp, name))] };
}

export interface FleetListener extends SourceListener {
  /** The member is no longer in the fleet: forget its state. */
  onRemoved(cluster: string): void;
  /** After each plan: every member the profiles name (serving, in an outage, or without credentials). */
  onMembers?(clusters: readonly string[]): void;
  /**
   * A member's source was created; `started` settles once its first list ended (synced or not).
   * Called before any of its states.
   */
  onSource?(cluster: string, source: KubernetesSource, started: Promise<void>): void;
  /**
   * Given: the listener decides what an outage means. Its states are then forwarded whatever
   * the profile's health, and this hears every change of it (false: the profile's message).
   * Absent: an outage is an empty state and the message as the member's source error.
   */
  onHealth?(cluster: string, healthy: boolean, message?: string): void;
}

export interface FleetMembersOptions {
  /** What each member's source watches (default: the remote kinds routing reads). */
  readonly kinds?: readonly ObjectKind[];
}

/** What /debug/sources and --check show per member (never a token). */
export interface FleetMemberView {
  readonly cluster: string;
  readonly profile: string;
  readonly state: 'serving' | 'outage' | 'no-credentials';
  readonly message?: string;
  readonly provider?: string;
  readonly server?: string;
  readonly credential?: ExecTokenStatus;
}

interface Running {
  profile: ClusterProfile;
  readonly key: string;
  readonly tokens: ExecTokenSource;
  readonly source: KubernetesSource;
  lastState: ClusterState | undefined;
  healthy: boolean;
  /** The objects of the connection this one replaced, served (stale) until this one answered. */
  carried: ClusterState | undefined;
}

export class FleetMembers {
  private readonly running = new Map<string, Running>();
  private readonly unserved = new Map<string, FleetMemberView>();
  private refused: MemberPlan['refused'] = [];
  private watch: ClusterProfileWatch | undefined;
  private providerFile: ProviderFile | undefined;
  private applying: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly cp: ClusterProfilesConfig;
  /** Members connecting at once (members.startConcurrency). */
  private readonly memberStarts: Slots;
  /** Credential plugins running at once, across all members (plugins.maxConcurrentRuns). */
  private readonly pluginRuns: Slots;

  constructor(
    private readonly config: RouterConfig,
    private readonly listener: FleetListener,
    private readonly logger: Logger,
    private readonly options: FleetMembersOptions = {},
  ) {
    const cp = config.fleet.clusterProfiles;
    if (!cp) throw new Error('fleet.clusterProfiles is not configured');
    this.cp = cp;
    this.memberStarts = new Slots(cp.members.startConcurrency);
    this.pluginRuns = new Slots(cp.plugins.maxConcurrentRuns);
  }

  /** Reads the provider file (a bad one rejects: the operator's input), lists the hub and starts the members it names. */
  async start(): Promise<void> {
    this.providerFile = loadProviderFile(this.cp.providerFile);
    const k = this.config.kubernetes;
    this.watch = new ClusterProfileWatch({
      kubeConfig: loadKubeConfig(this.cp.hub, { cluster: 'fleet hub', warn: (m) => this.logger.warn(m) }),
      namespace: this.cp.namespace,
      labelSelector: this.cp.labelSelector,
      apiVersion: this.cp.apiVersion,
      staticMembers: new Set(this.config.clusters.map((c) => c.name)),
      local: { cluster: this.config.clusterName, ...(this.cp.localProfile !== undefined ? { profile: `${this.cp.namespace}/${this.cp.localProfile}` } : {}) },
      coalesceMs: k.coalesceMs,
      coalesceMaxMs: k.coalesceMaxMs,
      initialSyncTimeoutMs: k.initialSyncTimeoutMs,
      backoffInitialMs: k.backoffInitialMs,
      backoffMaxMs: k.backoffMaxMs,
      ...(this.cp.hub.qps !== undefined ? { qps: this.cp.hub.qps } : {}),
      ...(this.cp.hub.burst !== undefined ? { burst: this.cp.hub.burst } : {}),
      logger: this.logger.child({ component: 'fleet-hub' }),
    });
    const first = await this.watch.start((plan) => void this.apply(plan));
    if (first) await this.apply(first);
    else this.logger.warn({ hub: this.watch.status() }, 'fleet hub not synced at start: serving the static members; ClusterProfile members follow once the hub answers');
  }

  /** The hub's watch status, the members and the refused profiles. */
  debug(): { hub: HubStatus | undefined; members: FleetMemberView[]; refused: MemberPlan['refused'] } {
    const members: FleetMemberView[] = [...this.unserved.values()];
    for (const [cluster, r] of this.running) {
      members.push({
        cluster,
        profile: r.profile.ref,
        state: r.healthy ? 'serving' : 'outage',
        ...(r.healthy ? {} : { message: r.profile.health.message }),
        provider: r.tokens.call.provider,
        server: r.tokens.call.cluster.server,
        credential: r.tokens.status(),
      });
    }
    members.sort((a, b) => a.cluster.localeCompare(b.cluster));
    return { hub: this.watch?.status(), members, refused: this.refused };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.watch?.stop();
    await this.applying;
    await Promise.allSettled([...this.running.values()].map((r) => r.source.stop()));
    this.running.clear();
  }

  /**
   * Applies plans in order; resolves once `plan` is applied and its new members' starts ended.
   * The next plan does not wait for those starts: members queued for a start slot must not hold
   * up an outage or a removal (a member removed while it waits never starts).
   */
  private apply(plan: MemberPlan): Promise<void> {
    const applied = this.applying.then(() => this.reconcile(plan));
    const failed = (err: unknown): void => this.logger.error({ err }, 'applying the fleet member plan failed');
    this.applying = applied.then(() => undefined, failed);
    return applied.then((r) => r.started, () => undefined);
  }

  private async reconcile(plan: MemberPlan): Promise<{ readonly started: Promise<void> }> {
    if (this.stopped || !this.providerFile) return { started: Promise.resolve() };
    for (const r of plan.refused) if (!this.refused.some((x) => x.message === r.message)) this.logger.warn({ profile: r.ref }, r.message);
    this.refused = plan.refused;
    const starts: Promise<void>[] = [];
    const wanted = new Set<string>();
    for (const [cluster, profile] of plan.members) {
      wanted.add(cluster);
      const call = planPluginCall(this.providerFile, profile.ref, profile.accessProviders, profile.credentialProviders);
      if (!call.ok) {
        if (this.running.has(cluster)) await this.remove(cluster);
        const message = profile.problems.length > 0 ? `${call.message}; left out: ${firstOf(profile.problems, 5, '; ')}` : call.message;
        this.unserved.set(cluster, { cluster, profile: profile.ref, state: 'no-credentials', message });
        this.listener.onError({ cluster, reason: 'auth', message, errors: [] });
        continue;
      }
      this.unserved.delete(cluster);
      const key = JSON.stringify([call.call.command, call.call.args, call.call.env, call.call.execInfo, call.call.cluster]);
      const current = this.running.get(cluster);
      let carried: ClusterState | undefined;
      if (current && current.key !== key) {
        carried = current.lastState;
        await this.remove(cluster);
      }
      const running = this.running.get(cluster);
      if (running) {
        this.setHealth(cluster, running, profile);
        continue;
      }
      starts.push(this.add(cluster, profile, key, new ExecTokenSource({
        call: call.call,
        settings: this.cp.plugins,
        slots: this.pluginRuns,
        onRefreshError: (err) => this.logger.warn({ cluster }, `token refresh failed, the current token is used until it expires: ${err.message}`),
      }), carried));
    }
    for (const cluster of [...this.running.keys(), ...this.unserved.keys()]) {
      if (!wanted.has(cluster)) await this.remove(cluster);
    }
    this.listener.onMembers?.([...wanted].sort());
    return { started: Promise.all(starts).then(() => undefined, (err: unknown) => this.logger.error({ err }, 'starting fleet members failed')) };
  }

  private async add(cluster: string, profile: ClusterProfile, key: string, tokens: ExecTokenSource, carried?: ClusterState): Promise<void> {
    const m = this.cp.members;
    const log = this.logger.child({ cluster });
    const source = new KubernetesSource({
      cluster,
      kubeConfig: () => memberKubeConfig(cluster, tokens.call.cluster, m, tokens, (msg) => log.warn(msg)),
      kinds: this.options.kinds ?? REMOTE_KINDS,
      namespaces: m.namespaces,
      ...this.pacing(),
      ...(m.qps !== undefined ? { qps: m.qps } : {}),
      ...(m.burst !== undefined ? { burst: m.burst } : {}),
      logger: log,
    });
    const entry: Running = { profile, key, tokens, source, lastState: undefined, healthy: profile.health.healthy, carried };
    this.running.set(cluster, entry);
    log.info({ profile: profile.ref, provider: tokens.call.provider, server: tokens.call.cluster.server }, 'fleet member added');
    const forward: SourceListener = {
      onState: (fresh) => {
        if (this.running.get(cluster) !== entry) return;
        let s = fresh;
        if (entry.carried && s.stale) s = { ...s, objects: entry.carried.objects, errors: entry.carried.errors };
        else entry.carried = undefined;
        entry.lastState = s;
        if (entry.healthy || this.listener.onHealth) this.listener.onState(s);
      },
      onError: (e) => {
        if (this.running.get(cluster) === entry) this.listener.onError(e);
      },
    };
    // A member removed (or the fleet stopped) while it waited for its slot never starts.
    const started = this.memberStarts.run(() => (this.running.get(cluster) === entry && !this.stopped ? source.start(forward) : Promise.resolve())).catch((err: unknown) => {
      if (this.running.get(cluster) === entry) this.listener.onError(toSourceError(cluster, err));
    });
    this.listener.onSource?.(cluster, source, started);
    if (!entry.healthy) this.outage(cluster, entry);
    await started;
  }

  private setHealth(cluster: string, r: Running, profile: ClusterProfile): void {
    const was = r.healthy;
    r.profile = profile;
    r.healthy = profile.health.healthy;
    if (was && !r.healthy) this.outage(cluster, r);
    else if (!was && r.healthy) {
      this.logger.info({ cluster, profile: profile.ref }, 'fleet member healthy again: serving its objects');
      if (this.listener.onHealth) this.listener.onHealth(cluster, true);
      else if (r.lastState) this.listener.onState(r.lastState);
    }
  }

  /** The member gets no traffic: an empty state, and the reason as its source error (or the listener's onHealth). */
  private outage(cluster: string, r: Running): void {
    const why = `ClusterProfile ${r.profile.ref}: ${r.profile.health.message}`;
    if (this.listener.onHealth) {
      this.logger.warn({ cluster, profile: r.profile.ref }, `${why}: cluster ${cluster} is treated as an outage until it is healthy`);
      this.listener.onHealth(cluster, false, why);
      return;
    }
    const message = `${why}: cluster ${cluster} is treated as an outage (no traffic) until it is healthy`;
    this.logger.warn({ cluster, profile: r.profile.ref }, message);
    const empty: ClusterState = { cluster, objects: [], errors: [], stale: false, revision: `outage:${r.profile.ref}:${Date.now()}` };
    this.listener.onState(empty);
    const error: SourceError = { cluster, reason: 'connect', message, errors: [] };
    this.listener.onError(error);
  }

  private async remove(cluster: string): Promise<void> {
    const r = this.running.get(cluster);
    const unserved = this.unserved.delete(cluster);
    if (!r && !unserved) return;
    this.running.delete(cluster);
    if (r) {
      await r.source.stop();
      this.logger.info({ cluster, profile: r.profile.ref }, 'fleet member removed');
    }
    this.listener.onRemoved(cluster);
  }

  private pacing() {
    const k = this.config.kubernetes;
    return {
      coalesceMs: k.coalesceMs,
      coalesceMaxMs: k.coalesceMaxMs,
      initialSyncTimeoutMs: k.initialSyncTimeoutMs,
      backoffInitialMs: k.backoffInitialMs,
      backoffMaxMs: k.backoffMaxMs,
    };
  }
}

/** The export controller's way to follow fleet.clusterProfiles (controller/export-runtime.ts), with its config once the local cluster is named. */
export const exportFleet: ExportFleet = (config, listener, logger, kinds) => new FleetMembers(config, listener, logger, { kinds });
