/**
 * The faults the demo injects into a simulated cluster (kill the whole
 * cluster, kill only its EPP, saturate its model servers): at the times
 * --after and --for set, or toggled by a key. Each one is announced in the
 * live view, where it starts a new phase of the summary.
 */
import type { Fault } from './args.js';
import type { ClusterName } from './layout.js';
import type { SimulatedCluster } from './sim-cluster.js';
import type { LiveView } from './view.js';

export class FaultInjector {
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly clusters: Readonly<Record<ClusterName, SimulatedCluster>>,
    private readonly view: LiveView,
    /** True once the demo is stopping: no more faults then. */
    private readonly stopping: () => boolean,
  ) {}

  /** Every fault on `afterS` seconds from now, and off again `forS` seconds after they are all on (undefined: never). */
  schedule(faults: readonly Fault[], afterS: number, forS: number | undefined): void {
    if (faults.length === 0) return;
    const applyAll = async (on: boolean): Promise<void> => {
      for (const f of faults) await this.apply(f, on);
    };
    const begin = async (): Promise<void> => {
      await applyAll(true);
      if (forS !== undefined) this.timers.push(setTimeout(() => void applyAll(false), forS * 1000));
    };
    this.timers.push(setTimeout(() => void begin(), afterS * 1000));
  }

  /** Turns the fault on if it is off now, off if it is on. */
  toggle(f: Fault): Promise<void> {
    const s = this.clusters[f.cluster].state();
    switch (f.kind) {
      case 'kill':
        return this.apply(f, s.eppUp || s.podsUp > 0);
      case 'kill-epp':
        return this.apply(f, s.eppUp);
      case 'saturate':
        return this.apply(f, !s.saturated);
    }
  }

  async apply(f: Fault, on: boolean): Promise<void> {
    if (this.stopping()) return;
    const c = this.clusters[f.cluster];
    switch (f.kind) {
      case 'kill':
        if (on) {
          await c.kill();
          this.view.event(`kill ${f.cluster}`, `kill ${f.cluster}: its EPP, pool metrics and ${c.pods.length} model servers are down`);
        } else {
          await c.start();
          this.view.event(`revive ${f.cluster}`, `revive ${f.cluster}: EPP and model servers are back`);
        }
        return;
      case 'kill-epp':
        if (on) {
          await c.killEpp();
          this.view.event(`kill ${f.cluster}'s EPP`, `kill ${f.cluster}'s EPP: its model servers still run, but nothing picks them`);
        } else {
          await c.startEpp();
          this.view.event(`restart ${f.cluster}'s EPP`, `restart ${f.cluster}'s EPP`);
        }
        return;
      case 'saturate':
        c.setSaturated(on);
        this.view.event(
          `${on ? 'saturate' : 'relieve'} ${f.cluster}`,
          on
            ? `saturate ${f.cluster}: heavy background load on its model servers (queue and KV cache over the router's thresholds)`
            : `relieve ${f.cluster}: background load gone`,
        );
        return;
    }
  }

  /** Cancels what is scheduled and not yet begun. */
  cancel(): void {
    for (const t of this.timers) clearTimeout(t);
  }
}

/** The fault as the start-up plan names it, e.g. "killing cluster-b's EPP". */
export function describeFault(f: Fault): string {
  switch (f.kind) {
    case 'kill':
      return `killing ${f.cluster}`;
    case 'kill-epp':
      return `killing ${f.cluster}'s EPP`;
    case 'saturate':
      return `saturating ${f.cluster}`;
  }
}
