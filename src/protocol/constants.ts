/**
 * Every wire-level key the router uses, in one place
 * (docs/protocol.md §1 and §2).
 */

/** Header (and envoy.lb metadata key) naming the endpoint Envoy's ORIGINAL_DST cluster routes to. */
export const DESTINATION_ENDPOINT_HEADER = 'x-gateway-destination-endpoint';
/**
 * Request header the router sets (raw_value) when the destination is a remote parent Gateway
 * (Parent mode, and FailOpen to a parent), so an Envoy route can send those requests to a TLS
 * ORIGINAL_DST cluster and the rest to the plain one. Never set in Endpoint mode answers.
 */
export const DESTINATION_KIND_HEADER = 'x-mcip-destination-kind';
/** The value of {@link DESTINATION_KIND_HEADER} for a parent Gateway destination. */
export const DESTINATION_KIND_PARENT = 'parent';
/**
 * Request header of a relay answer (the Endpoint Picker role): a token naming the real
 * destination, which only the relay accepts (format: src/credentials/relay-token.ts).
 */
export const RELAY_TOKEN_HEADER = 'x-mcip-relay-token';
/** Metadata key (namespace envoy.lb) the gateway uses to tell an EPP which endpoint served a response. */
export const DESTINATION_ENDPOINT_SERVED_KEY = 'x-gateway-destination-endpoint-served';

/** Dynamic-metadata namespace of the destination endpoint and the served endpoint. */
export const LB_METADATA_NAMESPACE = 'envoy.lb';
/** The router's own dynamic metadata namespace: which cluster and pool serve the request, and how it was decided (docs/operations.md). */
export const ROUTER_METADATA_NAMESPACE = 'mcip.router';

/** Fully qualified gRPC service names. */
export const EXT_PROC_SERVICE = 'envoy.service.ext_proc.v3.ExternalProcessor';
export const HEALTH_SERVICE = 'grpc.health.v1.Health';
/** Method path of the ext_proc bidirectional stream. */
export const EXT_PROC_PROCESS_PATH = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check';

/** envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.BodySendMode. */
export const BodySendMode = {
  NONE: 0,
  STREAMED: 1,
  BUFFERED: 2,
  BUFFERED_PARTIAL: 3,
  FULL_DUPLEX_STREAMED: 4,
  GRPC: 5,
} as const;
export type BodySendMode = (typeof BodySendMode)[keyof typeof BodySendMode];

/** envoy.extensions.filters.http.ext_proc.v3.ProcessingMode.HeaderSendMode. */
export const HeaderSendMode = { DEFAULT: 0, SEND: 1, SKIP: 2 } as const;
export type HeaderSendMode = (typeof HeaderSendMode)[keyof typeof HeaderSendMode];

/** envoy.service.ext_proc.v3.CommonResponse.ResponseStatus. */
export const ResponseStatus = { CONTINUE: 0, CONTINUE_AND_REPLACE: 1 } as const;
export type ResponseStatus = (typeof ResponseStatus)[keyof typeof ResponseStatus];

/** Fully qualified protobuf message names the codec looks up. */
export const PROCESSING_REQUEST_TYPE = 'envoy.service.ext_proc.v3.ProcessingRequest';
export const PROCESSING_RESPONSE_TYPE = 'envoy.service.ext_proc.v3.ProcessingResponse';
