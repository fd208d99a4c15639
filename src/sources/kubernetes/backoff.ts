/** Reconnect pacing: exponential backoff with full jitter, and a token-bucket rate limiter. */

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** Delay before the next retry: a random value in [cap/2, cap], cap = min(max, initial * 2^attempt). */
  next(): number {
    const cap = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(cap / 2 + (this.random() * cap) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

/** Client-side QPS limit (like client-go's qps/burst). `undefined` qps = unlimited. */
export class TokenBucket {
  private tokens: number;
  private last = Date.now();

  constructor(
    private readonly qps: number | undefined,
    private readonly burst: number = Math.max(1, Math.ceil(qps ?? 1)),
  ) {
    this.tokens = this.burst;
  }

  async take(): Promise<void> {
    const qps = this.qps;
    if (qps === undefined) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / qps) * 1000)));
    }
  }
}
