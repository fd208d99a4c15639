/**
 * Pure builders for the ProcessingResponses the router itself sends Envoy,
 * and the rewrite of an EPP's destination list (docs/protocol.md §1, §2).
 * Every builder returns a freshly encoded Buffer.
 */
import { DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT, LB_METADATA_NAMESPACE } from './constants.js';
import { encodeResponse, headerText, messageType } from './codec.js';
import type {
  BodyPhase,
  HeaderValue,
  HeaderValueOption,
  HeadersPhase,
  Init,
  RequestPhase,
  Struct,
  TrailersPhase,
  Value,
} from './messages.js';
import { toStruct, type JsonObject, type JsonValue } from './struct.js';
import { dropField, lenField, rewriteLenField, rewritePath, scanFields, payloadOf, visitPath, WIRE_LEN } from './wire.js';

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

/** ProcessingResponse.request_headers(1) -> HeadersResponse.response(1) -> CommonResponse.header_mutation(2) -> set_headers(1). */
const SET_HEADERS_PATH = [1, 1, 2, 1] as const;
const HEADER_VALUE_OPTION_HEADER = 1;
const HEADER_VALUE_VALUE = 2;
const HEADER_VALUE_RAW_VALUE = 3;
const PROCESSING_RESPONSE_DYNAMIC_METADATA = 8;

const HeaderValueType = messageType('envoy.config.core.v3.HeaderValue');
const StructType = messageType('google.protobuf.Struct');

function destinationHeader(payload: Buffer): { h: HeaderValue; text: string } | undefined {
  const h = HeaderValueType.decode(payload) as unknown as HeaderValue;
  return h.key.toLowerCase() === DESTINATION_ENDPOINT_HEADER ? { h, text: headerText(h) } : undefined;
}

/** The first entry of a comma-separated list, or undefined when `text` is not a list. */
export function primaryEndpoint(text: string): string | undefined {
  if (!text.includes(',')) return undefined;
  return text.split(',').map((s) => s.trim()).find((s) => s.length > 0);
}

/** The x-gateway-destination-endpoint an encoded request_headers response sets (last one wins), if any. */
export function destinationOf(responseBuf: Uint8Array): string | undefined {
  let found: string | undefined;
  visitPath(responseBuf, SET_HEADERS_PATH, (option) =>
    visitPath(option, [HEADER_VALUE_OPTION_HEADER], (hv) => {
      found = destinationHeader(hv)?.text ?? found;
    }),
  );
  return found;
}

/**
 * For an EPP's encoded request_headers response whose header mutation sets
 * x-gateway-destination-endpoint to a comma-separated list: in `primary` mode
 * the header keeps only the first ip:port (in each of raw_value/value that was
 * set), while dynamic_metadata envoy.lb/x-gateway-destination-endpoint keeps
 * the full list (added with the header's original value if the EPP did not set
 * it). Returns `responseBuf` itself when there is no list or in `list` mode.
 *
 * Works on the wire bytes: every other field, including fields our protos do
 * not declare, is copied unchanged (only dynamic_metadata is re-encoded, as one
 * field at the end, when the list has to be added to it).
 */
export function rewriteDestination(responseBuf: Buffer, mode: DestinationHeaderMode): Buffer {
  if (mode === 'list') return responseBuf;
  let list: string | undefined;
  const rewritten = rewritePath(responseBuf, SET_HEADERS_PATH, (option) =>
    unlessSame(option, rewriteLenField(option, HEADER_VALUE_OPTION_HEADER, (hv) => {
      const dest = destinationHeader(hv);
      const primary = dest && primaryEndpoint(dest.text);
      if (!dest || primary === undefined) return undefined;
      list ??= dest.text;
      const bytes = Buffer.from(primary, 'utf8');
      let next = hv;
      if (dest.h.raw_value.length > 0) next = rewriteLenField(next, HEADER_VALUE_RAW_VALUE, () => bytes);
      if (dest.h.value.length > 0) next = rewriteLenField(next, HEADER_VALUE_VALUE, () => bytes);
      return next;
    })),
  );
  return list === undefined ? responseBuf : withListInMetadata(rewritten, list);
}

function unlessSame(before: Buffer, after: Buffer): Buffer | undefined {
  return after === before ? undefined : after;
}

/** Ensures dynamic_metadata envoy.lb/x-gateway-destination-endpoint is set, keeping whatever the EPP set. */
function withListInMetadata(buf: Buffer, list: string): Buffer {
  // Repeated occurrences of a message field merge; for a Struct, later keys win.
  const merged: Record<string, Value> = {};
  for (const f of scanFields(buf)) {
    if (f.no !== PROCESSING_RESPONSE_DYNAMIC_METADATA || f.wireType !== WIRE_LEN) continue;
    Object.assign(merged, (StructType.decode(payloadOf(buf, f)) as unknown as Struct).fields);
  }
  const lb = merged[LB_METADATA_NAMESPACE];
  const lbFields = lb?.kind === 'structValue' && lb.structValue ? lb.structValue.fields : {};
  if (lbFields[DESTINATION_ENDPOINT_HEADER] !== undefined) return buf;
  const metadata: Init<Struct> = {
    fields: {
      ...merged,
      [LB_METADATA_NAMESPACE]: {
        structValue: { fields: { ...lbFields, [DESTINATION_ENDPOINT_HEADER]: { stringValue: list } } },
      },
    },
  };
  const encoded = StructType.encode(metadata as never).finish();
  return Buffer.concat([
    dropField(buf, PROCESSING_RESPONSE_DYNAMIC_METADATA),
    lenField(PROCESSING_RESPONSE_DYNAMIC_METADATA, encoded),
  ]);
}
