// What a gateway's router filter does with a request once its cluster picked a host: a real
// HTTP/1.1 request to that ip:port (plain, or TLS with SNI and the certificate checked against
// the request's host, as Envoy's auto_sni / auto_san_validation do), and the response read
// whole. For stand-ins whose upstream is a real socket (a relay, a model server, a gateway).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { ForwardedRequest, UpstreamResponse } from './standin-types.js';
import type { HeaderList } from './headers.js';

/** Headers that belong to one hop: a proxy never forwards them. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);

export interface UpstreamTls {
  /** CA the upstream's certificate must chain to. */
  readonly ca: Buffer;
}

/** Sends `req` to `address` ("ip:port"); :authority becomes Host; resolves with the whole response. */
export function forwardHttp(address: string, req: ForwardedRequest, tls?: UpstreamTls): Promise<UpstreamResponse> {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(i + 1));
  const pseudo = (name: string): string | undefined => req.headers.find(([k]) => k === name)?.[1];
  const authority = pseudo(':authority') ?? address;
  const headers: Record<string, string[]> = {};
  for (const [k, v] of req.headers) {
    if (k.startsWith(':') || HOP_BY_HOP.has(k) || k === 'host' || k === 'content-length') continue;
    (headers[k] ??= []).push(v);
  }
  const options = {
    host,
    port,
    method: pseudo(':method') ?? 'POST',
    path: pseudo(':path') ?? '/',
    headers: { ...headers, host: authority, 'content-length': String(req.body.length) },
    agent: false as const,
  };
  const serverName = authority.replace(/:\d+$/, '');
  return new Promise((resolve, reject) => {
    const done = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out: HeaderList = [];
        for (let j = 0; j + 1 < res.rawHeaders.length; j += 2) {
          const k = res.rawHeaders[j]!.toLowerCase();
          if (!HOP_BY_HOP.has(k)) out.push([k, res.rawHeaders[j + 1]!]);
        }
        resolve({ status: res.statusCode ?? 502, headers: out, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    };
    const r = tls ? httpsRequest({ ...options, ca: tls.ca, servername: serverName }, done) : httpRequest(options, done);
    r.on('error', reject);
    r.end(req.body);
  });
}
