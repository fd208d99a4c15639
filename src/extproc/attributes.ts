/**
 * RequestAttributes (what route matching reads) over Envoy's request headers,
 * without copying them: pseudo-headers are found in one pass, other headers
 * are looked up on demand.
 */
import { headerText, type HeaderValue } from '../protocol/codec.js';
import type { RequestAttributes } from '../snapshot/types.js';

export function requestAttributes(headers: readonly HeaderValue[]): RequestAttributes {
  let authority = '';
  let path = '';
  let method = '';
  for (const h of headers) {
    if (h.key.charCodeAt(0) !== 58 /* ':' */) continue;
    if (h.key === ':authority') authority = headerText(h);
    else if (h.key === ':path') path = headerText(h);
    else if (h.key === ':method') method = headerText(h);
  }
  // HTTP/1.1 requests reach Envoy's filters with :authority set from Host; fall back anyway.
  if (authority === '') authority = find(headers, 'host') ?? '';
  return { authority, path, method, header: (name) => find(headers, name) };
}

/** First value of a header; `name` is lower case (HTTP/2 keys, as Envoy sends them, are too). */
function find(headers: readonly HeaderValue[], name: string): string | undefined {
  for (const h of headers) {
    if (h.key === name) return headerText(h);
  }
  for (const h of headers) {
    if (h.key.length === name.length && h.key.toLowerCase() === name) return headerText(h);
  }
  return undefined;
}
