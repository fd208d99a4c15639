/**
 * One of Envoy's ProcessingRequests, read once: which member is set, whether it
 * ends its direction, and the body bytes of a body message (a view, no copy).
 * Everything the data path needs from a message after the first one.
 */
import type { RequestCase } from './codec.js';
import { PHASE_BY_REQUEST_FIELD, type Phase } from './phases.js';
import { cursor, readBool, readLenEnd, readTag, skipValue, WIRE_LEN, WIRE_VARINT } from './wire-walk.js';

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

// HttpHeaders
const HEADERS_END_OF_STREAM = 3;
// HttpBody
const BODY_BYTES = 1;
const BODY_END_OF_STREAM = 2;

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * Reads one ProcessingRequest. A repeated occurrence of the member merges into
 * it (a later end_of_stream or body wins); another member replaces it. Throws
 * on malformed input.
 */
export function readEnvoyMessage(raw: Buffer): EnvoyMessage {
  let member: Phase | undefined;
  let endOfStream = false;
  let bodyStart = 0;
  let bodyEnd = 0;
  const limit = raw.length;
  cursor.at = 0;
  while (cursor.at < limit) {
    const tag = readTag(raw, limit);
    const phase = PHASE_BY_REQUEST_FIELD[tag >>> 3];
    if (phase === undefined || (tag & 7) !== WIRE_LEN) {
      skipValue(raw, tag & 7, limit);
      continue;
    }
    const end = readLenEnd(raw, limit);
    if (phase !== member) {
      member = phase;
      endOfStream = false;
      bodyStart = bodyEnd = 0;
    }
    if (phase.kind === 'trailers') {
      endOfStream = true;
      cursor.at = end;
      continue;
    }
    const body = phase.kind === 'body';
    const eosField = body ? BODY_END_OF_STREAM : HEADERS_END_OF_STREAM;
    while (cursor.at < end) {
      const t = readTag(raw, end);
      const n = t >>> 3;
      if (n === eosField && (t & 7) === WIRE_VARINT) endOfStream = readBool(raw, end);
      else if (body && n === BODY_BYTES && (t & 7) === WIRE_LEN) {
        bodyEnd = readLenEnd(raw, end);
        bodyStart = cursor.at;
        cursor.at = bodyEnd;
      } else skipValue(raw, t & 7, end);
    }
  }
  const body = bodyEnd > bodyStart ? raw.subarray(bodyStart, bodyEnd) : EMPTY;
  return { case: member?.name ?? 'none', endOfStream, body, raw };
}
