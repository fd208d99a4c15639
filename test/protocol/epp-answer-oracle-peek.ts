// The previous protobufjs "peek" at an EPP answer (member, streamed_response, end_of_stream,
// whether the rules judge it), kept as part of the reference the differential fuzz
// compares readEppAnswer against (epp-answer-oracle.ts). Not used by the router.
import protobuf from 'protobufjs';
import type { ResponseCase } from '../../src/protocol/codec.js';
import { lastPathLength } from './epp-answer-oracle-wire.js';

const RESPONSE_CASES: readonly ResponseCase[] = [
  'none', 'request_headers', 'response_headers', 'request_body', 'response_body',
  'request_trailers', 'response_trailers', 'immediate_response',
  'none', 'none', 'none', 'streamed_immediate_response',
];

const LEN = 2;
const VARINT = 0;

export interface ResponsePeek {
  case: ResponseCase;
  /** A body response whose body_mutation is a streamed_response. */
  streamed: boolean;
  /** That streamed_response's end_of_stream. */
  endOfStream: boolean;
  /**
   * The message can change something besides body bytes (see answer-guard.ts): a headers,
   * trailers or immediate answer, dynamic_metadata, or a body answer with a header mutation
   * or added trailers. A plain body echo is false.
   */
  guard: boolean;
}

/** Reads a field tag; field number 0 is malformed (as wire-walk.ts and Envoy's parser have it). */
function readTag(r: protobuf.Reader): number {
  const tag = r.uint32();
  if (tag >>> 3 === 0) throw new RangeError('ext_proc: malformed message (field number 0)');
  return tag;
}

/** Reads the last occurrence of bool field `no` in the message at [r.pos, end); leaves r.pos at `end`. */
function readBool(r: protobuf.Reader, end: number, no: number): boolean | undefined {
  let found: boolean | undefined;
  while (r.pos < end) {
    const tag = readTag(r);
    if (tag >>> 3 === no && (tag & 7) === VARINT) found = r.bool();
    else r.skipType(tag & 7);
  }
  checkEnd(r, end);
  return found;
}

/**
 * Calls `atLeaf(leafEnd)` (with r.pos at the leaf's payload) for every
 * occurrence of the nested length-delimited field `path` in [r.pos, end).
 * `atLeaf` must leave r.pos at `leafEnd`. Leaves r.pos at `end`.
 */
function descend(r: protobuf.Reader, end: number, path: readonly number[], atLeaf: (leafEnd: number) => void): void {
  while (r.pos < end) {
    const tag = readTag(r);
    const wireType = tag & 7;
    if (tag >>> 3 === path[0] && wireType === LEN) {
      const innerEnd = innerLimit(r);
      if (path.length === 1) atLeaf(innerEnd);
      else descend(r, innerEnd, path.slice(1), atLeaf);
    } else {
      r.skipType(wireType);
    }
  }
  checkEnd(r, end);
}

function checkEnd(r: protobuf.Reader, end: number): void {
  if (r.pos !== end) throw new RangeError('ext_proc: malformed message (field overruns its parent)');
}

function innerLimit(r: protobuf.Reader): number {
  const len = r.uint32();
  const end = r.pos + len;
  if (end > r.len) throw new RangeError('ext_proc: malformed message (length beyond end)');
  return end;
}

/** ProcessingResponse.dynamic_metadata. */
const RESPONSE_DYNAMIC_METADATA = 8;

/** Which member of ProcessingResponse.response is set; for body responses, the streamed_response flags. */
export function peekResponse(buf: Uint8Array): ResponsePeek {
  const r = protobuf.Reader.create(buf);
  let result: ResponsePeek = { case: 'none', streamed: false, endOfStream: false, guard: false };
  let metadata = false;
  while (r.pos < r.len) {
    const tag = readTag(r);
    const no = tag >>> 3;
    const wireType = tag & 7;
    const c = RESPONSE_CASES[no];
    if (c !== undefined && c !== 'none' && wireType === LEN) {
      const end = innerLimit(r);
      const same = result.case === c;
      if (c === 'request_body' || c === 'response_body') {
        result = peekBody(r, end, c, same ? result : undefined);
      } else {
        r.pos = end;
        result = { case: c, streamed: false, endOfStream: false, guard: true };
      }
    } else {
      if (no === RESPONSE_DYNAMIC_METADATA) metadata = true;
      r.skipType(wireType);
    }
  }
  if (metadata && !result.guard) result = { ...result, guard: true };
  return result;
}

/**
 * BodyResponse.response(1) -> CommonResponse: body_mutation(3) -> BodyMutation.streamed_response(3)
 * -> StreamedBodyResponse.end_of_stream(2); header_mutation(2) or trailers(4) make it a guarded answer.
 * `previous`: the same member seen before (repeated occurrences merge).
 */
function peekBody(r: protobuf.Reader, end: number, c: 'request_body' | 'response_body', previous: ResponsePeek | undefined): ResponsePeek {
  let streamed = previous?.streamed ?? false;
  let eos = previous?.endOfStream ?? false;
  let guard = previous?.guard ?? false;
  while (r.pos < end) {
    const tag = readTag(r);
    if (tag >>> 3 !== 1 || (tag & 7) !== LEN) {
      r.skipType(tag & 7);
      continue;
    }
    const commonEnd = innerLimit(r);
    while (r.pos < commonEnd) {
      const t = readTag(r);
      const n = t >>> 3;
      if ((t & 7) !== LEN) {
        r.skipType(t & 7);
        continue;
      }
      if (n === 2 || n === 4) guard = true;
      if (n !== 3) {
        r.skipType(LEN);
        continue;
      }
      descend(r, innerLimit(r), [3], (leafEnd) => {
        streamed = true;
        eos = readBool(r, leafEnd, 2) ?? eos;
      });
    }
    checkEnd(r, commonEnd);
  }
  checkEnd(r, end);
  return { case: c, streamed, endOfStream: eos, guard };
}

/** ProcessingResponse.request_body(3) / response_body(4) -> BodyResponse.response(1) -> body_mutation(3) -> streamed_response(3) -> body(1). */
const STREAMED_BODY_PATHS = { request_body: [3, 1, 3, 3, 1], response_body: [4, 1, 3, 3, 1] } as const;

/** The length of a body answer's streamed_response body (0 when there is none), as Envoy reads it. Throws on malformed input. */
export function streamedResponseLength(buf: Uint8Array, phase: 'request_body' | 'response_body'): number {
  return Math.max(0, lastPathLength(buf, STREAMED_BODY_PATHS[phase]));
}
