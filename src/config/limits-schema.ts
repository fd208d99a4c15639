/**
 * Bounds on untrusted input that are not tied to one member: tenants'
 * HTTPRoute regular expressions, the admin HTTP server's connections, and
 * manifest file sizes. Part of the router config schema (schema.ts).
 */
import { z } from 'zod';

const KIB = 1024;
const MIB = 1024 * KIB;

/** HTTPRoute RegularExpression matches (path, headers, query params), run by RE2 (linear time). */
export const routeRegexSchema = z.strictObject({
  /** Longest pattern accepted; a longer one leaves its match out, with the reason. */
  maxLength: z.number().int().min(1).max(64 * KIB).default(1024),
  /** Largest compiled RE2 program (instructions); what a match may cost per input character. */
  maxProgramSize: z.number().int().min(10).max(100_000).default(200),
  /** A path, header or query value longer than this never matches a RegularExpression. */
  maxInputLength: z.number().int().min(1).default(4 * KIB),
});

export const routesSchema = z.strictObject({
  regex: routeRegexSchema.prefault({}),
  /**
   * Request header names (lower case) an HTTPRoute RequestHeaderModifier may set, add or
   * remove: the names the Envoy in front of the router lets an ext_proc answer change (its
   * ext_proc mutation_rules). Envoy silently ignores any other mutation, so a modifier naming
   * another header refuses its rule instead of being dropped. The shipped Envoy configs let
   * none through: list a name here and in their allow_expression together.
   */
  requestHeaders: z
    .array(z.string().regex(/^[a-z0-9!#$%&'*+\-.^_`|~]+$/, 'a lower-case header name'))
    .default([]),
});

/** The admin HTTP server (listen.admin): bounds so that no client can hold it or the process. */
export const adminServerSchema = z.strictObject({
  /** Concurrent TCP connections; more are closed at once. */
  maxConnections: z.number().int().min(1).default(64),
  /** Time a client has to send a request's headers. */
  headersTimeoutMs: z.number().int().min(100).default(5_000),
  /** Time a client has to send a whole request. */
  requestTimeoutMs: z.number().int().min(100).default(10_000),
  /** Idle keep-alive connections are closed after this. */
  keepAliveTimeoutMs: z.number().int().min(100).default(5_000),
  /** Largest request header block; larger gets 431. */
  maxHeaderBytes: z.number().int().min(1 * KIB).max(1 * MIB).default(16 * KIB),
});

/** Largest manifest file read; a larger one is rejected naming the file, and the last good objects stay. */
export const manifestMaxFileBytes = z.number().int().min(1 * KIB).default(4 * MIB);
