/**
 * One router replica's controller half, for controller tests: a
 * KubernetesSource on the API stand-in, the snapshot builder, and the import
 * controller (leader election, duties) fed by them.
 */
import type { RouterConfig } from '../../src/config/schema.js';
import { startImportController, type ControllerDuty, type ImportControllerHandle } from '../../src/controller/import-controller.js';
import { buildSnapshot } from '../../src/snapshot/build.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';
import type { KubernetesSource } from '../../src/sources/kubernetes/kubernetes-source.js';
import type { ClusterState } from '../../src/sources/types.js';
import { silent, type KubeEnv } from '../sources/kubernetes/kube-fixtures.js';

export class Replica {
  state: ClusterState | undefined;
  snapshot: RoutingSnapshot | undefined;
  controller: ImportControllerHandle | undefined;
  private readonly listeners = new Set<() => void>();
  private version = 0;
  private readonly source: KubernetesSource;

  constructor(
    env: KubeEnv,
    private readonly config: RouterConfig,
    private readonly duties: readonly ControllerDuty[] = [],
  ) {
    this.source = env.source();
  }

  async start(): Promise<this> {
    await this.source.start({
      onState: (s) => {
        this.state = s;
        this.snapshot = buildSnapshot({ config: this.config, clusters: [s], version: ++this.version }).snapshot;
        for (const l of this.listeners) l();
      },
      onError: () => undefined,
    });
    this.controller = await startImportController({
      config: this.config,
      kubeConfig: this.source.kubeConfig!,
      logger: silent,
      duties: this.duties,
      getSnapshot: () => this.snapshot,
      getLocalState: () => this.state,
      onSnapshot: (l) => {
        this.listeners.add(l);
        return () => this.listeners.delete(l);
      },
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.controller?.stop();
    await this.source.stop();
  }
}
