/**
 * Headers the way the front door (Envoy stand-in) holds them: an ordered list
 * of [lower-case name, value] pairs with pseudo-headers (:authority, :path,
 * :method, :scheme, :status) included, as Envoy hands them to ext_proc. Also
 * Envoy's rules for applying a processor's HeaderMutation, and the
 * conversions to and from Node's and undici's header objects.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { HeaderMutation } from '../src/protocol/codec.js';
import { DESTINATION_ENDPOINT_HEADER } from '../src/protocol/constants.js';
import { HOST } from './layout.js';

export type HeaderList = [string, string][];

/** Hop-by-hop headers Envoy's HTTP connection manager removes. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);
/** Request headers Envoy's default mutation rules never let a processor set or remove. */
const PROTECTED_REQUEST_HEADERS = new Set([':authority', 'host', ':method', ':scheme']);

/** The client's request headers as Envoy hands them to ext_proc. */
export function clientRequestHeaders(req: IncomingMessage, method: string, path: string): HeaderList {
  const out: HeaderList = [
    [':authority', req.headers.host ?? HOST],
    [':path', path],
    [':method', method],
    [':scheme', 'http'],
  ];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!.toLowerCase();
    // host became :authority; hop-by-hop headers are the connection's; the destination header is the router's to set
    // (envoy.yaml's header_mutation filter strips a client-sent one before ext_proc).
    if (key === 'host' || HOP_BY_HOP.has(key) || key === DESTINATION_ENDPOINT_HEADER) continue;
    out.push([key, raw[i + 1]!]);
  }
  out.push(['x-forwarded-proto', 'http'], ['x-request-id', randomUUID()]);
  return out;
}

/** An upstream response's headers, :status first, without hop-by-hop headers. */
export function upstreamResponseHeaders(status: number, headers: IncomingHttpHeaders): HeaderList {
  const out: HeaderList = [[':status', String(status)]];
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k)) continue;
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, one]);
  }
  return out;
}

/** The first value of `name`, if any. */
export function headerOf(list: HeaderList, name: string): string | undefined {
  return list.find(([k]) => k === name)?.[1];
}

/** The list as ext_proc HeaderValues: Envoy sends values in raw_value only. */
export function toHeaderValues(list: HeaderList): { key: string; raw_value: Buffer }[] {
  return list.map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'utf8') }));
}

/**
 * The list as a Node/undici header object, without pseudo-headers and without
 * `content-length` unless `keepContentLength`: a single value as a string, repeats as an array.
 */
export function toHeaderObject(list: HeaderList, keepContentLength: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of list) {
    if (k.startsWith(':') || (k === 'content-length' && !keepContentLength)) continue;
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/**
 * Applies a HeaderMutation the way Envoy does: only raw_value is read; append
 * unset/false overwrites; x-envoy-* is never touched, nor (on a request)
 * :authority, host, :method and :scheme, nor (otherwise) any pseudo-header.
 */
export function applyMutation(list: HeaderList, mutation: HeaderMutation | null | undefined, request: boolean): void {
  if (!mutation) return;
  const allowed = (key: string): boolean =>
    !key.startsWith('x-envoy-') && !(request ? PROTECTED_REQUEST_HEADERS.has(key) : key.startsWith(':'));
  for (const option of mutation.set_headers ?? []) {
    const h = option.header;
    if (!h) continue;
    const key = h.key.toLowerCase();
    if (!allowed(key)) continue;
    const value = Buffer.from(h.raw_value ?? Buffer.alloc(0)).toString('utf8');
    if (option.append?.value !== true) removeHeader(list, key);
    list.push([key, value]);
  }
  for (const key of mutation.remove_headers ?? []) {
    const k = key.toLowerCase();
    if (allowed(k)) removeHeader(list, k);
  }
}

function removeHeader(list: HeaderList, key: string): void {
  for (let i = list.length - 1; i >= 0; i--) if (list[i]![0] === key) list.splice(i, 1);
}
