// Public types of the Envoy stand-in (envoy-standin.ts).
import type * as grpc from '@grpc/grpc-js';
import type { HeaderInput, HeaderList } from './headers.js';
import type { BodyMode, JsonObject } from './protos.js';
import type { HeaderSendMode } from './standin-context.js';
import type { WireRecord } from './standin-stream.js';

export type { HeaderSendMode };

/** Body as data frames: a list of chunks (Buffer or UTF-8 string), or one chunk. */
export type BodyInput = Array<Buffer | string> | Buffer | string;

export interface UpstreamResponse {
  status?: number; // default 200
  headers?: HeaderInput;
  body?: BodyInput;
  trailers?: HeaderInput;
}

export interface ForwardedRequest {
  headers: HeaderList;
  body: Buffer;
  trailers?: HeaderList;
}

export type UpstreamFn = (destination: string, req: ForwardedRequest) => UpstreamResponse | Promise<UpstreamResponse>;

export interface StandinRequest {
  authority: string;
  path: string;
  method?: string; // default 'POST'
  scheme?: string; // default 'http'
  headers?: HeaderInput;
  /** Request body as the data frames Envoy receives; [] or undefined = no body. */
  body?: BodyInput;
  trailers?: HeaderInput;
  /** What the upstream answers (default: 200, JSON naming the destination). */
  response?: UpstreamResponse;
  upstream?: UpstreamFn;
}

/** Where the gateway's load balancer sends the request once the processor is done: a host, or a local reply. */
export type HostChoice = { address: string } | { status: number; body: string; reason: string; details: string };

/** What host selection sees: the request headers as mutated, and the request's dynamic metadata. */
export interface HostSelectionInput {
  headers: HeaderList;
  dynamicMetadata: Record<string, JsonObject>;
}

export type HostSelector = (input: HostSelectionInput) => HostChoice;

export interface StandinOptions {
  requestHeaderMode?: HeaderSendMode; // default SEND
  responseHeaderMode?: HeaderSendMode; // default SEND
  requestBodyMode?: BodyMode; // default FULL_DUPLEX_STREAMED (the GIE reference setting)
  responseBodyMode?: BodyMode; // default FULL_DUPLEX_STREAMED
  requestTrailerMode?: HeaderSendMode; // default SEND
  responseTrailerMode?: HeaderSendMode; // default SEND
  sendProtocolConfig?: boolean; // default true (Envoy 1.34+), first message only
  sendBodyWithoutWaitingForHeaderResponse?: boolean; // default false; STREAMED only
  failureModeAllow?: boolean; // default false
  messageTimeoutMs?: number; // default 200; not applied in FULL_DUPLEX_STREAMED
  /** Stands in for Envoy's stream idle timeout (408) while waiting in full duplex. Default 15000. */
  streamIdleTimeoutMs?: number;
  receivingNamespaces?: string[]; // default ['envoy.lb']
  /** Request dynamic metadata present before ext_proc runs (forwarded as metadata_context). */
  metadataContext?: Record<string, JsonObject>;
  /** metadata_options.forwarding_namespaces.untyped; default: the keys of metadataContext. */
  forwardingNamespaces?: string[];
  /** Request attributes map (Envoy keys it 'envoy.filters.http.ext_proc'); first request-path message. */
  attributes?: Record<string, JsonObject>;
  /** Response attributes map; first response-path message. */
  responseAttributes?: Record<string, JsonObject>;
  /** Record envoy.lb/x-gateway-destination-endpoint-served after host selection and forward envoy.lb. */
  servedEndpointMetadata?: boolean; // default false
  /** gRPC initial metadata on the ext_proc stream (grpc_initial_metadata). */
  grpcMetadata?: Record<string, string>;
  /** Add the headers Envoy's connection manager adds before filters (x-forwarded-proto, x-request-id). Default true. */
  envoyAddedHeaders?: boolean;
  /** The upstream cluster's host selection; default ORIGINAL_DST on x-gateway-destination-endpoint (originalDst). */
  hostSelector?: HostSelector;
  /** Abort = the downstream client resets the request. */
  signal?: AbortSignal;
  onWire?: (r: WireRecord) => void;
}

export interface ClientResponse {
  status: number;
  headers: HeaderList; // without :status
  body: Buffer;
  trailers?: HeaderList;
}

export interface StandinResult {
  outcome: 'forwarded' | 'local-reply' | 'reset';
  /** Client-visible status (the committed status for a reset). */
  status: number;
  reason?: string;
  /** Envoy-like response code details of a local reply. */
  details?: string;
  /** The ip:port ORIGINAL_DST routed to (forwarded only). */
  destination?: string;
  /** The first x-gateway-destination-endpoint value seen at host selection, if any. */
  destinationHeader?: string;
  /** Request headers (and trailers) as the upstream saw them; undefined if not forwarded. */
  upstreamHeaders?: HeaderList;
  upstreamTrailers?: HeaderList;
  forwardedBody?: Buffer;
  dynamicMetadata: Record<string, JsonObject>;
  routeCacheCleared: boolean;
  /** Why Envoy continued without the processor (server closed OK, failure_mode_allow). */
  processorDropped?: string;
  response: ClientResponse;
  /** Every message sent ('out') and received ('in'), in order, and the server's stream end ('end'). */
  messages: WireRecord[];
}

export interface StandinClientOptions {
  maxMessageBytes?: number; // default 16 MiB, both directions
  /** TLS to the processor: CA to trust (e.g. test/fixtures/tls/cert.pem) and optional name override. */
  tls?: { ca: Buffer; serverName?: string };
  channelOptions?: grpc.ChannelOptions;
  /**
   * Envoy's `max_requests_per_connection` on the processor cluster: after this many streams
   * the connection is drained (no new streams) and closed once its open streams finish; the
   * next stream goes over a new connection. Default: one connection for every stream.
   */
  maxRequestsPerConnection?: number;
}

export interface EnvoyStandin {
  run(req: StandinRequest, opts?: StandinOptions): Promise<StandinResult>;
  close(): void;
  /** Connections (channels) opened so far, with maxRequestsPerConnection; undefined without. */
  readonly connectionsOpened?: number;
}

