/**
 * The Endpoint Picker role on the data path: which multi-cluster pool a stream on a
 * picker port is for (the one bound to the port in the current snapshot), and how its
 * picks are answered (src/protocol/picker-answer.ts):
 * - direct: the destination (the EPP's pick, a remote parent Gateway, a fail-open
 *   endpoint) in the header and envoy.lb;
 * - relay: this pod's relay address in both, and a signed token naming the destination.
 * Either way a client-supplied x-mcip-relay-token never reaches the upstream unchanged.
 */
import type { RelayClaim, RelaySigner } from '../credentials/relay-token.js';
import { emptyHeadersAnswer, pickerHeadersAnswer, routerAnswerDestination } from '../protocol/picker-answer.js';
import { primaryEndpoint } from '../protocol/responses.js';
import type { PickerPool, RoutingSnapshot } from '../snapshot/types.js';
import type { RequestHeadersShaper } from './envoy-writer.js';

/** What relay answers need; absent parts make a relay pool's streams fail with a reason. */
export interface RelayAnswering {
  /** `<POD_IP>:<endpointPicker.relay.port>`. */
  readonly address?: string;
  /** Signs with the first key of endpointPicker.relay.keyFile. */
  readonly signer?: RelaySigner;
  readonly now?: () => number;
}

/** What a picker port's server adds to its streams' deps. */
export interface PickerPortDeps {
  readonly port: number;
  readonly relay: RelayAnswering;
}

/** The multi-cluster pool bound to `port`, if any. */
export function pickerPoolOn(snapshot: RoutingSnapshot, port: number): PickerPool | undefined {
  return snapshot.pickerPools?.get(port);
}

/** Why a pool's streams cannot be answered as it asks, or undefined. */
export function unanswerable(pool: PickerPool, relay: RelayAnswering): string | undefined {
  if (pool.answer !== 'relay') return undefined;
  if (relay.address === undefined) return `InferencePool ${pool.pool.namespace}/${pool.pool.name} asks for relay answers, but POD_IP is not set: the router cannot name its relay`;
  if (relay.signer === undefined) return `InferencePool ${pool.pool.namespace}/${pool.pool.name} asks for relay answers, but endpointPicker.relay.keyFile is not set: the router cannot sign relay tokens`;
  return undefined;
}

/**
 * The shaper of a picker stream's request headers answers. `cluster()`: the member
 * cluster the stream is routed to at the time of the answer (failover changes it).
 */
export function pickerShaper(answer: PickerPool['answer'], relay: RelayAnswering, cluster: () => string | undefined): RequestHeadersShaper {
  return (msg, eppDestination, fromEpp) => {
    let target: { address: string; parent: boolean } | undefined;
    if (fromEpp) target = eppDestination === undefined || eppDestination === '' ? undefined : { address: primaryEndpoint(eppDestination) ?? eppDestination, parent: false };
    else target = routerAnswerDestination(msg);
    if (target === undefined) return pickerHeadersAnswer(msg, undefined);
    const base = fromEpp ? msg : emptyHeadersAnswer();
    if (answer === 'direct') return pickerHeadersAnswer(base, { address: target.address });
    const claim: RelayClaim = { target: target.address, kind: target.parent ? 'parent' : 'endpoint', cluster: cluster() ?? '' };
    const token = relay.signer!.sign(claim, (relay.now ?? Date.now)());
    return pickerHeadersAnswer(base, { address: relay.address!, token });
  };
}
