/**
 * Sample messages for the wire-compatibility test, in protobufjs's canonical
 * plain-object form (toObject with bytes as base64, longs as strings, enums as
 * numbers, keepCase). Every field of every message we declare carries a
 * non-default value somewhere; every oneof member has its own sample.
 */

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

export interface Sample {
  /** Fully qualified message name, without the leading dot. */
  type: string;
  name: string;
  value: Record<string, unknown>;
  /** What upstream decodes when `value` carries fields upstream lacks (defaults to `value`). */
  upstreamSees?: Record<string, unknown>;
  /** [oneof name, member] expected after decoding, checked on both sides. */
  oneof?: [string, string];
}

const EXT = 'envoy.service.ext_proc.v3';
const CORE = 'envoy.config.core.v3';

export const headerValue = { key: 'x-custom', value: 'legacy', raw_value: b64('raw \u00e9') };
export const headerMap = { headers: [headerValue, { key: ':path', raw_value: b64('/v1/completions') }] };
export const struct = {
  fields: {
    s: { stringValue: 'x' },
    n: { numberValue: 1.5 },
    b: { boolValue: true },
    z: { nullValue: 0 },
    l: { listValue: { values: [{ stringValue: '10.0.0.1:8000' }, { numberValue: 2 }] } },
    o: { structValue: { fields: { k: { stringValue: 'v' } } } },
  },
};
export const metadata = {
  filter_metadata: {
    'envoy.lb': struct,
    'envoy.lb.subset_hint': {
      fields: {
        'x-gateway-destination-endpoint-subset': {
          listValue: { values: [{ stringValue: '10.0.0.1:8000' }, { stringValue: '10.0.0.2:8000' }] },
        },
      },
    },
  },
  typed_filter_metadata: {
    // google.protobuf.StringValue{value: "typed"} = 0a 05 "typed"
    typed: { type_url: 'type.googleapis.com/google.protobuf.StringValue', value: b64('\n\u0005typed') },
  },
};
const headerValueOption = { header: headerValue, append: { value: true }, append_action: 2, keep_empty_value: true };
const headerMutation = {
  set_headers: [headerValueOption, { header: { key: 'x-gateway-destination-endpoint', raw_value: b64('10.0.0.1:8000') } }],
  remove_headers: ['x-remove-1', 'x-remove-2'],
};
const commonResponse = {
  status: 1,
  header_mutation: headerMutation,
  body_mutation: { body: b64('replaced') },
  trailers: headerMap,
  clear_route_cache: true,
};
const processingMode = {
  request_header_mode: 1,
  response_header_mode: 2,
  request_body_mode: 2,
  response_body_mode: 1,
  request_trailer_mode: 1,
  response_trailer_mode: 2,
};
const immediate = {
  status: { code: 429 },
  headers: headerMutation,
  body: b64('{"error":"shed"}'),
  grpc_status: { status: 8 },
  details: 'flow_control',
};
const requestCommon = { metadata_context: metadata, attributes: { 'envoy.filters.http.ext_proc': struct }, observability_mode: true };
const responseCommon = {
  dynamic_metadata: { fields: { 'envoy.lb': { structValue: { fields: { 'x-gateway-destination-endpoint': { stringValue: '10.0.0.1:8000' } } } } } },
  mode_override: processingMode,
  override_message_timeout: { seconds: '2', nanos: 500 },
};

const httpHeaders = { headers: headerMap, end_of_stream: true };
const httpBody = { body: b64('{"model":"m"}'), end_of_stream: true };
const httpTrailers = { trailers: headerMap };

const requestCases: [string, unknown][] = [
  ['request_headers', httpHeaders],
  ['response_headers', httpHeaders],
  ['request_body', httpBody],
  ['response_body', httpBody],
  ['request_trailers', httpTrailers],
  ['response_trailers', httpTrailers],
];
const responseCases: [string, unknown][] = [
  ['request_headers', { response: commonResponse }],
  ['response_headers', { response: commonResponse }],
  ['request_body', { response: commonResponse }],
  ['response_body', { response: commonResponse }],
  ['request_trailers', { header_mutation: headerMutation }],
  ['response_trailers', { header_mutation: headerMutation }],
  ['immediate_response', immediate],
];

export const samples: Sample[] = [
  ...requestCases.map(([c, v]): Sample => ({
    type: `${EXT}.ProcessingRequest`, name: c, value: { [c]: v, ...requestCommon }, oneof: ['request', c],
  })),
  {
    type: `${EXT}.ProcessingRequest`,
    name: 'protocol_config (Envoy 1.34+)',
    value: {
      request_headers: httpHeaders,
      ...requestCommon,
      protocol_config: { request_body_mode: 4, response_body_mode: 5, send_body_without_waiting_for_header_response: true },
    },
    upstreamSees: { request_headers: httpHeaders, ...requestCommon },
    oneof: ['request', 'request_headers'],
  },
  ...responseCases.map(([c, v]): Sample => ({
    type: `${EXT}.ProcessingResponse`, name: c, value: { [c]: v, ...responseCommon }, oneof: ['response', c],
  })),
  {
    type: `${EXT}.ProcessingResponse`,
    name: 'request_drain and streamed_response (Envoy 1.34+)',
    value: {
      request_body: { response: { body_mutation: { streamed_response: { body: b64('chunk'), end_of_stream: true } } } },
      ...responseCommon,
      request_drain: true,
    },
    upstreamSees: { request_body: { response: { body_mutation: {} } }, ...responseCommon },
    oneof: ['response', 'request_body'],
  },
  { type: `${EXT}.HttpHeaders`, name: 'all fields', value: httpHeaders },
  { type: `${EXT}.HttpBody`, name: 'all fields', value: httpBody },
  { type: `${EXT}.HttpTrailers`, name: 'all fields', value: httpTrailers },
  {
    type: `${EXT}.ProtocolConfiguration`,
    name: 'all fields (upstream lacks the type)',
    value: { request_body_mode: 4, response_body_mode: 2, send_body_without_waiting_for_header_response: true },
  },
  { type: `${EXT}.HeadersResponse`, name: 'all fields', value: { response: commonResponse } },
  { type: `${EXT}.BodyResponse`, name: 'all fields', value: { response: commonResponse } },
  { type: `${EXT}.TrailersResponse`, name: 'all fields', value: { header_mutation: headerMutation } },
  { type: `${EXT}.CommonResponse`, name: 'all fields', value: commonResponse },
  { type: `${EXT}.ImmediateResponse`, name: 'all fields', value: immediate },
  { type: `${EXT}.GrpcStatus`, name: 'all fields', value: { status: 14 } },
  { type: `${EXT}.HeaderMutation`, name: 'all fields', value: headerMutation },
  { type: `${EXT}.BodyMutation`, name: 'body', value: { body: b64('new body') }, oneof: ['mutation', 'body'] },
  { type: `${EXT}.BodyMutation`, name: 'clear_body', value: { clear_body: true }, oneof: ['mutation', 'clear_body'] },
  {
    type: `${EXT}.BodyMutation`,
    name: 'streamed_response (Envoy 1.34+)',
    value: { streamed_response: { body: b64('chunk'), end_of_stream: true } },
    upstreamSees: {},
    oneof: ['mutation', 'streamed_response'],
  },
  {
    type: `${EXT}.StreamedBodyResponse`,
    name: 'all fields (upstream lacks the type)',
    value: { body: b64('chunk'), end_of_stream: true },
  },
  { type: `${CORE}.HeaderValue`, name: 'all fields', value: headerValue },
  { type: `${CORE}.HeaderValueOption`, name: 'all fields', value: headerValueOption },
  { type: `${CORE}.HeaderMap`, name: 'all fields', value: headerMap },
  { type: `${CORE}.Metadata`, name: 'both maps, Any included', value: metadata },
  { type: 'envoy.type.v3.HttpStatus', name: 'code in our enum', value: { code: 503 } },
  { type: 'envoy.type.v3.HttpStatus', name: 'code only upstream names (302)', value: { code: 302 } },
  { type: 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode', name: 'all fields', value: processingMode },
  {
    type: 'envoy.extensions.filters.http.ext_proc.v3.ProcessingMode',
    name: 'FULL_DUPLEX_STREAMED and GRPC body modes (Envoy 1.34+)',
    // Upstream's enum lacks 4 and 5; proto3 enums are open, so it keeps the numbers.
    value: { ...processingMode, request_body_mode: 4, response_body_mode: 5 },
  },
];

/** Types upstream lacks, so only our own round trip applies. */
export const OURS_ONLY_TYPES = new Set([`${EXT}.ProtocolConfiguration`, `${EXT}.StreamedBodyResponse`]);
