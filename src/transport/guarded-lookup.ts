/**
 * A `lookup` for Node's sockets (net, tls, http, http2) that resolves a host name
 * as usual and then refuses to connect when an address it resolved to is one the
 * caller does not allow. The router dials a load-balancer host name read from a
 * member's objects with it, so the member's DNS cannot send the router's own
 * connections (EPP calls, metrics scrapes with a token) to loopback, the cloud
 * metadata service or anything else its destination rules deny.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { answerRules } from '../config/answer-rules.js';
import type { EppAnswersConfig } from '../config/schema.js';
import type { AnswerRules } from '../protocol/answer-guard.js';

/** Why a resolved address may not be dialled (a sentence naming the rule), or undefined when it may. */
export type AddressJudge = (address: string, family: number) => string | undefined;

/** The error a refused address fails the connection with (before any packet is sent to it). */
export class DestinationRefusedError extends Error {
  readonly code = 'EDESTINATIONREFUSED';

  constructor(
    readonly hostname: string,
    readonly address: string,
    readonly why: string,
  ) {
    super(`${hostname} resolved to ${address}, which is refused: ${why}`);
    this.name = 'DestinationRefusedError';
  }
}

/** How a host name is resolved (node:dns lookup's shape, answering every address); tests inject their own. */
export type ResolveName = (hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void) => void;

const systemResolve: ResolveName = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => (err ? callback(err, []) : callback(null, addresses)));
};

/**
 * A lookup that refuses when any address the name resolves to is refused by
 * `judge` (a name that also resolves somewhere refused is not trusted with the
 * rest). Answers in the form asked for (`all` or one address).
 */
export function guardedLookup(judge: AddressJudge, resolve: ResolveName = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, resolved) => {
      if (err) {
        callback(err, options.all ? [] : '', undefined);
        return;
      }
      const list = typeof resolved === 'string' ? [{ address: resolved, family: resolved.includes(':') ? 6 : 4 }] : resolved;
      for (const a of list) {
        const why = judge(a.address, a.family);
        if (why !== undefined) {
          callback(new DestinationRefusedError(hostname, a.address, why), options.all ? [] : '', undefined);
          return;
        }
      }
      if (list.length === 0) {
        const none = Object.assign(new Error(`${hostname} resolved to no address`), { code: 'ENOTFOUND' });
        callback(none, options.all ? [] : '', undefined);
        return;
      }
      if (options.all) callback(null, list);
      else callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/**
 * A judge for guardedLookup: the addresses a host name of cluster `cluster`'s objects
 * resolves to, dialled at `port`, held to that member's destination rules.
 */
export function destinationJudge(rules: AnswerRules, cluster: string, port: number): AddressJudge {
  return (address, family) => {
    const finding = rules.destinationRefusal(family === 6 ? `[${address}]:${port}` : `${address}:${port}`);
    return finding === undefined ? undefined : `${finding.detail} (clusters[${cluster}].eppAnswers.destinations)`;
  };
}

/**
 * A lookup for connections to a host name from cluster `cluster`'s objects at `port`: every
 * address it resolves to is held to `destinations` (the member's `eppAnswers.destinations`).
 */
export function destinationsLookup(destinations: EppAnswersConfig['destinations'], cluster: string, port: number, resolve?: ResolveName): LookupFunction {
  return guardedLookup(destinationJudge(answerRules({ destinations, headers: [] }), cluster, port), resolve);
}
