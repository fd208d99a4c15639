/**
 * Trailing debounce with a ceiling: trigger() (re)arms a delayMs timer, but a
 * continuous burst still fires within maxMs of its first trigger. One call of
 * `fire` per quiet period or per maxMs, however many triggers.
 */
export class Coalescer {
  private timer: NodeJS.Timeout | undefined;
  private firstAt: number | undefined;

  constructor(
    private readonly fire: () => void,
    private readonly delayMs: number,
    private readonly maxMs: number,
  ) {}

  trigger(): void {
    const now = Date.now();
    this.firstAt ??= now;
    if (this.timer) clearTimeout(this.timer);
    const wait = Math.max(0, Math.min(this.delayMs, this.firstAt + this.maxMs - now));
    this.timer = setTimeout(() => this.flush(), wait);
  }

  get pending(): boolean {
    return this.timer !== undefined;
  }

  /** Fires now if anything is pending. */
  flush(): void {
    if (!this.timer) return;
    this.cancel();
    this.fire();
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.firstAt = undefined;
  }
}
