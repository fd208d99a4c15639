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

/** A view of a backing store this small is kept as is, whatever its share of it. */
const SMALL_STORE_BYTES = 8 * 1024;

/**
 * `view` as kept past the moment it arrived (a replay, an echo not sent yet).
 * The http2 transport hands Envoy's messages on as views of the socket read
 * they came in (up to 64 KiB, shared with other streams' frames), and small
 * buffers come from Node's shared pool (64 KiB slabs on Node 26). A view is
 * copied into a store of its own size when its backing store is over four
 * times its size and over 8 KiB, so a held message keeps at most
 * max(4 x its size, 8 KiB) alive. Otherwise it is kept without a copy.
 */
export function retain(view: Buffer): Buffer {
  const backing = view.buffer.byteLength;
  if (backing <= SMALL_STORE_BYTES || backing <= 4 * view.length) return view;
  const own = Buffer.allocUnsafeSlow(view.length);
  view.copy(own);
  return own;
}
