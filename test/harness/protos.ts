// Test-harness codec: loads the project's protos/ with @grpc/proto-loader, independently of
// src/protocol, so a codec bug in the router cannot hide behind shared code.
// Message shapes below are what proto-loader produces with LOADER_OPTIONS: snake_case
// fields, enums as numbers, longs as numbers, bytes as Buffer, absent fields undefined,
// and a virtual string field naming the set member of each oneof (e.g. `request`).
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { canonicalResponse, occurrences } from '../protocol/wire-canonical.js';

export const PROTOS_DIR = fileURLToPath(new URL('../../protos/', import.meta.url));

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: Number,
  defaults: false,
  oneofs: true,
  includeDirs: [PROTOS_DIR],
};

/** Default max gRPC message size on both harness sides (a 4 MiB BUFFERED body exceeds 4 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export const packageDefinition = protoLoader.loadSync(
  ['envoy/service/ext_proc/v3/external_processor.proto', 'grpc/health/v1/health.proto'],
  LOADER_OPTIONS,
);

// Answers are read as Envoy (C++ protobuf) reads them: a second occurrence of a message field
// merges into the first (protobufjs alone would keep only the last).
{
  const processMethod = packageDefinition['envoy.service.ext_proc.v3.ExternalProcessor'] as unknown as Record<string, protoLoader.MethodDefinition<object, object>>;
  const process = processMethod.Process!;
  const decode = process.responseDeserialize;
  // Only an answer with a repeated top-level field needs it (the router appends to an answer so); the rest decode as they are.
  const repeatsAField = (buf: Buffer): boolean => {
    const seen = new Set<number>();
    for (const o of occurrences(buf)) {
      if (seen.has(o.no)) return true;
      seen.add(o.no);
    }
    return false;
  };
  process.responseDeserialize = (buf: Buffer) => decode(repeatsAField(buf) ? canonicalResponse(buf) : buf);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
const grpcObject = grpc.loadPackageDefinition(packageDefinition) as any;

export const ExternalProcessorClient: grpc.ServiceClientConstructor =
  grpcObject.envoy.service.ext_proc.v3.ExternalProcessor;
export const ExternalProcessorService: grpc.ServiceDefinition = ExternalProcessorClient.service;
export const HealthClient: grpc.ServiceClientConstructor = grpcObject.grpc.health.v1.Health;
export const HealthService: grpc.ServiceDefinition = HealthClient.service;

// ---- JSON <-> google.protobuf.Struct -------------------------------------------------

export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

// google/protobuf/*.proto come from protobufjs's built-in definitions, whose field names are
// camelCase even with keepCase (structValue, not struct_value).
export interface PbValue {
  kind?: string;
  nullValue?: number;
  numberValue?: number;
  stringValue?: string;
  boolValue?: boolean;
  structValue?: PbStruct;
  listValue?: { values?: PbValue[] };
}
export interface PbStruct {
  fields?: Record<string, PbValue>;
}

export function toPbValue(v: JsonValue): PbValue {
  if (v === null) return { nullValue: 0 };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toPbValue) } };
  return { structValue: toStruct(v) };
}

export function toStruct(o: JsonObject): PbStruct {
  const fields: Record<string, PbValue> = {};
  for (const [k, v] of Object.entries(o)) fields[k] = toPbValue(v);
  return { fields };
}

export function fromPbValue(v: PbValue | undefined): JsonValue {
  if (!v) return null;
  if (v.structValue !== undefined) return fromStruct(v.structValue);
  if (v.listValue !== undefined) return (v.listValue.values ?? []).map(fromPbValue);
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.numberValue !== undefined) return v.numberValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return null;
}

export function fromStruct(s: PbStruct | undefined): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(s?.fields ?? {})) out[k] = fromPbValue(v);
  return out;
}

// ---- Message shapes (as decoded by proto-loader with LOADER_OPTIONS) ---------------------

export interface PbHeaderValue {
  key?: string;
  value?: string;
  raw_value?: Buffer;
}
export interface PbHeaderMap {
  headers?: PbHeaderValue[];
}
export interface PbHeaderValueOption {
  header?: PbHeaderValue;
  append?: { value?: boolean };
  append_action?: number;
  keep_empty_value?: boolean;
}
export interface PbHeaderMutation {
  set_headers?: PbHeaderValueOption[];
  remove_headers?: string[];
}
export interface PbMetadata {
  filter_metadata?: Record<string, PbStruct>;
}
export interface PbHttpHeaders {
  headers?: PbHeaderMap;
  end_of_stream?: boolean;
}
export interface PbHttpBody {
  body?: Buffer;
  end_of_stream?: boolean;
}
export interface PbHttpTrailers {
  trailers?: PbHeaderMap;
}
export interface PbProtocolConfiguration {
  request_body_mode?: number;
  response_body_mode?: number;
  send_body_without_waiting_for_header_response?: boolean;
}

export type RequestCase =
  | 'request_headers'
  | 'response_headers'
  | 'request_body'
  | 'response_body'
  | 'request_trailers'
  | 'response_trailers';

export interface PbProcessingRequest {
  request?: RequestCase;
  request_headers?: PbHttpHeaders;
  response_headers?: PbHttpHeaders;
  request_body?: PbHttpBody;
  response_body?: PbHttpBody;
  request_trailers?: PbHttpTrailers;
  response_trailers?: PbHttpTrailers;
  metadata_context?: PbMetadata;
  attributes?: Record<string, PbStruct>;
  observability_mode?: boolean;
  protocol_config?: PbProtocolConfiguration;
}

export interface PbBodyMutation {
  mutation?: 'body' | 'clear_body' | 'streamed_response';
  body?: Buffer;
  clear_body?: boolean;
  streamed_response?: { body?: Buffer; end_of_stream?: boolean };
}
export interface PbCommonResponse {
  status?: number; // 0 CONTINUE, 1 CONTINUE_AND_REPLACE
  header_mutation?: PbHeaderMutation;
  body_mutation?: PbBodyMutation;
  trailers?: PbHeaderMap;
  clear_route_cache?: boolean;
}
export interface PbHeadersResponse {
  response?: PbCommonResponse;
}
export interface PbBodyResponse {
  response?: PbCommonResponse;
}
export interface PbTrailersResponse {
  header_mutation?: PbHeaderMutation;
}
export interface PbImmediateResponse {
  status?: { code?: number };
  headers?: PbHeaderMutation;
  body?: Buffer;
  grpc_status?: { status?: number };
  details?: string;
}

export type ResponseCase = RequestCase | 'immediate_response';

export interface PbProcessingResponse {
  response?: ResponseCase;
  request_headers?: PbHeadersResponse;
  response_headers?: PbHeadersResponse;
  request_body?: PbBodyResponse;
  response_body?: PbBodyResponse;
  request_trailers?: PbTrailersResponse;
  response_trailers?: PbTrailersResponse;
  immediate_response?: PbImmediateResponse;
  dynamic_metadata?: PbStruct;
  mode_override?: Record<string, number>;
  override_message_timeout?: { seconds?: number; nanos?: number };
  request_drain?: boolean;
}

/** ProcessingMode.BodySendMode numbers (protos/.../processing_mode.proto). */
export const BODY_MODE = {
  NONE: 0,
  STREAMED: 1,
  BUFFERED: 2,
  BUFFERED_PARTIAL: 3,
  FULL_DUPLEX_STREAMED: 4,
  GRPC: 5,
} as const;
export type BodyMode = Exclude<keyof typeof BODY_MODE, 'GRPC'>;

export const BODY_MODE_NAME: Record<number, string> = Object.fromEntries(
  Object.entries(BODY_MODE).map(([k, v]) => [v, k]),
);

/** grpc.health.v1 ServingStatus numbers. */
export const SERVING_STATUS = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } as const;
export type ServingStatus = keyof typeof SERVING_STATUS;

/** Normalise decoded bytes (Buffer or Uint8Array) to a Buffer. */
export function asBuffer(b: Uint8Array | undefined): Buffer {
  if (!b) return Buffer.alloc(0);
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}
