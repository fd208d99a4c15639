// Gateways whose cluster for an InferencePool is ORIGINAL_DST keyed on the
// x-gateway-destination-endpoint request header: the picked ip:port is dialled whatever it
// is, pool member or not. Envoy AI Gateway (extension server) builds this cluster, with a
// per-pool ext_proc filter: FULL_DUPLEX_STREAMED both ways by default ("buffered" through the
// aigateway.envoyproxy.io/processing-body-mode annotation), every header and trailer phase
// sent, message_timeout 300 s, failure_mode_allow false whatever the pool's failureMode.
// kgateway's first inference plugin (v1alpha2 pools) did the same with a BUFFERED request
// body, no response phase and a 5 s message timeout.
import { createEnvoyStandin, originalDst } from '../envoy-standin.js';
import type { EnvoyStandin, StandinClientOptions, StandinOptions } from '../standin-types.js';
import { everyPhase } from './filter-modes.js';

export { originalDst };

export type AiGatewayBodyMode = 'duplex' | 'buffered';

/** The ext_proc filter Envoy AI Gateway puts in front of an InferencePool's ORIGINAL_DST cluster. */
export function aiGatewayOptions(bodyMode: AiGatewayBodyMode = 'duplex'): StandinOptions {
  const body = bodyMode === 'buffered' ? 'BUFFERED' : 'FULL_DUPLEX_STREAMED';
  return { ...everyPhase(body, false), messageTimeoutMs: 300_000, hostSelector: originalDst };
}

/** kgateway's ORIGINAL_DST-era inference filter: request headers and a buffered body, nothing of the response. */
export function kgatewayOriginalDstOptions(): StandinOptions {
  return {
    requestHeaderMode: 'SEND',
    requestBodyMode: 'BUFFERED',
    requestTrailerMode: 'SKIP',
    responseHeaderMode: 'SKIP',
    responseBodyMode: 'NONE',
    responseTrailerMode: 'SKIP',
    messageTimeoutMs: 5_000,
    failureModeAllow: false,
    hostSelector: originalDst,
  };
}

export interface OriginalDstGateway {
  run(req: Parameters<EnvoyStandin['run']>[0]): ReturnType<EnvoyStandin['run']>;
  close(): void;
}

/** A gateway of this kind calling the picker at `target` (host:port) with fixed filter options. */
export function createOriginalDstGateway(target: string, options: StandinOptions, copts: StandinClientOptions = {}): OriginalDstGateway {
  const envoy = createEnvoyStandin(target, copts);
  return { run: (req) => envoy.run(req, options), close: () => envoy.close() };
}
