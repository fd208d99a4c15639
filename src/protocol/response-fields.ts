/** Field numbers of the ext_proc answer messages the readers walk (envoy/service/ext_proc/v3/external_processor.proto and the types it uses). */
import * as P from './phases.js';

// ProcessingResponse: the six phases' answers (numbered in phases.ts), then the rest
export const REQUEST_HEADERS = P.PHASES[P.REQUEST_HEADERS]!.responseField;
export const RESPONSE_HEADERS = P.PHASES[P.RESPONSE_HEADERS]!.responseField;
export const REQUEST_BODY = P.PHASES[P.REQUEST_BODY]!.responseField;
export const RESPONSE_BODY = P.PHASES[P.RESPONSE_BODY]!.responseField;
export const REQUEST_TRAILERS = P.PHASES[P.REQUEST_TRAILERS]!.responseField;
export const RESPONSE_TRAILERS = P.PHASES[P.RESPONSE_TRAILERS]!.responseField;
export const IMMEDIATE_RESPONSE = 7;
export const DYNAMIC_METADATA = 8;
export const MODE_OVERRIDE = 9;
export const OVERRIDE_MESSAGE_TIMEOUT = 10;
export const STREAMED_IMMEDIATE_RESPONSE = 11;
// ProcessingMode (envoy/extensions/filters/http/ext_proc/v3/processing_mode.proto): the body modes
export const MODE_REQUEST_BODY = 3;
export const MODE_RESPONSE_BODY = 4;
// HeadersResponse.response / BodyResponse.response
export const COMMON_RESPONSE = 1;
// CommonResponse
export const COMMON_STATUS = 1;
export const HEADER_MUTATION = 2;
export const BODY_MUTATION = 3;
export const ADDED_TRAILERS = 4;
// BodyMutation (the oneof mutation: body, clear_body, streamed_response)
export const MUTATION_BODY = 1;
export const CLEAR_BODY = 2;
export const STREAMED_RESPONSE = 3;
// StreamedBodyResponse
export const STREAMED_BODY = 1;
export const STREAMED_END_OF_STREAM = 2;
// TrailersResponse.header_mutation
export const TRAILERS_HEADER_MUTATION = 1;
// ImmediateResponse
export const IMMEDIATE_STATUS = 1;
export const IMMEDIATE_HEADERS = 2;
// HttpStatus
export const STATUS_CODE = 1;
// HeaderMutation
export const SET_HEADERS = 1;
export const REMOVE_HEADERS = 2;
// HeaderValueOption.header; HeaderMap.headers
export const OPTION_HEADER = 1;
export const MAP_HEADERS = 1;
// HeaderValue
export const HEADER_KEY = 1;
export const HEADER_VALUE = 2;
export const HEADER_RAW_VALUE = 3;
// google.protobuf.Struct.fields (map entry key=1, value=2); Value (the oneof kind)
export const STRUCT_FIELDS = 1;
export const ENTRY_KEY = 1;
export const ENTRY_VALUE = 2;
export const NULL_VALUE = 1;
export const NUMBER_VALUE = 2;
export const STRING_VALUE = 3;
export const BOOL_VALUE = 4;
export const STRUCT_VALUE = 5;
export const LIST_VALUE = 6;
