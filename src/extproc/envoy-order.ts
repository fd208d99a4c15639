/**
 * The order in which Envoy sends an ext_proc stream's messages: per direction,
 * headers once, then body chunks, then trailers, and nothing after the
 * direction ended (end_of_stream on headers or a body chunk, or trailers); the
 * response path only after the request path began. A message out of that order
 * is a protocol violation: the stream ends with INVALID_ARGUMENT naming it
 * (rather than waiting for an answer that can never be right).
 *
 * A stream may begin without request headers (request_header_mode SKIP): it is
 * then not routed, and the request body and the response path keep their order
 * rules except that response headers need not come first.
 */
import type { RequestCase } from '../protocol/codec.js';

const ANY = 1;
const REQUEST_HEADERS = 2;
const REQUEST_ENDED = 4;
const RESPONSE_HEADERS = 8;
const RESPONSE_ANY = 16;
const RESPONSE_ENDED = 32;

export class EnvoyOrder {
  private seen = 0;

  /** Records one of Envoy's messages; returns the violation it is, in words, or undefined. */
  check(phase: Exclude<RequestCase, 'none'>, endOfStream: boolean): string | undefined {
    const s = this.seen;
    switch (phase) {
      case 'request_headers':
        if (s & REQUEST_HEADERS) return 'request_headers sent twice';
        if (s !== 0) return 'request_headers after other messages of the stream';
        this.seen = ANY | REQUEST_HEADERS | (endOfStream ? REQUEST_ENDED : 0);
        return undefined;
      case 'request_body':
      case 'request_trailers':
        if (s & REQUEST_ENDED) return `${phase} after the request ended (end_of_stream or trailers)`;
        if (s & RESPONSE_ANY && !(s & REQUEST_HEADERS)) return `${phase} after the response path began`;
        this.seen = s | ANY | (endOfStream ? REQUEST_ENDED : 0);
        return undefined;
      case 'response_headers':
        if (s === 0) return 'response_headers before any request message';
        if (s & RESPONSE_HEADERS) return 'response_headers sent twice';
        if (s & RESPONSE_ANY) return 'response_headers after a response body or trailers';
        this.seen = s | RESPONSE_HEADERS | RESPONSE_ANY | (endOfStream ? RESPONSE_ENDED : 0);
        return undefined;
      case 'response_body':
      case 'response_trailers':
        if (s === 0) return `${phase} before any request message`;
        if (s & REQUEST_HEADERS && !(s & RESPONSE_HEADERS)) return `${phase} before response_headers`;
        if (s & RESPONSE_ENDED) return `${phase} after the response ended (end_of_stream or trailers)`;
        this.seen = s | RESPONSE_ANY | (endOfStream ? RESPONSE_ENDED : 0);
        return undefined;
    }
  }
}
