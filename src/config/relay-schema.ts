/**
 * `endpointPicker.relay`: how a router in the Endpoint Picker role hands a
 * gateway that only dials its pool's own pods (Istio, agentgateway) the
 * destination it chose. The gateway is answered with a relay (the router pod's
 * Envoy, envoy/relay.yaml, listening on `port`); the real destination travels in
 * a signed token the relay's verifier (listen.relay, src/relay/) checks. The
 * signing router and the verifying relay read the same key file.
 */
import { z } from 'zod';

export const relaySchema = z.strictObject({
  /** The relay listener of the router pod's Envoy: must be one of the multi-cluster pool's targetPorts. */
  port: z.number().int().min(1).max(65535).default(8443),
  /**
   * Shared HMAC keys, one base64 key (>= 32 bytes decoded) per line: the first signs, every one verifies;
   * re-read on change. Required by relay answers (to sign) and by listen.relay (to verify).
   */
  keyFile: z.string().min(1).optional(),
  /** How long a token is valid after the router signed it (the gateway forwards it to a relay within that time). */
  tokenTtlMs: z.number().int().min(100).max(300_000).default(10_000),
  /** Clock difference tolerated between the signing router and the verifying relay. */
  maxSkewMs: z.number().int().min(0).max(60_000).default(2_000),
  /**
   * Nonces of accepted tokens the verifier remembers at once (each until its token expires, so
   * about the requests of tokenTtlMs + maxSkewMs); past it tokens are refused ('overloaded')
   * rather than a replay let through. 100,000 holds ~8,000 requests/s per relay at the defaults.
   */
  maxNonces: z.number().int().min(1).max(10_000_000).default(100_000),
});

export type RelayConfig = z.output<typeof relaySchema>;
