/**
 * The router's /debug/* pages: read-only views of what it built and sees
 * (routing table, signals, sources, controllers, exports, a pick explained).
 * Served on loopback unless admin.exposeDebug (admin/server.ts places them).
 */
import { json, type AdminHandler } from '../admin/server.js';
import { buildInfo } from '../build-info.js';
import type { RouterConfig } from '../config/schema.js';
import type { GatewayStatusDuty, ImportControllerHandle } from '../controller/index.js';
import type { ExportControllerHandle } from '../controller/export-controller.js';
import type { SecurityPosture } from '../credentials/posture.js';
import type { ClusterIdentity } from '../sources/identity/cluster-identity.js';
import { explainPickQuery } from '../picker/explain.js';
import type { SignalStore } from '../signals/index.js';
import { snapshotToJson } from '../snapshot/describe.js';
import type { FleetMembers } from './fleet-members.js';
import type { SnapshotStore } from './snapshot-store.js';

export interface DebugSources {
  readonly config: RouterConfig;
  /** The local cluster's name and where it came from (decided at start). */
  readonly identity: ClusterIdentity;
  readonly store: SnapshotStore;
  readonly signals: SignalStore;
  /** The members read from a Kubernetes API, with their watched resources. */
  readonly kubernetesSources: readonly { readonly cluster: string; resources(): unknown }[];
  readonly posture: SecurityPosture;
  readonly controller?: ImportControllerHandle;
  readonly gatewayStatus?: GatewayStatusDuty;
  readonly exporter?: ExportControllerHandle;
  readonly fleet?: FleetMembers;
}

export function routerDebugRoutes(d: DebugSources): Record<string, AdminHandler> {
  const { config, store, signals, controller, gatewayStatus, exporter, fleet } = d;
  return {
    '/debug/build': () => json(200, buildInfo()),
    '/debug/pick': (url) => {
      const r = explainPickQuery(store.snapshot(), url.searchParams, signals.view(), config.picker);
      return json(r.status, r.body);
    },
    '/debug/signals': () => {
      const view = signals.view();
      return json(200, { at: new Date(view.at).toISOString(), candidates: Object.fromEntries(view.candidates), targets: signals.targets(), warnings: signals.warnings() });
    },
    '/debug/sources': () =>
      json(200, {
        localCluster: d.identity,
        clusters: store.snapshot()?.clusters ?? [],
        rejected: Object.fromEntries(store.sourceErrors()),
        kubernetes: Object.fromEntries(d.kubernetesSources.map((s) => [s.cluster, s.resources()])),
        importController: controller ? { leader: controller.isLeader(), writes: controller.counts() } : { enabled: false },
        gatewayStatus: gatewayStatus && controller
          ? { leader: controller.isLeader(), controllerName: config.controller.gatewayStatus.controllerName, writes: gatewayStatus.counts() }
          : { enabled: false },
        security: d.posture.members,
        fleet: fleet ? fleet.debug() : { enabled: false },
      }),
    '/debug/exports': () => (exporter ? json(200, exporter.debug()) : json(404, { error: 'the export controller is not enabled (exportController.enabled)' })),
    '/debug/routes': () => {
      const snapshot = store.snapshot();
      if (!snapshot) return json(503, { error: 'no routing snapshot yet' });
      return json(200, { ...snapshotToJson(snapshot), sourceErrors: Object.fromEntries(store.sourceErrors()) });
    },
  };
}
