/**
 * SIMULATION: one member cluster of the ClusterSet on loopback: its model
 * server pods and the EPP of its InferencePool `llm-pool`, with the faults the
 * demo can inject (kill the whole cluster, kill only the EPP, saturate).
 */
import type { ClusterName, ClusterPorts } from './layout.js';
import { SimulatedEpp } from './sim-epp.js';
import { SimulatedModelServer } from './sim-model-server.js';

/** The InferencePool both example clusters define (examples/cluster-a and cluster-b, inferencepool.yaml). */
export const POOL = 'llm-pool';
/** Model servers running at once per pod. */
const POD_CAPACITY = 8;
/** Background requests per pod while saturated: queue and KV cache well over the router's thresholds (5, 0.9). */
const SATURATION_BACKGROUND = 3 * POD_CAPACITY;

export interface ClusterState {
  readonly eppUp: boolean;
  readonly podsUp: number;
  readonly saturated: boolean;
}

export class SimulatedCluster {
  readonly pods: SimulatedModelServer[];
  readonly epp: SimulatedEpp;
  private saturated = false;

  constructor(
    readonly name: ClusterName,
    ports: ClusterPorts,
    baseLatencyMs: number,
  ) {
    // Pod names like the Deployment behind the pool's selector (app: vllm-llama3-8b).
    const suffix = name.replace(/^cluster-/, '');
    this.pods = ports.pods.map(
      (port, i) =>
        new SimulatedModelServer({ cluster: name, pod: `vllm-llama3-8b-${suffix}-${i}`, port, baseLatencyMs, capacity: POD_CAPACITY }),
    );
    this.epp = new SimulatedEpp({ cluster: name, pool: POOL, port: ports.epp, metricsPort: ports.metrics, pods: this.pods });
  }

  state(): ClusterState {
    return { eppUp: this.epp.up, podsUp: this.pods.filter((p) => p.up).length, saturated: this.saturated };
  }

  /** Starts (or revives) everything. */
  async start(): Promise<void> {
    for (const pod of this.pods) await pod.start();
    await this.epp.start();
  }

  /** The whole cluster goes away: EPP, metrics and every model server. */
  async kill(): Promise<void> {
    await this.epp.stop();
    await Promise.all(this.pods.map((p) => p.stop()));
  }

  async killEpp(): Promise<void> {
    await this.epp.stop();
  }

  async startEpp(): Promise<void> {
    await this.epp.start();
  }

  setSaturated(on: boolean): void {
    this.saturated = on;
    for (const pod of this.pods) pod.background = on ? SATURATION_BACKGROUND : 0;
  }

  async stop(): Promise<void> {
    await this.kill();
  }
}
