/**
 * The loop every prober of a target's health runs (EPP health checks, parent
 * probes): one probe every `intervalMs` (Periodic: one at a time, off the request
 * path), each outcome recorded against the Envoy-style thresholds (ProbeTracker)
 * and reported with the target's new state. A prober supplies only its probe and
 * what it holds open between probes.
 */
import { Periodic } from './periodic.js';
import type { ProbeListener, ProbeOutcome, ProbeState } from './probe-types.js';
import { ProbeTracker, type Thresholds } from './threshold.js';

export abstract class ProbeLoop {
  private readonly tracker: ProbeTracker;
  private readonly periodic: Periodic;

  constructor(settings: Thresholds & { readonly intervalMs: number }, onResult: ProbeListener | undefined) {
    this.tracker = new ProbeTracker(settings);
    this.periodic = new Periodic(settings.intervalMs, async () => {
      const outcome = await this.probeOnce();
      this.tracker.record(outcome);
      onResult?.(outcome, this.tracker.state());
    });
  }

  start(): void {
    this.periodic.start();
  }

  /** Stops probing and releases what the prober holds open (a channel, a connection). */
  stop(): void {
    this.periodic.stop();
    this.release();
  }

  state(): ProbeState {
    return this.tracker.state();
  }

  /** One probe; never rejects. */
  abstract probeOnce(): Promise<ProbeOutcome>;

  /** Closes what the probes keep open between runs; the next probe opens it again. */
  protected abstract release(): void;
}
