/** Config of what the router accepts from a member's EPPs, and the bounds of the ext_proc server. */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

const MIB = 1024 * 1024;

/** "address/prefix", IPv4 or IPv6, with the prefix in range for the family. */
export const cidr = z.string().refine((s) => {
  const slash = s.lastIndexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const prefix = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefix)) return false;
  const max = isIPv4(ip) ? 32 : isIPv6(ip) ? 128 : -1;
  return Number(prefix) <= max;
}, 'must be a CIDR: IPv4 or IPv6 address, "/", prefix length (e.g. 10.0.0.0/8, fd00::/8)');

/** Lower-case HTTP header name (no pseudo-headers: an EPP may never set them). */
const headerName = z
  .string()
  .regex(/^[a-z0-9!#$%&'*+.^_`|~-]+$/, 'must be a lower-case HTTP header name')
  .max(256);

/**
 * Destinations no member may send traffic to unless its config says otherwise: loopback,
 * link-local (the cloud metadata services at 169.254.169.254 and fd00:ec2::254 included),
 * unspecified, multicast and broadcast.
 */
export const DEFAULT_DENIED_DESTINATIONS = [
  '127.0.0.0/8',
  '::1/128',
  '169.254.0.0/16',
  'fe80::/10',
  'fd00:ec2::254/128',
  '0.0.0.0/8',
  '::/96',
  '64:ff9b::/96',
  '64:ff9b:1::/48',
  '224.0.0.0/4',
  'ff00::/8',
  '255.255.255.255/32',
] as const;

/**
 * Request and response headers an EPP may set or remove: the destination header,
 * content-length (EPPs set it when they rewrite the body), W3C trace context, and what
 * GIE / llm-d EPPs document setting (P/D disaggregation, data-parallel and decoder
 * endpoints, endpoint scores, GIE's response-path marker), plus content-type and
 * retry-after on their immediate (error) responses.
 */
export const DEFAULT_EPP_HEADERS = [
  'x-gateway-destination-endpoint',
  'content-length',
  'content-type',
  'retry-after',
  'traceparent',
  'tracestate',
  'x-prefiller-host-port',
  'x-data-parallel-host-port',
  'x-decoder-host-port',
  'x-gateway-destination-endpoint-scores',
  'x-went-into-resp-headers',
] as const;

/**
 * What the router relays from this member's EPPs (everything else is refused or dropped). The
 * destination rules also hold the addresses the router reads from this member's objects: its
 * EPP Services' IPs (snapshot build) and load-balancer hostnames (at connect), its parent Gateways.
 */
export const eppAnswersSchema = z.strictObject({
  destinations: z
    .strictObject({
      /** Every destination (each entry of a list) must be inside one of these CIDRs. */
      allow: z.array(cidr).min(1).default(['0.0.0.0/0', '::/0']),
      /** ... and outside all of these. An answer with a denied destination is refused (an EPP failure). */
      deny: z.array(cidr).default([...DEFAULT_DENIED_DESTINATIONS]),
    })
    .prefault({}),
  /**
   * Header names (lower case) an EPP may set or remove in its headers, body and trailers
   * answers, and may send in an immediate response. Mutations of any other header are
   * dropped from the answer (counted and logged); the rest of the answer is relayed.
   */
  headers: z.array(headerName).default([...DEFAULT_EPP_HEADERS]),
});

export type EppAnswersConfig = z.output<typeof eppAnswersSchema>;

/**
 * Per-connection bounds of every Envoy-facing ext_proc server against one hostile peer
 * (`extProc.peerLimits`). A connection past one is sent GOAWAY (ENHANCE_YOUR_CALM) and closed.
 * A gateway never comes near them: Envoy resets each stream only after it was answered, and
 * NGINX Gateway Fabric opens one connection per request and uses its stream at once.
 */
export const peerLimitsSchema = z.strictObject({
  /** Streams one peer IP's connections together may open and reset before the router answered anything on them (HTTP/2 rapid reset), at once... */
  earlyResetBurst: z.number().int().min(1).default(200),
  /** ...and per second after that (a client cancelling before its pick was answered). */
  earlyResetsPerSecond: z.number().min(0).default(100),
  /** Streams a connection may hold open without sending a message on them. */
  maxUnusedStreams: z.number().int().min(1).default(1_000),
  /** After a cut, new connections from the same IP are closed unserved for this long (a reconnecting attacker gets no fresh burst); 0: never. */
  cutCooldownMs: z.number().int().min(0).default(10_000),
  /** Concurrent streams per connection, advertised in SETTINGS (a client opening more is refused with GOAWAY PROTOCOL_ERROR). */
  maxStreamsPerConnection: z.number().int().min(1).default(10_000),
  /**
   * Peers that are proxies in the router's own pod (the router's own Envoy, a mesh sidecar such as
   * Istio's, which connects from 127.0.0.6) and unix-socket peers: their clients' cancellations arrive
   * as early resets, and one address stands for every client behind them, so their early resets are
   * not counted and no cooldown refuses their address. The unused-stream bound still applies.
   */
  trustedPeers: z.array(cidr).default(['127.0.0.0/8', '::1/128']),
});

export type PeerLimitsConfig = z.output<typeof peerLimitsSchema>;

/** Resource bounds of the ext_proc server (part of the config's `extProc` block). */
export const streamBoundsShape = {
  /** Hostile-peer bounds per connection (see peerLimitsSchema). */
  peerLimits: peerLimitsSchema.prefault({}),
  /** Concurrent ext_proc streams; more are answered with an immediate 503 at once. Match Envoy's circuit breaker max_requests for the router cluster. */
  maxStreams: z.number().int().min(1).default(10_000),
  /** A stream that sends no first message within this time is ended with DEADLINE_EXCEEDED. */
  firstMessageTimeoutMs: z.number().int().min(1).default(10_000),
  /** Request/response body bytes one stream may hold while its EPP has not echoed them (FULL_DUPLEX_STREAMED); past it the request gets a 503. */
  maxHeldBytesPerStream: z.number().int().min(64 * 1024).default(32 * MIB),
  /** The same, summed over every stream of the process; past it the stream that asks for more gets a 503. */
  heldBytesBudget: z.number().int().min(64 * 1024).default(256 * MIB),
};
