/**
 * Runs an async probe every `intervalMs`, one at a time, on unref'd timers
 * (probing never keeps the process alive and never runs on the request path).
 * The first run starts right away. A run that overruns the interval delays the
 * next one instead of overlapping it; each probe enforces its own timeout.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = true;

  constructor(
    private readonly intervalMs: number,
    private readonly run: () => Promise<void>,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  get active(): boolean {
    return !this.stopped;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (this.stopped || this.running) return;
    this.running = true;
    const started = Date.now();
    try {
      await this.run();
    } catch {
      // A probe reports its own failures; an escaped error must not stop the loop.
    } finally {
      this.running = false;
    }
    this.schedule(Math.max(0, this.intervalMs - (Date.now() - started)));
  }
}
