/**
 * A route's RequestHeaderModifier as an ext_proc request headers answer
 * fragment, and how it joins the answer that goes to Envoy.
 *
 * The fragment is a ProcessingResponse holding only request_headers ->
 * response -> header_mutation. Envoy parses answers with protobuf's merge
 * semantics: a second occurrence of a message field merges into the first and
 * repeated fields concatenate, so the fragment appended to any encoded request
 * headers answer (an EPP's, relayed as it is, or the router's own) adds its
 * headers to that answer's mutation without decoding or re-encoding it.
 * Envoy applies remove_headers before set_headers, reads only raw_value, and
 * appends when `append` is true, overwrites when it is false.
 */
import type { HeaderModifier } from '../model/types.js';
import { encodeResponse } from './codec.js';
import { headerOption } from './responses.js';

export function encodeRequestHeaderMutation(m: HeaderModifier): Buffer {
  const setHeaders = m.set.map((h) => headerOption(h.name, h.value));
  for (const h of m.add) setHeaders.push({ ...headerOption(h.name, h.value), append: { value: true } });
  return encodeResponse({ request_headers: { response: { header_mutation: { set_headers: setHeaders, remove_headers: [...m.remove] } } } });
}

/** `answer` (an encoded request headers answer) with `fragment` (from {@link encodeRequestHeaderMutation}) merged in by Envoy. */
export function withRequestHeaderMutation(answer: Buffer, fragment: Buffer): Buffer {
  return Buffer.concat([answer, fragment]);
}
