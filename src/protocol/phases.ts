/**
 * The six ext_proc phases in one table: what Envoy sends in each
 * (ProcessingRequest member), what answers it (ProcessingResponse member), its
 * direction and kind. Indexed in the order Envoy expects answers: request
 * headers, body, trailers, then the response path's three.
 */
import type { RequestPhase } from './messages.js';

export type PhaseName = RequestPhase;
export type Direction = 'request' | 'response';
export type PhaseKind = 'headers' | 'body' | 'trailers';

export interface Phase {
  readonly name: PhaseName;
  readonly index: number;
  readonly direction: Direction;
  readonly kind: PhaseKind;
  /** Its member number in ProcessingRequest.request. */
  readonly requestField: number;
  /** Its member number in ProcessingResponse.response. */
  readonly responseField: number;
}

export const REQUEST_HEADERS = 0;
export const REQUEST_BODY = 1;
export const REQUEST_TRAILERS = 2;
export const RESPONSE_HEADERS = 3;
export const RESPONSE_BODY = 4;
export const RESPONSE_TRAILERS = 5;

export const PHASES: readonly Phase[] = [
  { name: 'request_headers', index: REQUEST_HEADERS, direction: 'request', kind: 'headers', requestField: 2, responseField: 1 },
  { name: 'request_body', index: REQUEST_BODY, direction: 'request', kind: 'body', requestField: 4, responseField: 3 },
  { name: 'request_trailers', index: REQUEST_TRAILERS, direction: 'request', kind: 'trailers', requestField: 6, responseField: 5 },
  { name: 'response_headers', index: RESPONSE_HEADERS, direction: 'response', kind: 'headers', requestField: 3, responseField: 2 },
  { name: 'response_body', index: RESPONSE_BODY, direction: 'response', kind: 'body', requestField: 5, responseField: 4 },
  { name: 'response_trailers', index: RESPONSE_TRAILERS, direction: 'response', kind: 'trailers', requestField: 7, responseField: 6 },
];

/** A phase's index by its name. */
export const PHASE_INDEX: Readonly<Record<PhaseName, number>> = {
  request_headers: REQUEST_HEADERS,
  request_body: REQUEST_BODY,
  request_trailers: REQUEST_TRAILERS,
  response_headers: RESPONSE_HEADERS,
  response_body: RESPONSE_BODY,
  response_trailers: RESPONSE_TRAILERS,
};

function byField(field: (p: Phase) => number): readonly (Phase | undefined)[] {
  const out: (Phase | undefined)[] = [];
  for (const p of PHASES) out[field(p)] = p;
  for (let i = 0; i < out.length; i++) out[i] ??= undefined;
  return out;
}

/** The phase of a ProcessingRequest member number (undefined: not a phase). */
export const PHASE_BY_REQUEST_FIELD = byField((p) => p.requestField);
/** The phase of a ProcessingResponse member number (undefined: not a phase). */
export const PHASE_BY_RESPONSE_FIELD = byField((p) => p.responseField);
