/**
 * The committed EPP's silence watch (extProc.eppStallTimeoutMs): fires when the
 * EPP owes Envoy something (an answer, or body bytes to echo) and has sent
 * nothing for that long. Envoy applies no message timeout in
 * FULL_DUPLEX_STREAMED, so nothing else would end such a wait.
 *
 * One timer at a time, re-armed for the remainder when the EPP was heard from
 * meanwhile: per message, only a clock read while a watch runs.
 */
export class SilenceWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastHeard = 0;

  /**
   * `owes`: the EPP owes Envoy something now. `excused`: the EPP is not being
   * read (Envoy's side is backed up), so its silence is not its own.
   */
  constructor(
    private readonly limitMs: number,
    private readonly owes: () => boolean,
    private readonly excused: () => boolean,
    private readonly onSilent: (limitMs: number) => void,
  ) {}

  /** Starts a watch if the EPP owes something and none runs (0 ms: never). */
  watch(): void {
    if (this.timer !== undefined || this.limitMs <= 0 || !this.owes()) return;
    this.lastHeard = performance.now();
    this.timer = setTimeout(this.check, this.limitMs);
  }

  /** The EPP sent something, or may send again (Envoy drained). */
  heard(): void {
    if (this.timer !== undefined) this.lastHeard = performance.now();
  }

  stop(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly check = (): void => {
    this.timer = undefined;
    if (!this.owes()) return;
    const now = performance.now();
    if (this.excused()) this.lastHeard = now;
    const quiet = now - this.lastHeard;
    if (quiet < this.limitMs) {
      this.timer = setTimeout(this.check, this.limitMs - quiet);
      return;
    }
    this.onSilent(this.limitMs);
  };
}
