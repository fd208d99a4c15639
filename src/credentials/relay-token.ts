/**
 * Relay tokens: how a router in the Endpoint Picker role hands a relay the
 * destination it chose, so that the relay forwards only what a router chose.
 *
 * A gateway that sends a request only to its pool's own pods (Istio's
 * override_host, agentgateway's validated override) is answered with a relay
 * pod's address; the real destination travels in a request header the router
 * sets in the same answer. The relay must not be an open proxy, so the header
 * is a token: the destination, its kind, the member cluster it belongs to, an
 * expiry and a nonce, with an HMAC-SHA256 over all of them under a key that
 * the routers and relays share (a Secret). A relay accepts a token once
 * (nonces are remembered until they expire), refuses an expired one, one
 * issued too far in the future (clock skew bound), a forged one and anything
 * that does not parse.
 *
 * The token is not bound to one relay's address on purpose: a gateway whose
 * chosen relay pod has just gone falls back to another pool pod, another relay,
 * which must still serve the request.
 *
 * Format: `v1.<payload>.<mac>`, both base64url; payload is
 * `target \n kind \n cluster \n expiresAtMs \n nonce` (UTF-8). Pure: no I/O;
 * the keys come from the caller (relay-keys.ts reads them from files).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The request header carrying the token from the gateway to the relay (named once, in protocol/constants.ts). */
export { RELAY_TOKEN_HEADER } from '../protocol/constants.js';

export type RelayTargetKind = 'endpoint' | 'parent';

/** What the router chose, as the relay needs it. */
export interface RelayClaim {
  /** `ip:port` (or `[v6]:port`): the remote pod (endpoint) or the remote gateway (parent). */
  readonly target: string;
  readonly kind: RelayTargetKind;
  /** The member cluster the destination belongs to: the relay checks it against that member's rules. */
  readonly cluster: string;
}

/** Signing and verification keys: the first signs, every one verifies (rotation). */
export interface RelayKeys {
  readonly keys: readonly Buffer[];
}

/** The shortest key accepted: HMAC-SHA256 wants at least its output size. */
export const MIN_RELAY_KEY_BYTES = 32;

export type RelayRefusal = 'missing' | 'malformed' | 'forged' | 'expired' | 'not_yet_valid' | 'replayed' | 'overloaded';

export type RelayVerdict =
  | { readonly ok: true; readonly claim: RelayClaim; readonly expiresAtMs: number }
  | { readonly ok: false; readonly reason: RelayRefusal };

const VERSION = 'v1';
const KINDS: ReadonlySet<string> = new Set<RelayTargetKind>(['endpoint', 'parent']);
/** A token longer than this is refused before any decoding (a header can be large). */
const MAX_TOKEN_CHARS = 1024;

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

/**
 * Issues tokens. Nonces are a per-signer random prefix and a counter: unique
 * across signers without a random draw per request.
 */
export class RelaySigner {
  private readonly prefix = randomBytes(9).toString('base64url');
  private counter = 0;

  constructor(
    private readonly keys: () => RelayKeys,
    private readonly ttlMs: number,
  ) {}

  sign(claim: RelayClaim, nowMs: number): string {
    const key = this.keys().keys[0];
    if (key === undefined) throw new Error('no relay key to sign with');
    this.counter = (this.counter + 1) % Number.MAX_SAFE_INTEGER;
    const nonce = `${this.prefix}${this.counter.toString(36)}`;
    const payload = `${claim.target}\n${claim.kind}\n${claim.cluster}\n${nowMs + this.ttlMs}\n${nonce}`;
    return `${VERSION}.${Buffer.from(payload, 'utf8').toString('base64url')}.${mac(key, payload).toString('base64url')}`;
  }
}

export interface RelayVerifierOptions {
  readonly keys: () => RelayKeys;
  /** The longest lifetime a signer gives a token: a later expiry is refused (beyond `maxSkewMs`). */
  readonly ttlMs: number;
  /** Clock difference tolerated between the signing router and this relay. */
  readonly maxSkewMs: number;
  /** Nonces remembered at once; past it tokens are refused ('overloaded') rather than replays risked. */
  readonly maxNonces: number;
}

/**
 * Checks tokens and remembers the nonces of accepted ones until they expire.
 * Nonces are kept in acceptance order; expiries come from signers with one ttl,
 * so the oldest entries expire first and are swept from the front.
 */
export class RelayVerifier {
  private readonly seen = new Map<string, number>();

  constructor(private readonly options: RelayVerifierOptions) {}

  /** Nonces currently remembered. */
  get remembered(): number {
    return this.seen.size;
  }

  verify(token: string | undefined, nowMs: number): RelayVerdict {
    if (token === undefined || token === '') return { ok: false, reason: 'missing' };
    if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'malformed' };
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) return { ok: false, reason: 'malformed' };
    const payload = Buffer.from(parts[1]!, 'base64url').toString('utf8');
    const given = Buffer.from(parts[2]!, 'base64url');
    if (!this.authentic(payload, given)) return { ok: false, reason: 'forged' };
    const fields = payload.split('\n');
    if (fields.length !== 5) return { ok: false, reason: 'malformed' };
    const [target, kind, cluster, exp, nonce] = fields as [string, string, string, string, string];
    const expiresAtMs = Number(exp);
    if (target === '' || cluster === '' || nonce === '' || !KINDS.has(kind) || !Number.isSafeInteger(expiresAtMs)) {
      return { ok: false, reason: 'malformed' };
    }
    const { ttlMs, maxSkewMs, maxNonces } = this.options;
    if (expiresAtMs <= nowMs - maxSkewMs) return { ok: false, reason: 'expired' };
    if (expiresAtMs > nowMs + ttlMs + maxSkewMs) return { ok: false, reason: 'not_yet_valid' };
    this.sweep(nowMs);
    if (this.seen.has(nonce)) return { ok: false, reason: 'replayed' };
    if (this.seen.size >= maxNonces) return { ok: false, reason: 'overloaded' };
    this.seen.set(nonce, expiresAtMs + maxSkewMs);
    return { ok: true, claim: { target, kind: kind as RelayTargetKind, cluster }, expiresAtMs };
  }

  private authentic(payload: string, given: Buffer): boolean {
    let ok = false;
    for (const key of this.options.keys().keys) {
      const expected = mac(key, payload);
      // Every key is tried (no early exit): the time taken says nothing about which key matched.
      if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
    }
    return ok;
  }

  /** Forgets nonces whose tokens can no longer be accepted (a replay of them is refused as expired). */
  private sweep(nowMs: number): void {
    for (const [nonce, until] of this.seen) {
      if (until > nowMs) break;
      this.seen.delete(nonce);
    }
  }
}
