/**
 * One of Envoy's ProcessingRequests, read once: which member is set, whether it
 * ends its direction, and the body bytes of a body message (a view, no copy).
 * Everything the data path needs from a message after the first one.
 */
import { peekRequest, type RequestCase } from './codec.js';
import { lastPathPayload } from './wire.js';

export interface EnvoyMessage {
  /** The set member of ProcessingRequest.request ('none': no member, a protocol violation). */
  readonly case: RequestCase;
  /** end_of_stream of the headers or body; always true for trailers; false for none. */
  readonly endOfStream: boolean;
  /** HttpBody.body of a body message (a view into the message); empty otherwise. */
  readonly body: Buffer;
  /** The message as received. */
  readonly raw: Buffer;
}

const EMPTY: Buffer = Buffer.alloc(0);
/** ProcessingRequest.request_body(4) / response_body(5) -> HttpBody.body(1). */
const REQUEST_BODY_BYTES = [4, 1] as const;
const RESPONSE_BODY_BYTES = [5, 1] as const;

/** Reads one ProcessingRequest. Throws on malformed input. */
export function readEnvoyMessage(raw: Buffer): EnvoyMessage {
  const peek = peekRequest(raw);
  let body = EMPTY;
  if (peek.case === 'request_body') body = lastPathPayload(raw, REQUEST_BODY_BYTES) ?? EMPTY;
  else if (peek.case === 'response_body') body = lastPathPayload(raw, RESPONSE_BODY_BYTES) ?? EMPTY;
  return { case: peek.case, endOfStream: peek.endOfStream, body, raw };
}
