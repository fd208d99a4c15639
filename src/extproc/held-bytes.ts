/**
 * The process-wide count of body bytes streams hold for their EPPs (in
 * FULL_DUPLEX_STREAMED, Envoy's bytes an EPP has not echoed yet: the EPP reads
 * the whole request body before it answers), with a per-stream cap and a
 * budget for all streams together. A stream that would pass either gets a 503
 * instead of growing the heap without bound.
 */
export type HeldBound = 'stream' | 'process';

export class HeldBytes {
  private used = 0;

  constructor(
    readonly perStream: number,
    readonly budget: number,
  ) {}

  /** Bytes held by every stream now. */
  get total(): number {
    return this.used;
  }

  /** One stream's holding moved from `before` to `after` bytes: the bound it passed by growing, if any. */
  change(before: number, after: number): HeldBound | undefined {
    this.used += after - before;
    if (after <= before) return undefined;
    if (after > this.perStream) return 'stream';
    if (this.used > this.budget) return 'process';
    return undefined;
  }

  /** The client's words for a bound. */
  describe(bound: HeldBound): string {
    return bound === 'stream'
      ? `the request held more than extProc.maxHeldBytesPerStream (${this.perStream} bytes) of body its EPP had not echoed`
      : `the router's budget for held body bytes (extProc.heldBytesBudget, ${this.budget} bytes) is used up`;
  }
}
