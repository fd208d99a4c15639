/**
 * Pure builders for the ProcessingResponses the router itself sends Envoy
 * (docs/protocol.md §1, §2), and how a destination list names its primary.
 * Every builder returns a freshly encoded Buffer.
 */
import { DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT, LB_METADATA_NAMESPACE } from './constants.js';
import { encodeResponse } from './codec.js';
import type {
  BodyPhase,
  HeaderValueOption,
  HeadersPhase,
  Init,
  RequestPhase,
  TrailersPhase,
} from './messages.js';
import { toStruct, type JsonObject, type JsonValue } from './struct.js';

/**
 * A header set the way Envoy reads it: the value only in raw_value (Envoy
 * ignores `value` in mutations) and append=false (overwrite).
 */
export function headerOption(key: string, value: string): Init<HeaderValueOption> {
  return { header: { key, raw_value: Buffer.from(value, 'utf8') }, append: { value: false } };
}

export interface ImmediateResponseOptions {
  /** HTTP status for the client (Envoy turns anything below 200 into 200). */
  status: number;
  /** Serialised as JSON, with content-type: application/json. Omitted: no body. */
  body?: JsonValue | object;
  /** Goes to Envoy's access log (%RESPONSE_CODE_DETAILS%). */
  details?: string;
  /** Extra response headers (raw_value, overwrite). */
  headers?: Readonly<Record<string, string>>;
}

/** An immediate_response: ends processing and becomes the client's response. */
export function immediateResponse(opts: ImmediateResponseOptions): Buffer {
  const setHeaders: Init<HeaderValueOption>[] = [];
  let body: Buffer | undefined;
  if (opts.body !== undefined) {
    body = Buffer.from(JSON.stringify(opts.body), 'utf8');
    setHeaders.push(headerOption('content-type', 'application/json'));
  }
  for (const [k, v] of Object.entries(opts.headers ?? {})) setHeaders.push(headerOption(k, v));
  return encodeResponse({
    immediate_response: {
      status: { code: opts.status },
      headers: setHeaders.length > 0 ? { set_headers: setHeaders } : null,
      body: body ?? null,
      details: opts.details ?? null,
    },
  });
}

export interface DestinationOptions {
  /** Default true. Envoy honours it only with a header mutation, which this response has. */
  clearRouteCache?: boolean;
  /**
   * dynamic_metadata, keyed by namespace. Default:
   * `{"envoy.lb": {"x-gateway-destination-endpoint": endpoint}}`; null for none.
   */
  dynamicMetadata?: Readonly<Record<string, JsonObject>> | null;
  /** More request headers to set alongside the destination (raw_value, overwrite), e.g. x-mcip-destination-kind. */
  extraHeaders?: Readonly<Record<string, string>>;
}

/**
 * A headers response routing the request to `endpoint` (one `ip:port`, as
 * Envoy's ORIGINAL_DST cluster accepts): sets x-gateway-destination-endpoint
 * in raw_value with append=false, clear_route_cache, and the envoy.lb metadata.
 */
export function destinationHeadersResponse(
  phase: HeadersPhase,
  endpoint: string,
  opts: DestinationOptions = {},
): Buffer {
  const metadata =
    opts.dynamicMetadata === undefined
      ? { [LB_METADATA_NAMESPACE]: { [DESTINATION_ENDPOINT_HEADER]: endpoint } }
      : opts.dynamicMetadata;
  return encodeResponse({
    [phase]: {
      response: {
        header_mutation: {
          set_headers: [
            headerOption(DESTINATION_ENDPOINT_HEADER, endpoint),
            ...Object.entries(opts.extraHeaders ?? {}).map(([k, v]) => headerOption(k, v)),
          ],
        },
        clear_route_cache: opts.clearRouteCache ?? true,
      },
    },
    dynamic_metadata: metadata === null ? null : toStruct(metadata),
  });
}

/** The request headers answer routing to a remote parent Gateway: its address, and x-mcip-destination-kind: parent. */
export function parentHeadersResponse(address: string): Buffer {
  return destinationHeadersResponse('request_headers', address, { extraHeaders: PARENT_KIND_HEADERS });
}

const PARENT_KIND_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [DESTINATION_KIND_HEADER]: DESTINATION_KIND_PARENT });

/** CONTINUE for a headers message. */
export function continueHeaders(phase: HeadersPhase): Buffer {
  return encodeResponse({ [phase]: {} });
}

/** CONTINUE for a body message (BUFFERED, STREAMED; spurious in FULL_DUPLEX_STREAMED). */
export function continueBody(phase: BodyPhase): Buffer {
  return encodeResponse({ [phase]: {} });
}

/** A body response carrying body bytes back to Envoy (the only valid body response in FULL_DUPLEX_STREAMED). */
export function streamedBody(phase: BodyPhase, chunk: Uint8Array, endOfStream: boolean): Buffer {
  return encodeResponse({
    [phase]: { response: { body_mutation: { streamed_response: { body: chunk, end_of_stream: endOfStream } } } },
  });
}

/** CONTINUE for a trailers message. */
export function continueTrailers(phase: TrailersPhase): Buffer {
  return encodeResponse({ [phase]: {} });
}

/** The empty CONTINUE answer of the same type as a request phase (not for FULL_DUPLEX_STREAMED bodies). */
export function continueResponse(phase: RequestPhase): Buffer {
  return encodeResponse({ [phase]: {} });
}

// ---------------------------------------------------------------------------
// Destination lists from EPPs

/** `primary`: header carries only the first ip:port (Envoy ORIGINAL_DST); `list`: relay as sent. */
export type DestinationHeaderMode = 'primary' | 'list';

/** The first entry of a comma-separated list, or undefined when `text` is not a list. */
export function primaryEndpoint(text: string): string | undefined {
  if (!text.includes(',')) return undefined;
  return text.split(',').map((s) => s.trim()).find((s) => s.length > 0);
}
