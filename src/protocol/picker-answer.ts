/**
 * The request headers answer of the Endpoint Picker role, as every gateway reads it:
 * the destination in the x-gateway-destination-endpoint header (raw_value, append
 * false) and the same value in envoy.lb dynamic metadata; never x-mcip-destination-kind
 * (only the router's own Envoy reads it). A relay answer adds x-mcip-relay-token; any
 * other answer removes a client-supplied one. An answer without a destination removes a
 * client-supplied x-gateway-destination-endpoint: an ORIGINAL_DST gateway (Envoy AI
 * Gateway) would otherwise send the request wherever the client named.
 *
 * The answer an EPP sent keeps what the guard let through (its other header mutations,
 * its CommonResponse) with this router's fragment appended (Envoy merges repeated
 * message fields: set_headers concatenate and the later overwrite wins); its
 * dynamic_metadata is replaced by the envoy.lb entry naming the destination.
 */
import { encodeResponse, decodeResponse, headerValue } from './codec.js';
import { DESTINATION_ENDPOINT_HEADER, DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT, LB_METADATA_NAMESPACE, RELAY_TOKEN_HEADER } from './constants.js';
import * as F from './response-fields.js';
import { headerOption } from './responses.js';
import { toStruct } from './struct.js';
import { dropField } from './wire-walk.js';


export interface PickerDestination {
  /** What the gateway is told to send the request to: the destination itself, or a relay pod. */
  readonly address: string;
  /** Set on relay answers: the token naming the real destination. */
  readonly token?: string;
}

/** Appended to an answer without a destination (Envoy applies removals before the answer's set_headers). */
const NO_DESTINATION = encodeResponse({ request_headers: { response: { header_mutation: { remove_headers: [DESTINATION_ENDPOINT_HEADER, RELAY_TOKEN_HEADER] } } } });

/**
 * `answer` (a request headers answer) routed to `to`, or, without a destination,
 * stripped of any client-supplied destination header and relay token.
 */
export function pickerHeadersAnswer(answer: Buffer, to: PickerDestination | undefined): Buffer {
  if (to === undefined) return Buffer.concat([answer, NO_DESTINATION]);
  const setHeaders = [headerOption(DESTINATION_ENDPOINT_HEADER, to.address)];
  if (to.token !== undefined) setHeaders.push(headerOption(RELAY_TOKEN_HEADER, to.token));
  const fragment = encodeResponse({
    request_headers: {
      response: {
        header_mutation: { set_headers: setHeaders, remove_headers: to.token === undefined ? [RELAY_TOKEN_HEADER] : [] },
        clear_route_cache: true,
      },
    },
    dynamic_metadata: toStruct({ [LB_METADATA_NAMESPACE]: { [DESTINATION_ENDPOINT_HEADER]: to.address } }),
  });
  return Buffer.concat([dropField(answer, F.DYNAMIC_METADATA), fragment]);
}

/** The destination of a request headers answer the router built itself (responses.ts), and whether it is a parent Gateway. */
export function routerAnswerDestination(answer: Buffer): { readonly address: string; readonly parent: boolean } | undefined {
  const options = decodeResponse(answer).request_headers?.response?.header_mutation?.set_headers ?? [];
  const headers = options.flatMap((o) => (o.header ? [o.header] : []));
  const address = headerValue(headers, DESTINATION_ENDPOINT_HEADER);
  if (address === undefined || address === '') return undefined;
  const kind = headerValue(headers, DESTINATION_KIND_HEADER);
  return { address, parent: kind === DESTINATION_KIND_PARENT };
}

/** A request headers answer with nothing in it (the router's CONTINUE). */
export function emptyHeadersAnswer(): Buffer {
  return encodeResponse({ request_headers: {} });
}
