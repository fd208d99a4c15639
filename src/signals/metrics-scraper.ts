/**
 * Scrapes one EPP's Prometheus endpoint and keeps the pool series selected by
 * label `name` = pool name. One undici Pool (keep-alive, one connection) per
 * endpoint, so a black-holed endpoint queues nothing in front of the others.
 * Bounded in time (connect/headers/body timeouts and an overall abort) and in
 * size (maxBytes); a bad answer is a failed scrape that keeps the last values,
 * which then age into "unknown" after 3 intervals.
 */
import { readFile as readFileAsync, stat } from 'node:fs/promises';
import { Pool } from 'undici';
import { Periodic } from './periodic.js';
import { parsePromTextAsync } from './prom-text.js';
import type { Clock } from './types.js';

export interface MetricNames {
  readonly readyPods: readonly string[];
  readonly queueSize: readonly string[];
  readonly kvCache: readonly string[];
  readonly runningRequests: readonly string[];
}

export interface ScrapeSettings {
  /** scheme://host:port */
  readonly origin: string;
  readonly path: string;
  readonly bearerTokenFile?: string;
  readonly tls: { readonly caFile?: string; readonly insecureSkipVerify: boolean; readonly serverName?: string };
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly names: MetricNames;
}

export interface PoolMetrics {
  readonly readyPods?: number;
  readonly queueSize?: number;
  readonly kvCache?: number;
  readonly runningRequests?: number;
}

export interface ScrapeState {
  /** Clock time of the last successful scrape. */
  readonly lastSuccessAt?: number;
  /** Pool name -> metrics, from the last successful scrape. */
  readonly pools: ReadonlyMap<string, PoolMetrics>;
  readonly consecutiveFailures: number;
  readonly lastError?: string;
}

export type ScrapeResult = { readonly ok: true; readonly at: number } | { readonly ok: false; readonly reason: string; readonly message: string; readonly at: number };

const SIGNALS = ['readyPods', 'queueSize', 'kvCache', 'runningRequests'] as const;

class ScrapeError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Picks each pool's signals from parsed samples: per signal, the first configured name with a series for the pool. */
export function selectPoolMetrics(
  samples: readonly { name: string; labels: Readonly<Record<string, string>>; value: number }[],
  names: MetricNames,
): Map<string, PoolMetrics> {
  const byMetric = new Map<string, Map<string, number>>();
  for (const s of samples) {
    const pool = s.labels['name'];
    if (pool === undefined) continue;
    let m = byMetric.get(s.name);
    if (!m) byMetric.set(s.name, (m = new Map()));
    if (!m.has(pool)) m.set(pool, s.value);
  }
  const pools = new Set<string>();
  for (const m of byMetric.values()) for (const p of m.keys()) pools.add(p);
  const out = new Map<string, PoolMetrics>();
  for (const pool of pools) {
    const pm: Record<string, number> = {};
    for (const signal of SIGNALS) {
      for (const metric of names[signal]) {
        const v = byMetric.get(metric)?.get(pool);
        if (v === undefined) continue;
        // NaN, infinities and negative values carry no usable load information.
        if (Number.isFinite(v) && v >= 0) pm[signal] = v;
        break;
      }
    }
    out.set(pool, pm);
  }
  return out;
}

export class MetricsScraper {
  private readonly periodic: Periodic;
  private pool: Pool | undefined;
  private token: { key: string; value: string } | undefined;
  private current: ScrapeState = { pools: new Map(), consecutiveFailures: 0 };
  private readonly wanted: ReadonlySet<string>;

  constructor(
    readonly settings: ScrapeSettings,
    private readonly deps: { readonly clock: Clock; readonly onResult?: (r: ScrapeResult, s: ScrapeState) => void },
  ) {
    const n = settings.names;
    this.wanted = new Set([...n.readyPods, ...n.queueSize, ...n.kvCache, ...n.runningRequests]);
    this.periodic = new Periodic(settings.intervalMs, async () => {
      const r = await this.scrapeOnce();
      this.deps.onResult?.(r, this.current);
    });
  }

  start(): void {
    this.periodic.start();
  }

  stop(): void {
    this.periodic.stop();
    const p = this.pool;
    this.pool = undefined;
    if (p) void p.destroy().catch(() => {});
  }

  state(): ScrapeState {
    return this.current;
  }

  /** One scrape; never rejects. Updates state(). */
  async scrapeOnce(): Promise<ScrapeResult> {
    try {
      const body = await this.fetch();
      const parsed = await parsePromTextAsync(body, { keep: (name) => this.wanted.has(name), maxBytes: this.settings.maxBytes });
      if (!parsed.ok) throw new ScrapeError('malformed', `${this.settings.origin}${this.settings.path} line ${parsed.line}: ${parsed.message}`);
      const at = this.deps.clock.now();
      this.current = { lastSuccessAt: at, pools: selectPoolMetrics(parsed.samples, this.settings.names), consecutiveFailures: 0 };
      return { ok: true, at };
    } catch (err) {
      const e = err instanceof ScrapeError ? err : classify(err);
      const at = this.deps.clock.now();
      this.current = { ...this.current, consecutiveFailures: this.current.consecutiveFailures + 1, lastError: `${e.reason}: ${e.message}` };
      return { ok: false, reason: e.reason, message: e.message, at };
    }
  }

  private async fetch(): Promise<Buffer> {
    const { timeoutMs, maxBytes, path } = this.settings;
    const headers: Record<string, string> = {
      accept: 'text/plain;version=0.0.4;q=1,*/*;q=0.1',
      'accept-encoding': 'identity',
    };
    const token = await this.bearerToken();
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    const pool = await this.ensurePool();
    const signal = AbortSignal.timeout(timeoutMs);
    const res = await pool.request({ method: 'GET', path, headers, signal });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      await res.body.dump().catch(() => {});
      if (res.statusCode === 401 || res.statusCode === 403) this.token = undefined; // re-read next time
      throw new ScrapeError(`http-${res.statusCode}`, `HTTP ${res.statusCode}`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      res.body.destroy();
      throw new ScrapeError('too-large', `content-length ${declared} > ${maxBytes}`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      total += b.length;
      if (total > maxBytes) {
        res.body.destroy();
        throw new ScrapeError('too-large', `body larger than ${maxBytes} bytes`);
      }
      chunks.push(b);
    }
    return Buffer.concat(chunks, total);
  }

  /** The token file's content, re-read whenever the file changes (rotation) or after a 401/403. */
  private async bearerToken(): Promise<string | undefined> {
    const file = this.settings.bearerTokenFile;
    if (file === undefined) return undefined;
    let key: string;
    try {
      const st = await stat(file);
      key = `${st.ino}:${st.size}:${st.mtimeMs}`;
      if (this.token?.key === key) return this.token.value;
      const value = (await readFileAsync(file, 'utf8')).trim();
      this.token = { key, value };
      return value;
    } catch (err) {
      throw new ScrapeError('token', `cannot read bearer token file ${file}: ${(err as Error).message}`);
    }
  }

  private async ensurePool(): Promise<Pool> {
    if (this.pool) return this.pool;
    const { tls, timeoutMs, origin } = this.settings;
    let ca: Buffer | undefined;
    if (origin.startsWith('https:') && tls.caFile !== undefined) {
      try {
        ca = await readFileAsync(tls.caFile);
      } catch (err) {
        throw new ScrapeError('tls-config', `cannot read caFile ${tls.caFile}: ${(err as Error).message}`);
      }
    }
    this.pool = new Pool(origin, {
      connections: 1,
      pipelining: 1,
      keepAliveTimeout: Math.max(this.settings.intervalMs * 2, 10_000),
      keepAliveMaxTimeout: Math.max(this.settings.intervalMs * 4, 60_000),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connect: {
        timeout: timeoutMs,
        ...(ca ? { ca } : {}),
        rejectUnauthorized: ca ? true : !tls.insecureSkipVerify,
        ...(tls.serverName ? { servername: tls.serverName } : {}),
      },
    });
    return this.pool;
  }
}

/** Maps undici / abort errors to a small reason vocabulary. */
function classify(err: unknown): ScrapeError {
  const e = err as { name?: string; code?: string; message?: string };
  const message = e?.message ?? String(err);
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return new ScrapeError('timeout', message);
  switch (e?.code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
    case 'UND_ERR_ABORTED':
      return new ScrapeError('timeout', message);
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return new ScrapeError('connect', message);
    default:
      return e?.code?.startsWith('ERR_TLS') || e?.code?.includes('CERT') ? new ScrapeError('tls', message) : new ScrapeError('error', message);
  }
}
