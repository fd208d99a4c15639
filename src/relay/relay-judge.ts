/**
 * Whether the relay forwards a request, and the answer that tells its Envoy.
 * Pure over the token verifier, the current snapshot and the members' answer
 * rules: a token the verifier accepts (signed with a relay key, unexpired,
 * first use) whose member is in the snapshot and whose target that member's
 * `eppAnswers.destinations` allow (the check every EPP answer of that member
 * passes on the data path) is forwarded; anything else is refused.
 */
import type { AnswerRules } from '../protocol/answer-guard.js';
import { DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT } from '../protocol/constants.js';
import { encodeRequestHeaderMutation, withRequestHeaderMutation } from '../protocol/header-mutation.js';
import { destinationHeadersResponse, immediateResponse } from '../protocol/responses.js';
import { RELAY_TOKEN_HEADER, type RelayClaim, type RelayRefusal, type RelayVerdict } from '../credentials/relay-token.js';
import type { RoutingSnapshot } from '../snapshot/types.js';

/** Every reason the relay refuses a request (the label values of mcip_relay_refusals_total). */
export const RELAY_REFUSALS = [
  'missing',
  'malformed',
  'forged',
  'expired',
  'not_yet_valid',
  'replayed',
  'overloaded',
  'unknown_member',
  'destination_denied',
] as const satisfies readonly (RelayRefusal | 'unknown_member' | 'destination_denied')[];
export type RelayRefusalReason = (typeof RELAY_REFUSALS)[number];

export type RelayJudgement =
  | { readonly forward: true; readonly claim: RelayClaim }
  | { readonly forward: false; readonly reason: RelayRefusalReason; readonly detail: string; readonly claim?: RelayClaim };

export interface RelayJudgeDeps {
  readonly verify: (token: string | undefined, nowMs: number) => RelayVerdict;
  readonly snapshot: () => RoutingSnapshot | undefined;
  readonly rules: { of(cluster: string): AnswerRules };
}

const TOKEN_DETAIL: Readonly<Record<RelayRefusal, string>> = {
  missing: `no ${RELAY_TOKEN_HEADER} header: the relay forwards only requests a router chose a destination for`,
  malformed: `the ${RELAY_TOKEN_HEADER} header is not a relay token`,
  forged: 'the relay token is not signed with a relay key',
  expired: 'the relay token has expired',
  not_yet_valid: 'the relay token is valid only later (clock skew past endpointPicker.relay.maxSkewMs?)',
  replayed: 'the relay token was used before',
  overloaded: 'the relay remembers endpointPicker.relay.maxNonces tokens already',
};

export function judgeRelayRequest(token: string | undefined, nowMs: number, deps: RelayJudgeDeps): RelayJudgement {
  const verdict = deps.verify(token, nowMs);
  if (!verdict.ok) return { forward: false, reason: verdict.reason, detail: TOKEN_DETAIL[verdict.reason] };
  const { claim } = verdict;
  const snapshot = deps.snapshot();
  if (snapshot === undefined || !snapshot.clusters.some((c) => c.name === claim.cluster)) {
    const why = snapshot === undefined ? 'no routing snapshot yet' : 'not a member of this router\'s ClusterSet';
    return { forward: false, reason: 'unknown_member', detail: `cluster "${claim.cluster}": ${why}`, claim };
  }
  const finding = deps.rules.of(claim.cluster).destinationRefusal(claim.target);
  if (finding !== undefined) return { forward: false, reason: 'destination_denied', detail: `cluster "${claim.cluster}": ${finding.detail}`, claim };
  return { forward: true, claim };
}

/**
 * Removed from every forwarded request: the token (for this relay only), and any
 * destination kind the request came with (only the claim's kind may choose the
 * TLS cluster). Envoy applies removals before the answer's set_headers.
 */
const STRIP = encodeRequestHeaderMutation({ set: [], add: [], remove: [RELAY_TOKEN_HEADER, DESTINATION_KIND_HEADER] });
const PARENT: Readonly<Record<string, string>> = Object.freeze({ [DESTINATION_KIND_HEADER]: DESTINATION_KIND_PARENT });

/** Answers by kind and target: the targets are a few pods and gateways, each seen on many requests. */
const answers = new Map<string, Buffer>();
/** Past this many distinct targets the remembered answers start over (bounded memory). */
export const ANSWER_CACHE_SIZE = 4096;

/** The request headers answer sending the request to the claim's target (x-mcip-destination-kind: parent for a parent). */
export function relayForwardAnswer(claim: RelayClaim): Buffer {
  const key = `${claim.kind} ${claim.target}`;
  let answer = answers.get(key);
  if (answer === undefined) {
    const headers = destinationHeadersResponse('request_headers', claim.target, claim.kind === 'parent' ? { extraHeaders: PARENT } : {});
    answer = withRequestHeaderMutation(headers, STRIP);
    if (answers.size >= ANSWER_CACHE_SIZE) answers.clear();
    answers.set(key, answer);
  }
  return answer;
}

/** The immediate 403 a refused request gets; its body names the reason. */
export function relayRefusalAnswer(reason: RelayRefusalReason, detail: string): Buffer {
  return immediateResponse({
    status: 403,
    body: { error: { type: 'relay_refused', reason, message: detail } },
    details: `mcip_relay_refused_${reason}`,
  });
}
