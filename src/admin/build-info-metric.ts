/** mcip_build_info{version, revision, node} = 1, on the router's and the export controller's registries. */
import { Gauge, type Registry } from 'prom-client';
import { buildInfo } from '../build-info.js';

export function registerBuildInfo(registry: Registry): void {
  const info = buildInfo();
  new Gauge({
    name: 'mcip_build_info',
    help: 'Always 1: the running version, the source revision it was built from and the Node.js version.',
    labelNames: ['version', 'revision', 'node'] as const,
    registers: [registry],
  }).set({ version: info.version, revision: info.revision, node: info.node }, 1);
}
