/**
 * What the relay needs of its connections to EPPs, and owns: a raw ext_proc
 * call (Envoy's bytes in, the EPP's bytes out), a client that opens calls to an
 * EPP target (transport/epp-client.ts is the one the router runs), and the
 * headers each call carries.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { EppTarget } from '../snapshot/types.js';

/**
 * A raw ext_proc call to an EPP: Envoy's bytes in, the EPP's bytes out (a grpc-js call, or the
 * node:http2 transport's with the same surface).
 */
export interface EppCall {
  write(msg: Buffer): boolean;
  end(): void;
  pause(): unknown;
  resume(): unknown;
  cancel(): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: 'data' | 'end' | 'error', listener: (...args: any[]) => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
}

/** The EPP connections as the relay uses them. */
export interface EppClient {
  /**
   * Resolves once a call to the target can be made (or would fail at once with the
   * transport's reason); rejects when the target cannot be connected to in time or
   * its TLS settings are unusable.
   */
  ready(target: EppTarget): Promise<void>;
  /** Starts a call (after ready()); may throw on unusable TLS settings. Attach an 'error' listener at once. */
  call(target: EppTarget, headers: EppRequestHeaders): EppCall;
}

/** Request metadata that belongs to the Envoy->router hop, never forwarded to the EPP. */
const HOP_METADATA = new Set([
  'content-type',
  'content-length',
  'te',
  'host',
  'user-agent',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'accept-encoding',
]);

/** Request headers of an EPP call, in node:http2's form (`-bin` values base64, repeated values as arrays). */
export type EppRequestHeaders = OutgoingHttpHeaders;

/**
 * The headers to send to the EPP: Envoy's custom metadata (e.g. per-route
 * grpc_initial_metadata), without pseudo, gRPC-reserved and transport keys.
 * Takes Envoy's request headers as received (the http2 transport) or a grpc-js
 * call's metadata in HTTP/2 form, so no Metadata is built on the http2 path.
 */
export function forwardedHeaders(incoming: IncomingHttpHeaders | OutgoingHttpHeaders): EppRequestHeaders {
  const out: EppRequestHeaders = {};
  for (const key in incoming) {
    if (key.charCodeAt(0) === 58 /* ':' */ || key.startsWith('grpc-') || HOP_METADATA.has(key)) continue;
    const value = incoming[key];
    if (value === undefined) continue;
    // node:http2 joins a key's repeated fields with ", "; a binary key's values go out one field each, as before.
    out[key] = typeof value === 'string' && value.includes(',') && key.endsWith('-bin') ? value.split(',').map((v) => v.trim()) : value;
  }
  return out;
}
