/**
 * The member agent (push/pull topology): runs in one member with that member's
 * credentials and a hub kubeconfig limited to its own hub namespace.
 *
 * - Reads its own InferencePools and InferencePoolImports (a KubernetesSource) and
 *   every member's record on the hub (HubRecords); plans with planExports(), the
 *   hub controller's planner: the local member is a view of its objects, every other
 *   member a view of its record (export-agent-record.ts).
 * - Carries out only its own member's steps (runMemberSteps: imports, our
 *   status.controllers[] entry, the grace, pool statuses), then publishes its record:
 *   the pools it exports and the imports it holds, renewed every heartbeatMs.
 * - Leader election on a Lease in its own cluster: one replica writes, here and on the hub.
 * - Nothing runs before both its own first list and the hub's first list: until then
 *   which members exist is not known, and withdrawing would be wrong.
 * - A member whose record went quiet (staleAfterMs) or a hub that does not answer:
 *   those members count as unreachable (last known exports kept, pool statuses name them).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ExportAgentConfig } from '../config/export-agent-schema.js';
import type { InferencePool, InferencePoolImport } from '../model/types.js';
import type { KubernetesSource } from '../sources/kubernetes/kubernetes-source.js';
import type { ClusterState } from '../sources/types.js';
import { buildRecordSpec, recordImports, recordNamespace, recordPools, type RecordSpec } from './export-agent-record.js';
import { publishRecord, type HubDebug, type HubRecords, type RecordClient } from './export-agent-hub.js';
import { keyOf, planExports, type MemberView } from './export-plan.js';
import { ExportRecord, type ExportDebug } from './export-record.js';
import { runMemberSteps } from './export-steps.js';
import type { ExportClient } from './export-writer.js';
import { rfc3339 } from './import-status.js';
import { electorFor, type LeaseClient } from './leader-election.js';
import { ReconcileLoop } from './reconcile-loop.js';

const INVALID_POOL = 'InferencePool ';

export interface ExportAgentOptions {
  readonly settings: ExportAgentConfig;
  /** This member's name (clusterName). */
  readonly cluster: string;
  readonly source: KubernetesSource;
  /** Builds the member's client from its KubeConfig once the source started. */
  readonly clientFor: (kc: KubeConfig) => ExportClient;
  readonly hub: HubRecords;
  readonly records: RecordClient;
  readonly lease?: { readonly client: LeaseClient; readonly namespace: string; readonly identity: string };
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface ExportAgentHandle {
  isLeader(): boolean;
  reconcile(): Promise<void>;
  debug(): ExportDebug & { readonly hub: HubDebug; readonly recordNamespace: string };
  readonly record: ExportRecord;
  stop(): Promise<void>;
}

export async function startExportAgent(o: ExportAgentOptions): Promise<ExportAgentHandle> {
  const { settings, cluster, hub } = o;
  const log = o.logger.child({ component: 'export-agent' });
  const now = o.now ?? Date.now;
  const record = new ExportRecord(settings.name, settings.withdrawalGraceMs);
  const namespace = recordNamespace(settings.namespacePrefix, cluster);
  let state: ClusterState | undefined;
  let everSynced = false;
  let starting = true;
  let client: ExportClient | undefined;
  let withdrawnSince: ReadonlyMap<string, number> = new Map();
  let published: RecordSpec | undefined;
  /** Set by the heartbeat: the next pass rewrites the record even unchanged. */
  let renewDue = true;
  let stopped = false;
  let deadlineTimer: NodeJS.Timeout | undefined;
  const missingNamespaces = new Set<string>();
  const created = new Set<string>();
  const prunedPools = new Set<string>();

  const elector = o.lease ? electorFor(settings.leaderElection, o.lease, () => loop.trigger(), log) : undefined;
  const isLeader = (): boolean => !stopped && (elector ? elector.isLeader() : true);

  const views = (): MemberView[] => {
    const objects = state?.objects ?? [];
    const imports = objects.filter((x): x is InferencePoolImport => x.kind === 'InferencePoolImport');
    for (const i of imports) created.delete(keyOf(i.metadata.namespace, i.metadata.name));
    const own: MemberView = {
      name: cluster,
      reachable: state !== undefined && !state.stale,
      synced: everSynced,
      starting,
      pools: objects.filter((x): x is InferencePool => x.kind === 'InferencePool'),
      imports,
      missingNamespaces,
      created,
      invalidPools: new Set((state?.errors ?? []).flatMap((e) => (e.object.startsWith(INVALID_POOL) ? [e.object.slice(INVALID_POOL.length)] : []))),
    };
    const others: MemberView[] = [];
    for (const [name, m] of hub.members()) {
      if (name === cluster) continue; // our own objects speak for us, not what the hub holds of them
      others.push({
        name,
        reachable: m.fresh,
        // Stable wording: the pool status is rewritten only when the reason changes.
        unreachableWhy: hub.reachable ? `its export record was not renewed within ${settings.staleAfterMs} ms` : 'the hub is unreachable',
        synced: true,
        starting: false,
        pools: recordPools(m.record),
        imports: recordImports(m.record, settings.name),
        missingNamespaces: new Set(),
        created: new Set(),
        invalidPools: new Set(),
      });
    }
    return [own, ...others.sort((a, b) => a.name.localeCompare(b.name))];
  };

  async function pass(): Promise<boolean> {
    if (stopped || !isLeader() || !client || starting || !everSynced || !hub.synced) return false;
    const v = views();
    const plan = planExports({ controllerName: settings.name, members: v, withdrawnSince, now: now(), graceMs: settings.withdrawalGraceMs });
    withdrawnSince = plan.withdrawnSince;
    record.observePlan(plan, v);
    if (deadlineTimer) clearTimeout(deadlineTimer);
    deadlineTimer = plan.nextDeadline !== undefined && !stopped ? setTimeout(() => loop.trigger(), Math.max(0, plan.nextDeadline - now()) + 5) : undefined;
    const failed = await runMemberSteps({
      member: cluster,
      plan,
      client,
      controllerName: settings.name,
      now: () => rfc3339(new Date(now())),
      missingNamespaces,
      created,
      prunedPools,
      record,
      logger: log,
      stillLeading: isLeader,
    });
    if (!isLeader()) return failed;
    // What we publish of our imports is what the cluster shows now (our writes included on the next pass).
    const spec = buildRecordSpec(cluster, settings.name, plan, own(v).imports, rfc3339(new Date(now())));
    try {
      const outcome = await publishRecord(o.records, namespace, cluster, spec, published, renewDue);
      if (outcome === 'written') {
        published = spec;
        renewDue = false;
      }
      record.memberError('hub', undefined);
    } catch (err) {
      published = undefined;
      record.memberError('hub', `writing ${namespace}/${cluster}: ${(err as Error).message}`);
      log.warn({ err: (err as Error).message, record: `${namespace}/${cluster}` }, 'export agent: could not write this member\'s record on the hub; retrying');
      return true;
    }
    return failed;
  }

  const own = (v: readonly MemberView[]): MemberView => v[0] as MemberView;

  const loop = new ReconcileLoop<boolean>({
    pass,
    failed: (f) => f,
    retryInitialMs: Math.min(settings.heartbeatMs, 2000),
    retryMaxMs: settings.resyncMs,
    resyncMs: settings.resyncMs,
    onError: (err) => log.error({ err }, 'export agent pass failed'),
  });
  // The heartbeat: a pass every heartbeatMs renews the record and notices members gone quiet.
  const heartbeat = setInterval(() => {
    renewDue = true;
    loop.trigger();
  }, settings.heartbeatMs);
  heartbeat.unref();

  const hubStarted = hub.start(() => loop.trigger()).then(() => loop.trigger());
  o.source
    .start({
      onState: (s) => {
        state = s;
        if (!s.stale) everSynced = true;
        record.memberError(cluster, s.stale ? 'its API server is unreachable' : undefined);
        loop.trigger();
      },
      onError: (e) => record.memberError(cluster, e.message),
    })
    .catch((err: unknown) => {
      log.warn({ err: (err as Error).message }, 'this member\'s API is not reachable yet; the agent waits for it');
      record.memberError(cluster, (err as Error).message);
    })
    .finally(() => {
      starting = false;
      const kc = o.source.kubeConfig;
      if (kc) client = o.clientFor(kc);
      loop.start();
    });
  elector?.start();
  await hubStarted;

  return {
    isLeader,
    record,
    reconcile: () => loop.reconcile().then(() => undefined),
    debug: () => {
      const members = views().map((m) => ({ name: m.name, reachable: m.reachable, synced: m.synced, missingNamespaces: [...m.missingNamespaces].sort(), controllerNamePruned: m.name === cluster ? [...prunedPools].sort() : [] }));
      return { ...record.debug(isLeader(), members), hub: hub.debug(), recordNamespace: namespace };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      if (deadlineTimer) clearTimeout(deadlineTimer);
      await loop.stop();
      await elector?.stop();
      hub.stop();
      await o.source.stop();
    },
  };
}
