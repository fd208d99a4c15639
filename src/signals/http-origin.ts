/**
 * GET requests to one origin (http or https) on Node's own HTTP client, one
 * kept-alive connection at a time. The scrapers and parent probes use it
 * rather than undici: undici parses HTTP with a WebAssembly build of llhttp,
 * which cost every router ~15 MiB of RSS for a few requests a second
 * (bench/README.md, "RSS with 1,000 open streams").
 */
import http, { type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

export interface OriginTls {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly rejectUnauthorized: boolean;
  /** SNI and the name the certificate must carry (default: the origin's host). */
  readonly servername?: string;
}

export interface OriginOptions {
  /** Resolves the origin's host name (not used for an IP): a refusal fails the request like any connect error. */
  readonly lookup?: LookupFunction;
}

export class HttpOrigin {
  private readonly agent: http.Agent;
  private readonly secure: boolean;
  private readonly host: string;
  private readonly port: number;
  private readonly lookup: LookupFunction | undefined;

  /** `origin`: scheme://host:port. `idleMs`: how long an unused connection is kept. */
  constructor(origin: string, idleMs: number, tls?: OriginTls, options: OriginOptions = {}) {
    this.lookup = options.lookup;
    const url = new URL(origin);
    this.secure = url.protocol === 'https:';
    this.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = Number(url.port || (this.secure ? 443 : 80));
    const common = { keepAlive: true, maxSockets: 1, maxFreeSockets: 1, timeout: idleMs };
    this.agent = this.secure
      ? new https.Agent({
          ...common,
          rejectUnauthorized: tls?.rejectUnauthorized ?? true,
          ...(tls?.ca ? { ca: tls.ca } : {}),
          ...(tls?.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
          ...(tls?.servername ? { servername: tls.servername } : {}),
        })
      : new http.Agent(common);
  }

  /**
   * Sends GET `path`. Resolves with the response (its body still to be read or
   * dumped by the caller); `signal` bounds connect, headers and body together.
   */
  get(path: string, headers: OutgoingHttpHeaders, signal: AbortSignal): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = (this.secure ? https : http).request({
        agent: this.agent,
        host: this.host,
        port: this.port,
        method: 'GET',
        path,
        headers,
        signal,
        ...(this.lookup ? { lookup: this.lookup } : {}),
      });
      req.once('response', (res: IncomingMessage) => {
        // Errors after the headers reach a reader of the body; none may go unheard.
        res.on('error', () => {});
        resolve(res);
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** Closes the connection (idle or not); later requests open a new one. */
  close(): void {
    this.agent.destroy();
  }
}

/** Reads a response body to its end, up to `limit` bytes, and throws them away. */
export async function dump(res: IncomingMessage, limit: number): Promise<void> {
  let seen = 0;
  for await (const chunk of res) {
    seen += (chunk as Buffer).length;
    if (seen > limit) {
      res.destroy();
      return;
    }
  }
}
