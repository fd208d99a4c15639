/**
 * The ext_proc codec: our protos loaded once with protobufjs, typed
 * encode/decode for ProcessingRequest/ProcessingResponse, and header helpers.
 *
 * The data path relays messages as raw bytes, read in one pass each
 * (envoy-message.ts, epp-answer.ts); it decodes only the first message of a
 * stream whole, to route it.
 */
import protobuf from 'protobufjs';
import { isAbsolute, join } from 'node:path';
import { PROCESSING_REQUEST_TYPE, PROCESSING_RESPONSE_TYPE } from './constants.js';
import { EXT_PROC_PROTO, protosDir } from './proto-files.js';
import type {
  HeaderMap,
  HeaderValue,
  Init,
  ProcessingRequest,
  ProcessingResponse,
  RequestPhase,
  ResponsePhase,
} from './messages.js';

export type * from './messages.js';

const EMPTY_BYTES = Buffer.alloc(0);

/** Loads our protos into a fresh protobufjs Root (field names kept as written). */
export function loadExtProcRoot(dir: string = protosDir()): protobuf.Root {
  const root = new protobuf.Root();
  // Imports resolve against protos/; google/protobuf/* come bundled with protobufjs.
  root.resolvePath = (_origin, target) => (isAbsolute(target) ? target : join(dir, target));
  root.loadSync([EXT_PROC_PROTO], { keepCase: true });
  root.resolveAll();
  giveBytesFieldsBufferDefaults(root);
  return root;
}

/**
 * protobufjs leaves an empty array as the default of an absent bytes field;
 * make it an empty Buffer so decoded bytes fields are always Buffers.
 * Prototype defaults are never encoded (encode checks own properties).
 */
function giveBytesFieldsBufferDefaults(ns: protobuf.NamespaceBase): void {
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) {
      for (const field of nested.fieldsArray) {
        if (field.type === 'bytes' && !field.repeated && !field.map) {
          (nested.ctor.prototype as Record<string, unknown>)[field.name] = EMPTY_BYTES;
        }
      }
    }
    if (nested instanceof protobuf.Namespace) giveBytesFieldsBufferDefaults(nested);
  }
}

/** Our loaded protos (for code that needs another message type, e.g. tests and the health service). */
export const extProcRoot: protobuf.Root = loadExtProcRoot();
const RequestType = extProcRoot.lookupType(PROCESSING_REQUEST_TYPE);
const ResponseType = extProcRoot.lookupType(PROCESSING_RESPONSE_TYPE);

/** Looks up a message type in our protos by its fully qualified name. */
export function messageType(fullName: string): protobuf.Type {
  return extProcRoot.lookupType(fullName);
}

function toBuffer(u8: Uint8Array): Buffer {
  return Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

/** Decodes a ProcessingRequest. Bytes fields are views into `buf` (no copy). Throws on malformed input. */
export function decodeRequest(buf: Uint8Array): ProcessingRequest {
  return RequestType.decode(buf) as unknown as ProcessingRequest;
}

/** Encodes a ProcessingRequest (enums as numbers, bytes as Uint8Array). */
export function encodeRequest(msg: Init<ProcessingRequest>): Buffer {
  return toBuffer(RequestType.encode(msg as protobuf.Message).finish());
}

/** Decodes a ProcessingResponse. Throws on malformed input. */
export function decodeResponse(buf: Uint8Array): ProcessingResponse {
  return ResponseType.decode(buf) as unknown as ProcessingResponse;
}

/** Encodes a ProcessingResponse (enums as numbers, bytes as Uint8Array). */
export function encodeResponse(msg: Init<ProcessingResponse>): Buffer {
  return toBuffer(ResponseType.encode(msg as protobuf.Message).finish());
}

// ---------------------------------------------------------------------------
// Which member a message carries

export type RequestCase = RequestPhase | 'none';
/** streamed_immediate_response (11) is not in our protos but is recognised here. */
export type ResponseCase = ResponsePhase | 'streamed_immediate_response' | 'none';


// ---------------------------------------------------------------------------
// Headers

type Headers = HeaderMap | readonly HeaderValue[] | null | undefined;

function entries(headers: Headers): readonly HeaderValue[] {
  if (!headers) return [];
  return Array.isArray(headers) ? headers : (headers as HeaderMap).headers;
}

/** A header's value: raw_value as UTF-8 when non-empty (what Envoy sends), else `value`. */
export function headerText(h: HeaderValue): string {
  const raw = h.raw_value;
  return raw && raw.length > 0 ? toBuffer(raw).toString('utf8') : h.value;
}

/** The first value of header `name` (case-insensitive), or undefined. */
export function headerValue(headers: Headers, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const h of entries(headers)) {
    if (h.key.toLowerCase() === wanted) return headerText(h);
  }
  return undefined;
}
