/**
 * The size bound on every answer from a member's API server except watches: an
 * undici interceptor composed onto the dispatcher @kubernetes/client-node built
 * for the request, so its TLS settings (CA, client certificate, SNI, skip-verify)
 * and proxy stay as they were. An answer whose Content-Length or received bytes
 * pass the bound is aborted (its connection dropped, the rest never read).
 *
 * The bound counts bytes as received, so requests ask for an uncompressed answer
 * (Accept-Encoding: identity) and an answer compressed anyway is refused: fetch
 * would inflate it past any bound.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** An answer larger than kubernetes.maxResponseBytes (nothing past the bound was read). */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(readonly maxBytes: number) {
    super(`the API server's response was larger than kubernetes.maxResponseBytes (${maxBytes} bytes); the rest was not read`);
  }
}

/** An answer compressed although the request asked for none: its inflated size could not be bounded. */
export class CompressedResponseError extends Error {
  override readonly name = 'CompressedResponseError';
  constructor(readonly encoding: string) {
    super(`the API server compressed its response (Content-Encoding: ${encoding}) though it was asked not to; refused, as its size could not be bounded`);
  }
}

/** The request header that asks the API server for an uncompressed answer. */
export const IDENTITY_ENCODING = { name: 'Accept-Encoding', value: 'identity' } as const;

const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(', ') : v);

/** Why an answer is refused from its headers alone, if it is. */
export function refuseByHeaders(headers: IncomingHttpHeaders, maxBytes: number): Error | undefined {
  const encoding = headerValue(headers['content-encoding'])?.trim();
  if (encoding && encoding.toLowerCase() !== 'identity') return new CompressedResponseError(encoding);
  const length = Number(headerValue(headers['content-length']));
  if (Number.isFinite(length) && length > maxBytes) return new ResponseTooLargeError(maxBytes);
  return undefined;
}

class BoundedResponse implements Dispatcher.DispatchHandler {
  private received = 0;
  private refused = false;

  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly maxBytes: number,
  ) {}

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    const refusal = refuseByHeaders(headers, this.maxBytes);
    if (refusal) return this.refuse(controller, refusal);
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.refused) return;
    this.received += chunk.length;
    if (this.received > this.maxBytes) return this.refuse(controller, new ResponseTooLargeError(this.maxBytes));
    this.inner.onResponseData?.(controller, chunk);
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    if (!this.refused) this.inner.onResponseEnd?.(controller, trailers);
  }

  onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.inner.onResponseError?.(controller, error);
  }

  /** Aborts the request (undici drops the connection); the inner handler gets the error through onResponseError. */
  private refuse(controller: Dispatcher.DispatchController, err: Error): void {
    this.refused = true;
    controller.abort(err);
  }
}

/** An interceptor bounding each answer's body to `maxBytes`. */
export function responseSizeLimit(maxBytes: number): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new BoundedResponse(handler, maxBytes));
}

/** `dispatcher` with every answer bounded to `maxBytes` (its connection settings untouched). */
export function boundResponses(dispatcher: Dispatcher, maxBytes: number): Dispatcher {
  return dispatcher.compose(responseSizeLimit(maxBytes));
}

/** The error behind a failed request, if it is one of ours (fetch wraps it: "fetch failed" / "terminated", cause ...). */
export function responseRefusal(err: unknown): ResponseTooLargeError | CompressedResponseError | undefined {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    if (e instanceof ResponseTooLargeError || e instanceof CompressedResponseError) return e;
    e = e.cause;
  }
  return undefined;
}
