/**
 * How the demo is asked to stop: Ctrl-C or SIGTERM, q, --duration, or the
 * router exiting. The first request counts (its reason is what the demo
 * prints); start-up checks between its steps so that a stop during start-up
 * does not wait for the rest of it. A second signal stops at once.
 */

/** Thrown at a start-up checkpoint: the demo was asked to stop before it finished starting. */
export class Cancelled extends Error {}

export class StopRequest {
  private requestedFlag = false;
  private resolveReason: (reason: string) => void = () => undefined;
  /** Resolves with the reason of the first request. */
  readonly reason = new Promise<string>((r) => (this.resolveReason = r));

  get requested(): boolean {
    return this.requestedFlag;
  }

  /** Asks the demo to stop; false if that was already asked (the first reason counts). */
  request(reason: string): boolean {
    if (this.requestedFlag) return false;
    this.requestedFlag = true;
    this.resolveReason(reason);
    return true;
  }

  /** Between start-up steps: throws Cancelled once a stop was requested. */
  checkpoint(): void {
    if (this.requestedFlag) throw new Cancelled();
  }
}

/** A repeat of the first signal within this time is the same Ctrl-C. */
const SAME_SIGNAL_MS = 1500;

/**
 * On SIGINT or SIGTERM, calls `stop` with the signal's name; on a second one,
 * calls `cleanUpNow` and exits with 1 at once.
 */
export function handleStopSignals(stop: (signal: NodeJS.Signals) => void, cleanUpNow: () => void): void {
  let signals = 0;
  let firstSignalAt = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    // tsx (npm run demo) relays a terminal Ctrl-C that the demo also got directly when the
    // demo is slow to acknowledge it: a repeat within 1.5 s is the same Ctrl-C.
    if (signals > 0 && performance.now() - firstSignalAt < SAME_SIGNAL_MS) return;
    if (signals === 0) firstSignalAt = performance.now();
    signals++;
    if (signals > 1) {
      process.stderr.write(`\ndemo: second ${signal}: stopping at once\n`);
      cleanUpNow();
      process.exit(1);
    }
    stop(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
