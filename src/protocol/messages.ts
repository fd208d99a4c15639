/**
 * TypeScript shapes of the ext_proc messages as protobufjs decodes them with
 * our protos (field names kept in snake_case, as in the .proto files).
 *
 * Decoded messages: scalars read their proto3 default when absent, message
 * fields read `null`, repeated fields `[]`, maps `{}`, bytes an empty Buffer.
 * The oneof discriminator (`request`, `response`, `mutation`, `kind`) names the
 * member that is set, or is undefined. The google.protobuf types use
 * protobufjs's bundled definitions, whose Struct/Value fields are camelCase.
 *
 * To build a message for encoding use {@link Init}: every field optional,
 * enums as numbers, bytes as Uint8Array.
 */
import type { BodySendMode, HeaderSendMode, ResponseStatus } from './constants.js';

/** 64-bit integers decode as protobufjs Long objects (or numbers without the long package). */
export interface LongLike {
  low: number;
  high: number;
  unsigned: boolean;
}

// google.protobuf well-known types (protobufjs bundled definitions).
export interface Struct {
  fields: Record<string, Value>;
}
export interface Value {
  kind?: 'nullValue' | 'numberValue' | 'stringValue' | 'boolValue' | 'structValue' | 'listValue';
  nullValue?: 0;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: Struct | null;
  listValue?: ListValue | null;
}
export interface ListValue {
  values: Value[];
}
export interface Any {
  type_url: string;
  value: Buffer;
}
export interface BoolValue {
  value: boolean;
}
export interface Duration {
  seconds: number | LongLike;
  nanos: number;
}

// envoy.config.core.v3 / envoy.type.v3
export interface HeaderValue {
  key: string;
  /** Envoy neither sends nor reads this: use raw_value. */
  value: string;
  raw_value: Buffer;
}
export interface HeaderMap {
  headers: HeaderValue[];
}
export interface HeaderValueOption {
  header: HeaderValue | null;
  /** Unset or false overwrites, true appends (Envoy ignores append_action). */
  append: BoolValue | null;
  append_action: number;
  keep_empty_value: boolean;
}
export interface Metadata {
  filter_metadata: Record<string, Struct>;
  typed_filter_metadata: Record<string, Any>;
}
export interface HttpStatus {
  /** envoy.type.v3.StatusCode: an open enum, any HTTP status number travels. */
  code: number;
}

// envoy.extensions.filters.http.ext_proc.v3
export interface ProcessingMode {
  request_header_mode: HeaderSendMode;
  response_header_mode: HeaderSendMode;
  request_body_mode: BodySendMode;
  response_body_mode: BodySendMode;
  request_trailer_mode: HeaderSendMode;
  response_trailer_mode: HeaderSendMode;
}

// envoy.service.ext_proc.v3: requests (Envoy -> processor)
export type RequestPhase =
  | 'request_headers'
  | 'response_headers'
  | 'request_body'
  | 'response_body'
  | 'request_trailers'
  | 'response_trailers';
export type HeadersPhase = 'request_headers' | 'response_headers';
export type BodyPhase = 'request_body' | 'response_body';
export type TrailersPhase = 'request_trailers' | 'response_trailers';

export interface HttpHeaders {
  headers: HeaderMap | null;
  end_of_stream: boolean;
}
export interface HttpBody {
  body: Buffer;
  end_of_stream: boolean;
}
export interface HttpTrailers {
  trailers: HeaderMap | null;
}
export interface ProtocolConfiguration {
  request_body_mode: BodySendMode;
  response_body_mode: BodySendMode;
  send_body_without_waiting_for_header_response: boolean;
}
export interface ProcessingRequest {
  request?: RequestPhase;
  request_headers: HttpHeaders | null;
  response_headers: HttpHeaders | null;
  request_body: HttpBody | null;
  response_body: HttpBody | null;
  request_trailers: HttpTrailers | null;
  response_trailers: HttpTrailers | null;
  metadata_context: Metadata | null;
  attributes: Record<string, Struct>;
  observability_mode: boolean;
  /** Envoy 1.34+, first message of a stream only. */
  protocol_config: ProtocolConfiguration | null;
}

// envoy.service.ext_proc.v3: responses (processor -> Envoy)
export type ResponsePhase = RequestPhase | 'immediate_response';

export interface HeaderMutation {
  set_headers: HeaderValueOption[];
  remove_headers: string[];
}
export interface StreamedBodyResponse {
  body: Buffer;
  end_of_stream: boolean;
}
export interface BodyMutation {
  mutation?: 'body' | 'clear_body' | 'streamed_response';
  body?: Buffer;
  clear_body?: boolean;
  streamed_response?: StreamedBodyResponse | null;
}
export interface CommonResponse {
  status: ResponseStatus;
  header_mutation: HeaderMutation | null;
  body_mutation: BodyMutation | null;
  trailers: HeaderMap | null;
  /** Honoured by Envoy only together with a header_mutation. */
  clear_route_cache: boolean;
}
export interface HeadersResponse {
  response: CommonResponse | null;
}
export interface BodyResponse {
  response: CommonResponse | null;
}
export interface TrailersResponse {
  header_mutation: HeaderMutation | null;
}
export interface GrpcStatus {
  status: number;
}
export interface ImmediateResponse {
  status: HttpStatus | null;
  headers: HeaderMutation | null;
  body: Buffer;
  grpc_status: GrpcStatus | null;
  details: string;
}
export interface ProcessingResponse {
  response?: ResponsePhase;
  request_headers: HeadersResponse | null;
  response_headers: HeadersResponse | null;
  request_body: BodyResponse | null;
  response_body: BodyResponse | null;
  request_trailers: TrailersResponse | null;
  response_trailers: TrailersResponse | null;
  immediate_response: ImmediateResponse | null;
  dynamic_metadata: Struct | null;
  mode_override: ProcessingMode | null;
  override_message_timeout: Duration | null;
  request_drain: boolean;
}

/** The input shape for encoding: every field optional (null/undefined = absent). */
export type Init<T> = T extends Uint8Array
  ? Uint8Array
  : T extends readonly (infer E)[]
    ? Init<E>[]
    : T extends object
      ? { [K in keyof T]?: Init<T[K]> | null }
      : T;
