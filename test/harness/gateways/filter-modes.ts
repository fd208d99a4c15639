// The ext_proc processing modes the gateways use toward an Endpoint Picker.
import type { StandinOptions } from '../standin-types.js';

/** The GIE reference setting: every header and trailer phase, both bodies FULL_DUPLEX_STREAMED (or BUFFERED). */
export function everyPhase(body: 'FULL_DUPLEX_STREAMED' | 'BUFFERED', failureModeAllow: boolean): StandinOptions {
  return {
    requestHeaderMode: 'SEND',
    requestBodyMode: body,
    requestTrailerMode: 'SEND',
    responseHeaderMode: 'SEND',
    responseBodyMode: body,
    responseTrailerMode: 'SEND',
    failureModeAllow,
  };
}
