/**
 * The upstream side of the front door, as Envoy's router filter and the
 * ORIGINAL_DST cluster of envoy/envoy.yaml do it: the destination is exactly
 * one ip:port taken from x-gateway-destination-endpoint (anything else is a
 * 503), and the request goes there over HTTP/1.1 (undici).
 */
import { Readable } from 'node:stream';
import { request as undiciRequest, type Agent, type Dispatcher } from 'undici';
import { headerOf, toHeaderObject, upstreamResponseHeaders, type HeaderList } from './envoy-headers.js';

const IP_PORT = /^(\d{1,3}\.){3}\d{1,3}:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/;

/**
 * The host ORIGINAL_DST (use_http_header) routes to for this
 * x-gateway-destination-endpoint value: exactly one ip:port. Anything else
 * (none, a list, a name) leaves it without a host: Envoy's 503 text.
 */
export function originalDstHost(header: string | undefined): { host: string } | { noHost: string } {
  if (header === undefined) return { noHost: 'no healthy upstream (no x-gateway-destination-endpoint)' };
  if (!IP_PORT.test(header)) return { noHost: `no healthy upstream (original_dst_host_invalid: "${header}")` };
  return { host: header };
}

export interface UpstreamRequest {
  /** ip:port, from originalDstHost. */
  readonly destination: string;
  readonly method: string;
  /** The request headers after ext_proc, pseudo-headers included. */
  readonly headers: HeaderList;
  /** The client's path, used if the processor removed :path. */
  readonly clientPath: string;
  /** The request body (what the processor returned), or null for none. */
  readonly body: AsyncIterable<Buffer> | null;
  readonly signal: AbortSignal;
  readonly agent: Agent;
}

export interface UpstreamResponse {
  /** :status first, hop-by-hop headers removed. */
  readonly headers: HeaderList;
  /** The response has no body: it is complete with its headers. */
  readonly noBody: boolean;
  readonly body: Dispatcher.ResponseData['body'];
}

/** Sends the request; rejects with Envoy's 503 text when the upstream cannot be reached. */
export async function sendUpstream(r: UpstreamRequest): Promise<UpstreamResponse> {
  const headers = toHeaderObject(r.headers, false);
  headers.host = headerOf(r.headers, ':authority') ?? r.destination;
  const path = headerOf(r.headers, ':path') ?? r.clientPath;
  let up: Dispatcher.ResponseData;
  try {
    up = await undiciRequest(`http://${r.destination}${path}`, {
      method: r.method as Dispatcher.HttpMethod,
      headers,
      body: r.body ? Readable.from(r.body, { objectMode: false }) : null,
      signal: r.signal,
      dispatcher: r.agent,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new Error(`upstream connect error or disconnect/reset before headers. reset reason: ${code} (${r.destination})`);
  }
  const list = upstreamResponseHeaders(up.statusCode, up.headers);
  const noBody = r.method === 'HEAD' || up.statusCode === 204 || up.statusCode === 304 || headerOf(list, 'content-length') === '0';
  return { headers: list, noBody, body: up.body };
}
