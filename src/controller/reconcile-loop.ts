/**
 * ReconcileLoop: when and how often a controller runs its reconcile pass.
 * The import controller has one; the export controller one per member.
 *
 * - One pass at a time. trigger() starts a pass, or during a pass asks for
 *   exactly one more after it (triggers meanwhile coalesce into that one).
 * - reconcile() waits for a running pass, runs one more and returns its result.
 * - A failed pass (it threw, or `failed(result)` says so) is retried after
 *   retryInitialMs, doubling with every further failed pass up to retryMaxMs; a
 *   pass that succeeds resets the delay and cancels a pending retry. A trigger
 *   meanwhile runs a pass at once, as always.
 * - Every resyncMs (when given) a pass is triggered.
 * - stop(): no pass starts any more; waits for a running one at most
 *   stopTimeoutMs (a request stuck on an unreachable API server must not hold
 *   up shutdown).
 *
 * The pass itself decides what to do (leader or not, stale inputs): the loop
 * only schedules it.
 */

export interface ReconcileLoopOptions<R> {
  /** One reconcile pass. */
  readonly pass: () => Promise<R>;
  /** Whether a pass that returned `result` failed and is to be retried (default: never). */
  readonly failed?: (result: R) => boolean;
  /** Delay before the first retry of a failed pass. */
  readonly retryInitialMs: number;
  /** Upper bound of the doubling retry delay. */
  readonly retryMaxMs: number;
  /** Trigger a pass this often (none when undefined). */
  readonly resyncMs?: number;
  /** How long stop() waits for a running pass (default 2000 ms). */
  readonly stopTimeoutMs?: number;
  /** A pass threw (it is retried like a failed pass). */
  readonly onError: (err: unknown) => void;
}

type Outcome<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly err: unknown };

export class ReconcileLoop<R> {
  private running: Promise<R> | undefined;
  private again = false;
  private stopped = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs: number;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: ReconcileLoopOptions<R>) {
    this.retryDelayMs = o.retryInitialMs;
  }

  /** Starts the resync timer and runs a first pass. */
  start(): void {
    if (this.stopped || this.resyncTimer) return;
    if (this.o.resyncMs !== undefined) {
      this.resyncTimer = setInterval(() => this.trigger(), this.o.resyncMs);
      this.resyncTimer.unref();
    }
    this.trigger();
  }

  /** Runs a pass now, or once more after the running one. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // A failure is reported through onError and retried; nobody awaits this one.
    this.drain().catch(() => undefined);
  }

  /** Waits for a running pass, then runs one and returns its result (rejects if it threw). */
  async reconcile(): Promise<R> {
    while (this.running) await this.running.catch(() => undefined);
    return this.drain();
  }

  /** Stops the timers; no pass starts any more. Waits for a running pass at most stopTimeoutMs. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.resyncTimer);
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (!this.running) return;
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise((r) => (timer = setTimeout(r, this.o.stopTimeoutMs ?? 2000)));
    await Promise.race([this.running.catch(() => undefined), bound]);
    clearTimeout(timer);
  }

  /** Runs passes until no trigger arrived during the last one; settles with the last. */
  private drain(): Promise<R> {
    const run = (async () => {
      let last: Outcome<R>;
      do {
        this.again = false;
        last = await this.once();
      } while (this.again && !this.stopped);
      if (!last.ok) throw last.err;
      return last.value;
    })();
    this.running = run;
    return run.finally(() => {
      if (this.running === run) this.running = undefined;
    });
  }

  private async once(): Promise<Outcome<R>> {
    let outcome: Outcome<R>;
    try {
      outcome = { ok: true, value: await this.o.pass() };
    } catch (err) {
      this.o.onError(err);
      outcome = { ok: false, err };
    }
    if (outcome.ok && !(this.o.failed?.(outcome.value) ?? false)) this.succeeded();
    else this.scheduleRetry();
    return outcome;
  }

  private succeeded(): void {
    this.retryDelayMs = this.o.retryInitialMs;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.stopped) return;
    const delay = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.o.retryMaxMs, delay * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.trigger();
    }, delay);
  }
}
