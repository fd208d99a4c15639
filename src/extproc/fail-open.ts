/**
 * Where a FailOpen pool's requests go when every EPP attempt failed, best
 * first:
 * 1. the pool's parent Gateway, when the candidate knows one (a remote pool in
 *    Parent mode, or a remote pool whose parent resolved in Endpoint mode);
 * 2. an endpoint the pool's own EPP returned recently: a small per-pool cache
 *    (the last {@link CACHE_SIZE} distinct endpoints, each usable for `ttlMs`
 *    after it was last returned), filled from EPP headers responses of FailOpen
 *    pools only (so other pools pay nothing), and only with destinations that
 *    passed the member's answer rules (config/answer-rules.ts);
 * 3. endpoints listed statically for the pool (config `clusters[].failOpen.endpoints`).
 * None known: undefined (the caller answers 503).
 */
import { DEFAULT_EXT_PROC } from '../config/defaults.js';
import type { RouterConfig } from '../config/schema.js';
import type { RandomSource } from '../picker/types.js';
import { primaryEndpoint } from '../protocol/responses.js';
import type { Candidate } from '../snapshot/types.js';

export const CACHE_SIZE = 16;

export interface FailOpenChoice {
  /** ip:port for x-gateway-destination-endpoint. */
  readonly address: string;
  readonly source: 'parent' | 'cache' | 'static';
}

export interface FailOpenOptions {
  /** Static endpoints by candidate id ("cluster/namespace/pool"). */
  readonly endpoints?: ReadonlyMap<string, readonly string[]>;
  /** How long a remembered endpoint stays usable (0: the cache is off; absent: the schema's `extProc.failOpenCacheTtlMs`). */
  readonly ttlMs?: number;
  readonly now?: () => number;
}

/** Static fail-open endpoints of the config, by candidate id. */
export function staticFailOpenEndpoints(config: Pick<RouterConfig, 'clusters'>): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  for (const c of config.clusters) {
    for (const e of c.failOpen?.endpoints ?? []) out.set(`${c.name}/${e.namespace}/${e.pool}`, e.endpoints);
  }
  return out;
}

export class FailOpenEndpoints {
  /** Candidate id -> endpoint -> when its EPP last returned it (insertion order = age). */
  private readonly recent = new Map<string, Map<string, number>>();
  private readonly statics: ReadonlyMap<string, readonly string[]>;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: FailOpenOptions = {}) {
    this.statics = options.endpoints ?? new Map();
    this.ttlMs = options.ttlMs ?? DEFAULT_EXT_PROC.failOpenCacheTtlMs;
    this.now = options.now ?? Date.now;
  }

  /** Records the endpoints an EPP of `candidateId` returned (a header value: ip:port or a list). */
  remember(candidateId: string, destination: string | undefined): void {
    if (destination === undefined || this.ttlMs <= 0) return;
    let entries = this.recent.get(candidateId);
    if (entries === undefined) {
      entries = new Map();
      this.recent.set(candidateId, entries);
    }
    const now = this.now();
    const list = primaryEndpoint(destination) === undefined ? [destination.trim()] : destination.split(',');
    for (const raw of list) {
      const ep = raw.trim();
      if (ep === '') continue;
      entries.delete(ep);
      entries.set(ep, now);
      if (entries.size > CACHE_SIZE) entries.delete(entries.keys().next().value!);
    }
  }

  /** The fail-open destination for `candidate`, or undefined when none is known. */
  choose(candidate: Candidate, random: RandomSource): FailOpenChoice | undefined {
    if (candidate.parent !== undefined) return { address: candidate.parent.address, source: 'parent' };
    const fresh = this.fresh(candidate.id);
    if (fresh.length > 0) return { address: pickOne(fresh, random), source: 'cache' };
    const listed = this.statics.get(candidate.id);
    if (listed !== undefined && listed.length > 0) return { address: pickOne(listed, random), source: 'static' };
    return undefined;
  }

  /** Endpoints remembered for `candidateId` and not expired (expired ones are dropped). */
  fresh(candidateId: string): string[] {
    const entries = this.recent.get(candidateId);
    if (entries === undefined) return [];
    const cutoff = this.now() - this.ttlMs;
    const out: string[] = [];
    for (const [ep, at] of entries) {
      if (at < cutoff) entries.delete(ep);
      else out.push(ep);
    }
    if (entries.size === 0) this.recent.delete(candidateId);
    return out;
  }
}

function pickOne(list: readonly string[], random: RandomSource): string {
  return list[Math.min(list.length - 1, Math.floor(random() * list.length))]!;
}
