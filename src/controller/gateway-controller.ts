/**
 * The Gateway API status duty: one reconcile = read the GatewayClasses, plan
 * every status from the snapshot and the local objects (pure), apply the
 * plans (GatewayStatusWriter). It holds no loop and no election: the
 * controller loop runs it on the leader, on new snapshots, on gaining
 * leadership and every resync.
 */
import type { Logger } from 'pino';
import type { RouterConfig } from '../config/schema.js';
import type { HTTPRoute, Service } from '../model/types.js';
import type { RoutingSnapshot } from '../snapshot/types.js';
import type { ClusterState } from '../sources/types.js';
import type { GatewayStatusClient, RawObject } from './gateway-status-client.js';
import { gatewayAddresses, planGatewayStatuses, type GatewayClassView } from './gateway-status.js';
import { GatewayStatusWriter, type GatewayWriteOutcome, type GatewayWriteResult } from './gateway-status-writer.js';
import { rfc3339 } from './import-status.js';

/** Objects judged between two turns of the event loop. */
const YIELD_EVERY = 100;

export interface GatewayReconcileInput {
  readonly snapshot: RoutingSnapshot;
  /** The local cluster's latest state (not stale). */
  readonly local: ClusterState;
  /** Checked between writes: a replica that lost the Lease stops writing. */
  readonly isLeader: () => boolean;
}

export interface GatewayReconcileReport {
  readonly results: readonly GatewayWriteResult[];
  /** Some object could not be written (API error): reconcile again soon. */
  readonly failed: boolean;
}

export interface GatewayStatusDuty {
  readonly name: 'gateway-status';
  reconcile(input: GatewayReconcileInput): Promise<GatewayReconcileReport>;
  /** Outcome counters since start (for metrics and /debug/sources). */
  counts(): Readonly<Record<GatewayWriteOutcome | 'errors', number>>;
}

export interface GatewayStatusDutyOptions {
  readonly config: RouterConfig;
  readonly client: GatewayStatusClient;
  readonly logger: Logger;
  readonly now?: () => Date;
}

function classView(o: RawObject): GatewayClassView | undefined {
  const name = o.metadata?.name;
  const controllerName = o.spec?.controllerName;
  if (typeof name !== 'string' || typeof controllerName !== 'string') return undefined;
  const generation = o.metadata?.generation;
  return { name, controllerName, ...(typeof generation === 'number' ? { generation } : {}), hasParametersRef: o.spec?.parametersRef != null };
}

export function createGatewayStatusDuty(o: GatewayStatusDutyOptions): GatewayStatusDuty {
  const settings = o.config.controller.gatewayStatus;
  const log = o.logger.child({ component: 'gateway-status' });
  const now = (): string => rfc3339(o.now?.() ?? new Date());
  const writer = new GatewayStatusWriter({ client: o.client, controllerName: settings.controllerName, logger: log, now });
  const counts: Record<GatewayWriteOutcome | 'errors', number> = { unchanged: 0, written: 0, gone: 0, stale: 0, full: 0, conflict: 0, errors: 0 };

  return {
    name: 'gateway-status',
    counts: () => ({ ...counts }),
    async reconcile({ snapshot, local, isLeader }) {
      const listed = await o.client.listClasses();
      const byName = new Map<string, RawObject>();
      const classes: GatewayClassView[] = [];
      for (const raw of listed) {
        const view = classView(raw);
        if (!view) continue;
        classes.push(view);
        byName.set(view.name, raw);
      }
      const services = local.objects.filter((x): x is Service => x.kind === 'Service');
      const plans = planGatewayStatuses({
        controllerName: settings.controllerName,
        classes,
        served: o.config.gateways,
        localObjects: local.objects,
        snapshot,
        listeners: o.config.gatewayListeners,
        addresses: gatewayAddresses(settings, services),
      });
      const cached = new Map(local.objects.map((x) => [`${x.kind}/${x.metadata.namespace}/${x.metadata.name}`, x]));
      const steps: { readonly what: string; readonly run: () => Promise<GatewayWriteResult> }[] = [
        ...plans.classes.map((p) => ({ what: `GatewayClass ${p.name}`, run: () => writer.applyClass(p, byName.get(p.name) ?? {}) })),
        ...plans.gateways.map((p) => ({
          what: `Gateway ${p.namespace}/${p.name}`,
          run: () => writer.applyGateway(p, cached.get(`Gateway/${p.namespace}/${p.name}`)?.metadata.resourceVersion),
        })),
        ...plans.routes.map((p) => ({
          what: `HTTPRoute ${p.namespace}/${p.name}`,
          run: () => writer.applyRoute(p, cached.get(`HTTPRoute/${p.namespace}/${p.name}`) as HTTPRoute | undefined),
        })),
      ];
      const results: GatewayWriteResult[] = [];
      let failed = false;
      for (const [i, step] of steps.entries()) {
        if (!isLeader()) break;
        // Most steps end without a request (already up to date): let I/O in between batches of them.
        if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
        try {
          const r = await step.run();
          counts[r.outcome]++;
          results.push(r);
        } catch (err) {
          counts.errors++;
          failed = true;
          log.error({ err, object: step.what }, `could not update ${step.what} status`);
        }
      }
      return { results, failed };
    },
  };
}
