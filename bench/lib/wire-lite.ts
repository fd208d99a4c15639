/**
 * Just enough protobuf for the fast EPP: find which ProcessingRequest member
 * a message carries, read an HttpBody's bytes and end_of_stream, and wrap body
 * bytes into a streamed_response without a general-purpose encoder.
 * Field numbers: docs/protocol.md §1.
 */

/** ProcessingRequest member numbers. */
export const REQ = { requestHeaders: 2, responseHeaders: 3, requestBody: 4, responseBody: 5, requestTrailers: 6, responseTrailers: 7 } as const;
/** ProcessingResponse member numbers of the body responses. */
const RESP_REQUEST_BODY = 3;
const RESP_RESPONSE_BODY = 4;

function varint(buf: Uint8Array, pos: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  for (;;) {
    const b = buf[pos++];
    if (b === undefined) throw new RangeError('truncated varint');
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return [value, pos];
    shift += 7;
  }
}

function skip(buf: Uint8Array, pos: number, wireType: number): number {
  switch (wireType) {
    case 0:
      return varint(buf, pos)[1];
    case 1:
      return pos + 8;
    case 2: {
      const [len, p] = varint(buf, pos);
      return p + len;
    }
    case 5:
      return pos + 4;
    default:
      throw new RangeError(`unsupported wire type ${wireType}`);
  }
}

export interface Member {
  /** ProcessingRequest member number (REQ.*), 0 if none. */
  readonly no: number;
  readonly start: number;
  readonly end: number;
}

/** The request member (last LEN field among 2..7) of a ProcessingRequest. */
export function requestMember(buf: Buffer): Member {
  let pos = 0;
  let found: Member = { no: 0, start: 0, end: 0 };
  while (pos < buf.length) {
    const [tag, p] = varint(buf, pos);
    const no = tag >>> 3;
    const wt = tag & 7;
    if (wt === 2 && no >= 2 && no <= 7) {
      const [len, q] = varint(buf, p);
      found = { no, start: q, end: q + len };
      pos = q + len;
    } else {
      pos = skip(buf, p, wt);
    }
  }
  return found;
}

/** HttpBody (body = 1, end_of_stream = 2) inside [start, end). */
export function httpBody(buf: Buffer, m: Member): { body: Buffer; endOfStream: boolean } {
  let pos = m.start;
  let body: Buffer = EMPTY;
  let endOfStream = false;
  while (pos < m.end) {
    const [tag, p] = varint(buf, pos);
    const no = tag >>> 3;
    const wt = tag & 7;
    if (no === 1 && wt === 2) {
      const [len, q] = varint(buf, p);
      body = buf.subarray(q, q + len);
      pos = q + len;
    } else if (no === 2 && wt === 0) {
      const [v, q] = varint(buf, p);
      endOfStream = v !== 0;
      pos = q;
    } else {
      pos = skip(buf, p, wt);
    }
  }
  return { body, endOfStream };
}

const EMPTY = Buffer.alloc(0);

/** What the Envoy stand-in needs of an answer: its member and, for a body answer, the streamed_response it carries. */
export interface AnswerPeek {
  /** ProcessingResponse member number (1..7, or 11 streamed_immediate_response), 0 if none. */
  readonly member: number;
  /** A body answer whose body_mutation is a streamed_response. */
  readonly streamed: boolean;
  readonly endOfStream: boolean;
  /** That streamed_response's body length. */
  readonly bodyBytes: number;
}

/** Calls `each` for every field of the message in [start, end): a length-delimited field with its payload's bounds, a varint with its value. */
function fields(buf: Buffer, start: number, end: number, each: (no: number, wt: number, from: number, to: number, value: number) => void): void {
  let pos = start;
  while (pos < end) {
    const [tag, p] = varint(buf, pos);
    const no = tag >>> 3;
    const wt = tag & 7;
    if (wt === 2) {
      const [len, q] = varint(buf, p);
      if (q + len > end) throw new RangeError('length beyond its message');
      each(no, wt, q, q + len, 0);
      pos = q + len;
    } else if (wt === 0) {
      const [v, q] = varint(buf, p);
      each(no, wt, p, q, v);
      pos = q;
    } else {
      pos = skip(buf, p, wt);
    }
  }
  if (pos !== end) throw new RangeError('field overruns its message');
}

/**
 * One pass over a ProcessingResponse: the last member wins, repeated occurrences
 * of the same member merge (a later streamed_response's body and end_of_stream
 * replace the earlier ones). Path: request_body(3) / response_body(4) ->
 * BodyResponse.response(1) -> CommonResponse.body_mutation(3) ->
 * BodyMutation.streamed_response(3) -> StreamedBodyResponse{body(1), end_of_stream(2)}.
 */
export function peekAnswer(buf: Buffer): AnswerPeek {
  let member = 0;
  let streamed = false;
  let endOfStream = false;
  let bodyBytes = 0;
  const streamedResponse = (no: number, wt: number, from: number, to: number, value: number): void => {
    if (no === 1 && wt === 2) bodyBytes = to - from;
    else if (no === 2 && wt === 0) endOfStream = value !== 0;
  };
  // BodyMutation is a oneof (body 1, clear_body 2, streamed_response 3): the last member seen wins.
  const mutation = (no: number, wt: number, from: number, to: number): void => {
    if (no === 3 && wt === 2) {
      streamed = true;
      fields(buf, from, to, streamedResponse);
    } else if ((no === 1 && wt === 2) || (no === 2 && wt === 0)) {
      streamed = false;
      endOfStream = false;
      bodyBytes = 0;
    }
  };
  const common = (no: number, wt: number, from: number, to: number): void => {
    if (no === 3 && wt === 2) fields(buf, from, to, mutation);
  };
  const bodyResponse = (no: number, wt: number, from: number, to: number): void => {
    if (no === 1 && wt === 2) fields(buf, from, to, common);
  };
  fields(buf, 0, buf.length, (no, wt, from, to) => {
    if (wt !== 2 || !((no >= 1 && no <= 7) || no === 11)) return;
    if (no !== member) {
      member = no;
      streamed = false;
      endOfStream = false;
      bodyBytes = 0;
    }
    if (no === RESP_REQUEST_BODY || no === RESP_RESPONSE_BODY) fields(buf, from, to, bodyResponse);
  });
  return { member, streamed, endOfStream, bodyBytes };
}

function varintBytes(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/**
 * ProcessingResponse{request_body|response_body: BodyResponse{response: CommonResponse{
 * body_mutation: BodyMutation{streamed_response: StreamedBodyResponse{body, end_of_stream}}}}}.
 */
export function streamedResponse(phase: 'request' | 'response', body: Uint8Array, endOfStream: boolean): Buffer {
  const eos = endOfStream ? [0x10, 0x01] : [];
  // StreamedBodyResponse payload: 0x0a len body [0x10 0x01]
  const streamedLen = 1 + varintBytes(body.length).length + body.length + eos.length;
  const mutationLen = 1 + varintBytes(streamedLen).length + streamedLen; // BodyMutation{3: streamed}
  const commonLen = 1 + varintBytes(mutationLen).length + mutationLen; // CommonResponse{3: body_mutation}
  const bodyRespLen = 1 + varintBytes(commonLen).length + commonLen; // BodyResponse{1: response}
  const top = phase === 'request' ? RESP_REQUEST_BODY : RESP_RESPONSE_BODY;
  const prefix = Buffer.from([
    (top << 3) | 2, ...varintBytes(bodyRespLen),
    (1 << 3) | 2, ...varintBytes(commonLen),
    (3 << 3) | 2, ...varintBytes(mutationLen),
    (3 << 3) | 2, ...varintBytes(streamedLen),
    (1 << 3) | 2, ...varintBytes(body.length),
  ]);
  return Buffer.concat([prefix, body, Buffer.from(eos)]);
}
