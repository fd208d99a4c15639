/**
 * `mcip-router --export-controller`: the export controller on its own (no
 * ext_proc), with the admin server: /healthz, /readyz, /metrics (mcip_export_*)
 * and /debug/exports.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import { json, startAdminServer } from '../admin/server.js';
import type { RouterConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { startExportFromConfig } from './export-runtime.js';

export interface ExportServer {
  readonly adminAddress: string;
  shutdown(): Promise<void>;
}

export async function serveExportController(config: RouterConfig, logger: Logger, processMetrics = true): Promise<ExportServer> {
  const registry = new Registry();
  if (processMetrics) collectDefaultMetrics({ register: registry });
  const controller = await startExportFromConfig(config, { logger, registry });
  let admin;
  try {
    admin = await startAdminServer(config.listen.admin, {
      registry,
      logger,
      ready: () => ({ ready: true }),
      routes: { '/debug/exports': () => json(200, controller.debug()) },
    });
  } catch (err) {
    await controller.stop();
    throw err;
  }
  logger.info({ admin: admin.address, controller: config.exportController.name }, 'mcip-router export controller running');
  const server = admin;
  let stopping: Promise<void> | undefined;
  return {
    adminAddress: server.address,
    shutdown: () =>
      (stopping ??= (async () => {
        await controller.stop();
        await server.close();
        logger.info('export controller stopped');
      })()),
  };
}
