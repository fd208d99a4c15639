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
 *
 * The pages of one paginated list (requests made inside asOneList()) share one
 * bound: what a list holds is bounded, not each of its pages.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** An answer, or the pages of one list together, larger than kubernetes.maxResponseBytes (nothing past the bound was read). */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  /** `pages`: the list's pages read up to the bound (the last one cut), when more than one. */
  constructor(
    readonly maxBytes: number,
    readonly pages = 1,
  ) {
    super(
      pages > 1
        ? `the API server's list answers (${pages} pages together) were larger than kubernetes.maxResponseBytes (${maxBytes} bytes); the rest was not read`
        : `the API server's response was larger than kubernetes.maxResponseBytes (${maxBytes} bytes); the rest was not read`,
    );
  }
}

/** The bytes the answers of one list (or a lone answer) have brought so far. */
export interface ReadTally {
  read: number;
  pages: number;
}

const lists = new AsyncLocalStorage<ReadTally>();

/** Runs `fn`, the page requests of one list: their answers count against one bound together. */
export function asOneList<T>(fn: () => Promise<T>): Promise<T> {
  return lists.run({ read: 0, pages: 0 }, fn);
}

/** The tally of the list being read in this async context, if any (read when a request starts). */
export function currentList(): ReadTally | undefined {
  return lists.getStore();
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

/** Why an answer is refused from its headers alone, if it is (`tally`: what its list read before it). */
export function refuseByHeaders(headers: IncomingHttpHeaders, maxBytes: number, tally: ReadTally = { read: 0, pages: 1 }): Error | undefined {
  const encoding = headerValue(headers['content-encoding'])?.trim();
  if (encoding && encoding.toLowerCase() !== 'identity') return new CompressedResponseError(encoding);
  const length = Number(headerValue(headers['content-length']));
  if (Number.isFinite(length) && tally.read + length > maxBytes) return new ResponseTooLargeError(maxBytes, tally.pages);
  return undefined;
}

class BoundedResponse implements Dispatcher.DispatchHandler {
  private refused = false;
  private readonly tally: ReadTally;

  /** `list`: the tally of the list this answer is a page of (shared with its other pages); `onStatus` sees each answer's status. */
  constructor(
    private readonly inner: Dispatcher.DispatchHandler,
    private readonly maxBytes: number,
    list: ReadTally | undefined,
    private readonly onStatus?: (statusCode: number) => void,
  ) {
    this.tally = list ?? { read: 0, pages: 0 };
    this.tally.pages++;
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.inner.onRequestStart?.(controller, context);
  }

  onRequestUpgrade(...args: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>): void {
    this.inner.onRequestUpgrade?.(...args);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.onStatus?.(statusCode);
    const refusal = refuseByHeaders(headers, this.maxBytes, this.tally);
    if (refusal) return this.refuse(controller, refusal);
    this.inner.onResponseStart?.(controller, statusCode, headers, statusMessage);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.refused) return;
    this.tally.read += chunk.length;
    if (this.tally.read > this.maxBytes) return this.refuse(controller, new ResponseTooLargeError(this.maxBytes, this.tally.pages));
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

/** An interceptor bounding each answer's body to `maxBytes`, or with `list` the pages of that list together; `onStatus` sees each answer's HTTP status. */
export function responseSizeLimit(maxBytes: number, list?: ReadTally, onStatus?: (statusCode: number) => void): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => dispatch(opts, new BoundedResponse(handler, maxBytes, list, onStatus));
}

/** `dispatcher` with every answer bounded to `maxBytes` (its connection settings untouched); `list` and `onStatus` as in responseSizeLimit. */
export function boundResponses(dispatcher: Dispatcher, maxBytes: number, list?: ReadTally, onStatus?: (statusCode: number) => void): Dispatcher {
  return dispatcher.compose(responseSizeLimit(maxBytes, list, onStatus));
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
