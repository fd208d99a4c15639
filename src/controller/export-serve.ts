/**
 * `mcip-router --export-controller` (hub/spoke) and `--export-agent` (push/pull):
 * the export controller or the member agent on its own (no ext_proc), with the
 * admin server: /healthz, /readyz, /metrics (mcip_export_*) and /debug/exports
 * (placed like the router's /debug/*: loopback or listen.debug).
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { registerBuildInfo } from '../admin/build-info-metric.js';
import { debugPlacement, json, startAdminServer, type AdminServer } from '../admin/server.js';
import { buildInfo } from '../build-info.js';
import type { LoadedRouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { startExportAgentFromConfig } from './export-agent-runtime.js';
import { type ExportFleet, startExportFromConfig } from './export-runtime.js';

export interface ExportServer {
  readonly adminAddress: string;
  /** What /metrics serves. */
  readonly registry: Registry;
  shutdown(): Promise<void>;
}

/** `role`: the hub/spoke export controller or the push/pull member agent; `fleet`: the controller follows fleet.clusterProfiles (runtime/fleet-members.ts: exportFleet). */
export async function serveExportController(config: LoadedRouterConfig, logger: Logger, processMetrics = true, role: 'controller' | 'agent' = 'controller', fleet?: ExportFleet): Promise<ExportServer> {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry);
  const controller =
    role === 'agent' ? await startExportAgentFromConfig(config, { logger, registry }) : await startExportFromConfig(config, { logger, registry, ...(fleet ? { fleet } : {}) });
  const name = role === 'agent' ? (config.exportAgent?.name ?? '') : config.exportController.name;
  let admin: AdminServer | undefined;
  let debug: AdminServer | undefined;
  try {
    // /debug/* only where the router would serve it: loopback, listen.debug, or admin.exposeDebug.
    const placement = debugPlacement(config.listen, config.admin.exposeDebug);
    const deps = { registry, logger, ready: () => ({ ready: true }) };
    const routes = { '/debug/exports': () => json(200, controller.debug()), '/debug/build': () => json(200, buildInfo()) };
    admin = await startAdminServer(config.listen.admin, {
      ...deps,
      routes: placement.onAdmin ? routes : {},
      ...(placement.reason === undefined ? {} : { debugElsewhere: placement.reason }),
    });
    if (placement.listen !== undefined) debug = await startAdminServer(placement.listen, { ...deps, routes });
  } catch (err) {
    await admin?.close();
    await controller.stop();
    throw err;
  }
  logger.info({ admin: admin.address, controller: name, ...buildInfo() }, role === 'agent' ? 'mcip-router export agent running' : 'mcip-router export controller running');
  const server = admin;
  let stopping: Promise<void> | undefined;
  return {
    adminAddress: server.address,
    registry,
    shutdown: () =>
      (stopping ??= (async () => {
        await controller.stop();
        await server.close();
        await debug?.close();
        logger.info(role === 'agent' ? 'export agent stopped' : 'export controller stopped');
      })()),
  };
}
