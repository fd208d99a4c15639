/**
 * The destination of an EPP's request headers answer, on both carriers every
 * gateway reads (docs/protocol.md §2, "The destination answer"): the header
 * x-gateway-destination-endpoint (Envoy's ORIGINAL_DST cluster, NGINX Gateway
 * Fabric and agentgateway read it, in raw_value only, under that exact lower-case
 * key) and the envoy.lb dynamic metadata of the same name (Istio's override_host
 * reads only that). An EPP that sets one of them, puts the header's value only in
 * `value`, or sets the two differently would be read differently by each gateway,
 * so the relayed answer carries one destination on both:
 * - the header wins when both are set and name different endpoints (the one the
 *   router's own Envoy routes on): the metadata is replaced and the answer
 *   reported (destination_mismatch); metadata listing the header's endpoint first
 *   and failovers after it is consistent and kept;
 * - a missing carrier is added with the other's value (the header only where the
 *   member's rules let the EPP set it);
 * - a header option that is not canonical (only `value`, or another key case) was
 *   dropped by the reader and is written again as raw_value, append false.
 * Both values were held to the member's rules before this runs. The usual answer
 * (header in raw_value, equal metadata) is relayed as it is.
 */
import type { GuardFinding } from './answer-guard.js';
import { DESTINATION_ENDPOINT_HEADER, LB_METADATA_NAMESPACE } from './constants.js';
import { encodeResponse } from './codec.js';
import { withRequestHeaderMutation } from './header-mutation.js';
import * as F from './response-fields.js';
import { structEntry } from './router-metadata.js';
import { headerOption, primaryEndpoint, type DestinationHeaderMode } from './responses.js';
import { dropField, lenField } from './wire-walk.js';

/** What the reader found of the destination in one request headers answer. */
export interface DestinationFound {
  /** The header's value as the EPP sent it (raw_value, else value), before any list cut. */
  readonly header: string | undefined;
  /** The header option was dropped (not canonical): it must be written again. */
  readonly headerDropped: boolean;
  /** envoy.lb/x-gateway-destination-endpoint as a string, when the EPP set it. */
  readonly metadata: string | undefined;
  /** The envoy.lb Struct as relayed (merged), when the EPP sent one. */
  readonly lbStruct: Buffer | undefined;
  /** The member's rules let the EPP set the header (else it is never added). */
  readonly headerAllowed: boolean;
}

export interface CarriedDestination {
  readonly msg: Buffer;
  /** The answer's destination (header, else metadata), or undefined when it sets none. */
  readonly destination: string | undefined;
  readonly mismatch: GuardFinding | undefined;
}

/** The entries of a destination list without the spaces around them. */
function entries(list: string): string {
  return list.includes(' ') ? list.split(',').map((s) => s.trim()).join(',') : list;
}

/**
 * The metadata names the header's destination: the same entries, or (the header
 * one endpoint) a list that starts with it, the failovers override_host may use
 * (what the router itself relays in `primary` mode).
 */
function consistent(metadata: string, header: string): boolean {
  const m = entries(metadata);
  const h = entries(header);
  const comma = m.indexOf(',');
  return m === h || (comma > 0 && !h.includes(',') && m.slice(0, comma) === h);
}

/** `out` (the relayed answer) with the destination on both carriers. */
export function carryDestination(out: Buffer, d: DestinationFound, mode: DestinationHeaderMode): CarriedDestination {
  const full = d.header ?? d.metadata;
  if (full === undefined) return { msg: out, destination: undefined, mismatch: undefined };
  let msg = out;
  if ((d.header === undefined || d.headerDropped) && d.headerAllowed) {
    const value = mode === 'primary' ? (primaryEndpoint(full) ?? full.trim()) : full;
    msg = withRequestHeaderMutation(msg, encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [headerOption(DESTINATION_ENDPOINT_HEADER, value)] } } } }));
  }
  let mismatch: GuardFinding | undefined;
  if (d.metadata !== full && (d.metadata === undefined || !consistent(d.metadata, full))) {
    if (d.metadata !== undefined) {
      mismatch = {
        reason: 'destination_mismatch',
        detail: `dynamic_metadata ${LB_METADATA_NAMESPACE}/${DESTINATION_ENDPOINT_HEADER} "${d.metadata}" differs from the header "${full}": set to the header's`,
      };
    }
    msg = withMetadataDestination(msg, d.lbStruct, full);
  }
  return { msg, destination: full, mismatch };
}

/**
 * dynamic_metadata with envoy.lb/x-gateway-destination-endpoint set to `value`:
 * the EPP's envoy.lb Struct kept, the entry added after it (a later map entry
 * wins), as the only dynamic_metadata field (the guard kept no other namespace).
 */
function withMetadataDestination(out: Buffer, lbStruct: Buffer | undefined, value: string): Buffer {
  const entry = structEntry(DESTINATION_ENDPOINT_HEADER, lenField(F.STRING_VALUE, Buffer.from(value, 'utf8')));
  const lb = lenField(F.STRUCT_VALUE, lbStruct === undefined ? entry : Buffer.concat([lbStruct, entry]));
  return Buffer.concat([dropField(out, F.DYNAMIC_METADATA), lenField(F.DYNAMIC_METADATA, structEntry(LB_METADATA_NAMESPACE, lb))]);
}
