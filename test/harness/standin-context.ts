// Per-HTTP-request state shared by both directions of the Envoy stand-in's ext_proc filter,
// the terminal `Halt`, local replies, and what Envoy adds to every message it sends.
import type { HeaderList } from './headers.js';
import {
  fromStruct,
  toStruct,
  BODY_MODE,
  type BodyMode,
  type JsonObject,
  type PbProcessingRequest,
  type PbProcessingResponse,
  type PbStruct,
} from './protos.js';
import type { StandinStream } from './standin-stream.js';

export type Direction = 'request' | 'response';
export type HeaderSendMode = 'SEND' | 'SKIP';

export interface DirectionModes {
  header: HeaderSendMode;
  body: BodyMode;
  trailer: HeaderSendMode;
}

export interface HttpMessage {
  headers: HeaderList; // pseudo-headers included (:authority..., or :status)
  body: Buffer[]; // data frames; [] = no body
  trailers?: HeaderList;
}

/** Shared per-HTTP-request filter state (both directions use one ext_proc stream). */
export interface FilterContext {
  stream: StandinStream;
  processingComplete: boolean;
  detachedReason?: string;
  firstMessageSent: boolean;
  sendProtocolConfig: boolean;
  protocolConfig: { request: BodyMode; response: BodyMode; sendBodyWithoutWaiting: boolean };
  failureModeAllow: boolean;
  messageTimeoutMs: number;
  streamIdleTimeoutMs: number;
  receivingNamespaces: string[];
  forwardingNamespaces: string[];
  dynamicMetadata: Record<string, JsonObject>;
  attributes: Partial<Record<Direction, Record<string, JsonObject>>>;
  attributesSent: Partial<Record<Direction, boolean>>;
  routeCacheCleared: boolean;
  fdBodySent: boolean;
}

export interface LocalReply {
  status: number;
  headers: HeaderList;
  body: Buffer;
  reason: string;
  details: string;
}

/** Unwinds a direction: a local reply, the processor being dropped, or a client reset. */
export class Halt {
  constructor(
    readonly kind: 'local' | 'detach' | 'reset',
    readonly reason: string,
    readonly reply?: LocalReply,
  ) {}
}

export function localReply(status: number, body: string | Buffer, reason: string, details: string): LocalReply {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const headers: HeaderList = b.length > 0 ? [['content-type', 'text/plain'], ['content-length', String(b.length)]] : [];
  return { status, headers, body: b, reason, details };
}

/**
 * Sends a message as Envoy builds it: protocol_config on the stream's first message only,
 * metadata_context on every message (the forwarded namespaces of the request's dynamic
 * metadata, possibly empty), attributes on the first message of each direction.
 */
export function sendDecorated(ctx: FilterContext, dir: Direction, req: PbProcessingRequest, type: string): void {
  if (!ctx.firstMessageSent && ctx.sendProtocolConfig) {
    req.protocol_config = {
      request_body_mode: BODY_MODE[ctx.protocolConfig.request],
      response_body_mode: BODY_MODE[ctx.protocolConfig.response],
      send_body_without_waiting_for_header_response: ctx.protocolConfig.sendBodyWithoutWaiting,
    };
  }
  ctx.firstMessageSent = true;
  const fm: Record<string, PbStruct> = {};
  for (const ns of ctx.forwardingNamespaces) {
    const v = ctx.dynamicMetadata[ns];
    if (v) fm[ns] = toStruct(v);
  }
  req.metadata_context = { filter_metadata: fm };
  const attrs = ctx.attributes[dir];
  if (attrs && !ctx.attributesSent[dir]) {
    req.attributes = Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, toStruct(v)]));
    ctx.attributesSent[dir] = true;
  }
  ctx.stream.send(req, type);
}

/** dynamic_metadata: each top-level key is a namespace, kept only if it is a receiving namespace. */
export function applyDynamicMetadata(ctx: FilterContext, m: PbProcessingResponse): void {
  const md = fromStruct(m.dynamic_metadata);
  for (const [ns, v] of Object.entries(md)) {
    if (!ctx.receivingNamespaces.includes(ns)) continue;
    const obj = v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {};
    ctx.dynamicMetadata[ns] = { ...(ctx.dynamicMetadata[ns] ?? {}), ...obj };
  }
}
