/**
 * The defence of an Envoy-facing HTTP/2 server against one hostile peer: streams
 * the peer resets before the server answered anything on them ("early resets",
 * the HTTP/2 rapid reset attack, CVE-2023-44487) are taken from a token bucket
 * per peer address, shared by its connections (a peer that opens a new
 * connection before the burst is spent gets no fresh one), and streams a
 * connection opened without sending a message are bounded; past either the
 * connection is cut (GOAWAY ENHANCE_YOUR_CALM).
 * What gateways do is never counted: Envoy resets every stream only after it
 * was answered, NGF opens a connection per request and uses each stream at
 * once. Pure: the clock comes in.
 */

export interface PeerLimits {
  /** Early resets one connection may make at once... */
  readonly earlyResetBurst: number;
  /** ...and per second after that. */
  readonly earlyResetsPerSecond: number;
  /** Streams one connection may hold open without having sent a message on them. */
  readonly maxUnusedStreams: number;
  /** After a cut, new connections from the same address are closed at once for this long (0: never). */
  readonly cutCooldownMs: number;
  /** CIDRs of proxies in the pod (and unix-socket peers): early resets not counted, never cooled down. */
  readonly trustedPeers: readonly string[];
}

export type PeerCutReason = 'early_resets' | 'unused_streams';

/** The early resets one peer address may still make: a token bucket (earlyResetBurst, earlyResetsPerSecond). */
export class ResetBucket {
  private tokens: number;
  private refilledAt: number;

  constructor(
    private readonly limits: PeerLimits,
    private readonly now: () => number,
  ) {
    this.tokens = limits.earlyResetBurst;
    this.refilledAt = now();
  }

  /** Takes one early reset; true when the bucket was already empty. */
  take(): boolean {
    this.refill();
    this.tokens -= 1;
    return this.tokens < 0;
  }

  /** True once the bucket has refilled: forgetting it loses nothing. */
  get full(): boolean {
    this.refill();
    return this.tokens >= this.limits.earlyResetBurst;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.limits.earlyResetBurst, this.tokens + ((t - this.refilledAt) / 1000) * this.limits.earlyResetsPerSecond);
    this.refilledAt = t;
  }
}

/** Addresses tracked at once before the full buckets are forgotten (and, if none is, all of them). */
const MAX_TRACKED_ADDRESSES = 4096;

/** The early-reset buckets of the peer addresses that made early resets lately. */
export class AddressBuckets {
  private readonly buckets = new Map<string, ResetBucket>();

  constructor(
    private readonly limits: PeerLimits,
    private readonly now: () => number,
  ) {}

  of(address: string): ResetBucket {
    let b = this.buckets.get(address);
    if (b === undefined) {
      if (this.buckets.size >= MAX_TRACKED_ADDRESSES) this.forget();
      b = new ResetBucket(this.limits, this.now);
      this.buckets.set(address, b);
    }
    return b;
  }

  private forget(): void {
    for (const [a, b] of this.buckets) if (b.full) this.buckets.delete(a);
    if (this.buckets.size >= MAX_TRACKED_ADDRESSES) this.buckets.clear();
  }
}

/** One connection's account; its early resets are taken from `bucket()` (its address's, or its own). */
export class ConnectionGuard {
  private unused = 0;
  private bucket: ResetBucket | undefined;
  earlyResets = 0;

  constructor(
    private readonly limits: PeerLimits,
    private readonly now: () => number,
    private readonly sharedBucket?: () => ResetBucket,
    /** A proxy in the pod: its early resets are its clients' cancellations and are not counted. */
    private readonly trusted = false,
  ) {}

  /** A new stream, no message yet. */
  opened(): PeerCutReason | undefined {
    this.unused++;
    return this.unused > this.limits.maxUnusedStreams ? 'unused_streams' : undefined;
  }

  /** The stream's first message arrived. */
  used(): void {
    this.unused--;
  }

  /** A stream closed; `wasUsed`: it had a message; `early`: the peer reset it before the server sent anything on it. */
  closed(wasUsed: boolean, early: boolean): PeerCutReason | undefined {
    if (!wasUsed) this.unused--;
    if (!early || this.trusted) return undefined;
    this.earlyResets++;
    this.bucket ??= this.sharedBucket?.() ?? new ResetBucket(this.limits, this.now);
    return this.bucket.take() ? 'early_resets' : undefined;
  }
}

/** Addresses whose connection was cut, until when their new connections are refused. */
export class CutCooldown {
  private readonly until = new Map<string, number>();

  constructor(
    private readonly ms: number,
    private readonly now: () => number,
  ) {}

  cut(address: string): void {
    if (this.ms <= 0) return;
    const t = this.now();
    // Forget the expired ones on the way: the map holds only addresses cut in the last `ms`.
    if (this.until.size >= 1024) for (const [a, u] of this.until) if (u <= t) this.until.delete(a);
    this.until.set(address, t + this.ms);
  }

  /** True while `address` is cooling down. */
  refuses(address: string): boolean {
    const u = this.until.get(address);
    if (u === undefined) return false;
    if (u > this.now()) return true;
    this.until.delete(address);
    return false;
  }
}
