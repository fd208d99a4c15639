/**
 * Slots: at most `size` jobs run at once; the others wait their turn in the
 * order they came. The fleet uses two: one for its members' starts, so a hub
 * naming 50 members does not open 150 lists in the same instant (each member's
 * first lists wait for a free slot, and the next member starts as soon as one's
 * first list ends, synced or not), and one for credential plugin runs across
 * all members.
 */
export class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`slots: size must be a positive integer, got ${size}`);
    this.free = size;
  }

  /** Runs `job` in a slot; the slot is given back however the job ends. */
  async run<T>(job: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await job();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }

  /** Jobs waiting for a slot (for /debug pages and tests). */
  get queued(): number {
    return this.waiting.length;
  }
}
