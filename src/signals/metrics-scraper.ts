/**
 * Scrapes one EPP's Prometheus endpoint and keeps the pool series selected by
 * label `name` = pool name. One kept-alive connection (http-origin.ts) per
 * endpoint, so a black-holed endpoint queues nothing in front of the others.
 * Bounded in time (connect/headers/body timeouts and an overall abort) and in
 * size (maxBytes); a bad answer is a failed scrape that keeps the last values,
 * which then age into "unknown" after 3 intervals.
 */
import { dump, HttpOrigin } from './http-origin.js';
import { BearerToken, type BearerTokenSpec } from '../credentials/bearer-token.js';
import { CredentialFiles } from '../credentials/credential-files.js';
import type { EppAnswersConfig } from '../config/schema.js';
import { destinationsLookup } from '../transport/guarded-lookup.js';
import type { LookupFunction } from 'node:net';
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
  /** The member the endpoint belongs to (for messages). */
  readonly cluster?: string;
  /**
   * The member's destination rules, when the origin's host is a name read from its objects:
   * the addresses it resolves to are held to them before the router connects (and sends a token).
   */
  readonly destinations?: EppAnswersConfig['destinations'];
  /** Where the bearer token comes from (bearerTokenFile, or the member's own Kubernetes credentials). */
  readonly bearerToken?: BearerTokenSpec;
  /** Send the token over plain http too; otherwise it is sent over https only. */
  readonly allowTokenOverPlainHttp?: boolean;
  readonly tls: {
    readonly caFile?: string;
    readonly certFile?: string;
    readonly keyFile?: string;
    readonly insecureSkipVerify: boolean;
    readonly serverName?: string;
  };
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
  private conn: { readonly origin: HttpOrigin; generation: number; readonly material: ReadonlyMap<string, Buffer> } | undefined;
  private readonly token: BearerToken | undefined;
  /** The token is withheld: plain http without allowTokenOverPlainHttp. */
  private readonly withheld: boolean;
  private readonly files: CredentialFiles;
  private current: ScrapeState = { pools: new Map(), consecutiveFailures: 0 };
  private readonly wanted: ReadonlySet<string>;
  /** Holds the addresses of a host name from the member's objects to its destination rules. */
  private readonly lookup: LookupFunction | undefined;
  private stopped = false;

  constructor(
    readonly settings: ScrapeSettings,
    private readonly deps: {
      readonly clock: Clock;
      readonly onResult?: (r: ScrapeResult, s: ScrapeState) => void;
      /** CA / certificate / key files, watched for rotation (default: read once). */
      readonly files?: CredentialFiles;
    },
  ) {
    this.files = deps.files ?? new CredentialFiles({ pollIntervalMs: 0 });
    const plain = !settings.origin.startsWith('https:');
    this.withheld = settings.bearerToken !== undefined && plain && settings.allowTokenOverPlainHttp !== true;
    this.token = settings.bearerToken !== undefined && !this.withheld ? new BearerToken(settings.bearerToken) : undefined;
    if (settings.destinations !== undefined) {
      const port = Number(new URL(settings.origin).port || (plain ? 80 : 443));
      this.lookup = destinationsLookup(settings.destinations, settings.cluster ?? 'the member', port);
    }
    const n = settings.names;
    this.wanted = new Set([...n.readyPods, ...n.queueSize, ...n.kvCache, ...n.runningRequests]);
    this.periodic = new Periodic(settings.intervalMs, async () => {
      const r = await this.scrapeOnce();
      if (!this.stopped) this.deps.onResult?.(r, this.current);
    });
  }

  start(): void {
    this.stopped = false;
    this.periodic.start();
  }

  /** Ends scraping: a scrape under way sends nothing more (it may be waiting for its token file) and reports nothing. */
  stop(): void {
    this.stopped = true;
    this.periodic.stop();
    this.dropConnection();
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
    // Stopped while the token was read: no request, and no new connection left open.
    if (this.stopped) throw new ScrapeError('stopped', 'the scraper was stopped');
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    const origin = this.connection();
    const signal = AbortSignal.timeout(timeoutMs);
    const res = await origin.get(path, headers, signal);
    const status = res.statusCode ?? 0;
    if (status < 200 || status >= 300) {
      await dump(res, DUMP_LIMIT).catch(() => {});
      const denied = status === 401 || status === 403;
      if (denied) this.token?.invalidate(); // re-read next time
      throw new ScrapeError(`http-${status}`, `HTTP ${status}${denied && this.withheld ? this.withheldHint() : ''}`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      res.destroy();
      throw new ScrapeError('too-large', `content-length ${declared} > ${maxBytes}`);
    }
    const chunks: Buffer[] = [];
    let total = 0;
    for await (const chunk of res) {
      const b = chunk as Buffer;
      total += b.length;
      if (total > maxBytes) {
        res.destroy();
        throw new ScrapeError('too-large', `body larger than ${maxBytes} bytes`);
      }
      chunks.push(b);
    }
    return Buffer.concat(chunks, total);
  }

  /** Why no token went out although the member has one. */
  private withheldHint(): string {
    const member = this.settings.cluster === undefined ? 'the member' : `cluster "${this.settings.cluster}"`;
    return ` (the bearer token of ${member} is not sent over plain http: set epp.metrics.scheme: https, or epp.metrics.allowTokenOverPlainHttp: true)`;
  }

  private async bearerToken(): Promise<string | undefined> {
    if (this.token === undefined) return undefined;
    try {
      return await this.token.get();
    } catch (err) {
      throw new ScrapeError('token', (err as Error).message);
    }
  }

  /** The connection to the endpoint; rebuilt when a CA / certificate / key file it was built from changed. */
  private connection(): HttpOrigin {
    const current = this.conn;
    const generation = this.files.generation;
    if (current && (current.generation === generation || this.files.unchanged(current.material))) {
      current.generation = generation;
      return current.origin;
    }
    this.dropConnection();
    const { tls, timeoutMs, origin } = this.settings;
    const files = this.files.recorder();
    const material = files.material;
    const read = (field: string, path: string | undefined): Buffer | undefined => {
      if (path === undefined || !origin.startsWith('https:')) return undefined;
      try {
        return files.read(path);
      } catch (err) {
        throw new ScrapeError('tls-config', `cannot read ${field} ${path}: ${(err as Error).message}`);
      }
    };
    const ca = read('caFile', tls.caFile);
    const cert = read('certFile', tls.certFile);
    const key = read('keyFile', tls.keyFile);
    const connection = new HttpOrigin(
      origin,
      Math.max(this.settings.intervalMs * 2, 10_000),
      {
        ...(ca ? { ca } : {}),
        ...(cert && key ? { cert, key } : {}),
        rejectUnauthorized: ca ? true : !tls.insecureSkipVerify,
        ...(tls.serverName ? { servername: tls.serverName } : {}),
      },
      this.lookup === undefined ? {} : { lookup: this.lookup },
    );
    this.conn = { origin: connection, generation, material };
    return connection;
  }

  private dropConnection(): void {
    const p = this.conn;
    this.conn = undefined;
    p?.origin.close();
  }
}

/** What is read of an error response's body before the connection is given up. */
const DUMP_LIMIT = 64 * 1024;

/** Maps Node's HTTP, TLS and abort errors to a small reason vocabulary. */
function classify(err: unknown): ScrapeError {
  const e = err as { name?: string; code?: string; message?: string };
  const message = e?.message ?? String(err);
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return new ScrapeError('timeout', message);
  switch (e?.code) {
    case 'ABORT_ERR':
    case 'ETIMEDOUT':
      return new ScrapeError('timeout', message);
    case 'ECONNREFUSED':
    case 'ECONNRESET':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'ECONNABORTED':
    case 'EPIPE':
    case 'EDESTINATIONREFUSED': // a host name from the member's objects resolved to an address its rules deny
      return new ScrapeError('connect', message);
    default:
      return e?.code?.startsWith('ERR_TLS') || e?.code?.includes('CERT') ? new ScrapeError('tls', message) : new ScrapeError('error', message);
  }
}
