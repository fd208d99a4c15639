/**
 * The router's decision as dynamic metadata on the answer that carries it to Envoy:
 * `{"mcip.router": {cluster, pool, route, mode, attempts, outcome}}`, added to an
 * encoded ProcessingResponse's dynamic_metadata. An EPP's own dynamic_metadata (envoy.lb,
 * the only namespace the answer guard lets through) is kept beside it, in one field (a
 * decoder that does not merge repeated message fields sees both). Envoy keeps the namespace
 * when the filter lists it in metadata_options.receiving_namespaces, and access logs read
 * it as %DYNAMIC_METADATA(mcip.router:cluster)%.
 */
import { ROUTER_METADATA_NAMESPACE } from './constants.js';
import * as F from './response-fields.js';
import { dropField, lenField, mergedLen } from './wire-walk.js';

export interface RouterDecision {
  /** Serving cluster; absent when nothing was picked. */
  readonly cluster?: string;
  /** Serving pool, "namespace/name". */
  readonly pool?: string;
  /** Matched HTTPRoute, "namespace/name". */
  readonly route?: string;
  /** 'Endpoint': an EPP (or the router, fail-open) chose the endpoint; 'Parent': the remote cluster's Gateway. */
  readonly mode?: 'Endpoint' | 'Parent';
  /** EPP attempts made for the request. */
  readonly attempts: number;
  /** routed, failed_over, fell_open, parent, no_route, or the router's error outcome. */
  readonly outcome: string;
}

/** The keys the router may set in its namespace, in the order it writes them. */
export const ROUTER_DECISION_KEYS = ['cluster', 'pool', 'route', 'mode', 'attempts', 'outcome'] as const satisfies readonly (keyof RouterDecision)[];

const NS = Buffer.from(ROUTER_METADATA_NAMESPACE, 'utf8');

/** One Struct fields entry: `key` to an encoded google.protobuf.Value. */
export function structEntry(key: string | Buffer, value: Buffer): Buffer {
  const k = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  return lenField(F.STRUCT_FIELDS, Buffer.concat([lenField(F.ENTRY_KEY, k), lenField(F.ENTRY_VALUE, value)]));
}
const entry = structEntry;

function stringValue(s: string): Buffer {
  return lenField(F.STRING_VALUE, Buffer.from(s, 'utf8'));
}

/** google.protobuf.Value number_value: a double, wire type fixed64. */
function numberValue(n: number): Buffer {
  const out = Buffer.allocUnsafe(9);
  out[0] = (F.NUMBER_VALUE << 3) | 1;
  out.writeDoubleLE(n, 1);
  return out;
}

/**
 * Encoded namespace entries by decision: a decision's values come from the routing snapshot and
 * small closed sets, so the same few are encoded again and again. Bounded: cleared when full.
 */
const encoded = new Map<string, Buffer>();
const MAX_ENCODED = 4096;

/** `answer` with the decision appended as dynamic_metadata in the router's namespace. */
export function withRouterDecision(answer: Buffer, d: RouterDecision): Buffer {
  const key = `${d.cluster ?? ''}\0${d.pool ?? ''}\0${d.route ?? ''}\0${d.mode ?? ''}\0${d.attempts}\0${d.outcome}`;
  let ours = encoded.get(key);
  if (ours === undefined) {
    if (encoded.size >= MAX_ENCODED) encoded.clear();
    ours = encodeDecision(d);
    encoded.set(key, ours);
  }
  // One dynamic_metadata field: the answer's own occurrences merged (a Struct's entries concatenate), ours last.
  const theirs = mergedLen(answer, 0, answer.length, F.DYNAMIC_METADATA);
  if (theirs === undefined) return Buffer.concat([answer, lenField(F.DYNAMIC_METADATA, ours)]);
  return Buffer.concat([dropField(answer, F.DYNAMIC_METADATA), lenField(F.DYNAMIC_METADATA, Buffer.concat([theirs, ours]))]);
}

/** The Struct entry `mcip.router` -> the decision. */
function encodeDecision(d: RouterDecision): Buffer {
  const fields: Buffer[] = [];
  if (d.cluster !== undefined) fields.push(entry('cluster', stringValue(d.cluster)));
  if (d.pool !== undefined) fields.push(entry('pool', stringValue(d.pool)));
  if (d.route !== undefined) fields.push(entry('route', stringValue(d.route)));
  if (d.mode !== undefined) fields.push(entry('mode', stringValue(d.mode)));
  fields.push(entry('attempts', numberValue(d.attempts)), entry('outcome', stringValue(d.outcome)));
  return entry(NS, lenField(F.STRUCT_VALUE, Buffer.concat(fields)));
}
