/**
 * The per-member rules an EPP's answers are held to (protocol/answer-guard.ts
 * applies them), built once from the config: which headers it may set and which
 * destinations it may name. The destination rules also hold every address the
 * router reads from that member's objects (transport/guarded-lookup.ts judges
 * a host name's addresses by them at connect time).
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { AnswerRules, GuardFinding } from '../protocol/answer-guard.js';
import { eppAnswersSchema, type EppAnswersConfig, type RouterConfig } from './schema.js';

/** A BlockList of CIDRs (validated by the config schema). */
export function blockListOf(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const c of cidrs) {
    const slash = c.lastIndexOf('/');
    const ip = c.slice(0, slash);
    list.addSubnet(ip, Number(c.slice(slash + 1)), isIPv4(ip) ? 'ipv4' : 'ipv6');
  }
  return list;
}

/** "a.b.c.d:port" or "[v6]:port" -> the address and its family; undefined when it is not ip:port. */
export function parseIpPort(endpoint: string): { ip: string; family: 'ipv4' | 'ipv6' } | undefined {
  const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9a-fA-F:.]+)\]):(\d{1,5})$/.exec(endpoint);
  if (m === null) return undefined;
  const port = Number(m[3]);
  if (port < 1 || port > 65535) return undefined;
  if (m[1] !== undefined) return isIPv4(m[1]) ? { ip: m[1], family: 'ipv4' } : undefined;
  return isIPv6(m[2]!) ? ipFamily(m[2]!) : undefined;
}

/** An IP address and its family; an IPv4-mapped IPv6 address reaches the IPv4 host, so it is judged as one. */
export function ipFamily(ip: string): { ip: string; family: 'ipv4' | 'ipv6' } {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped && isIPv4(mapped[1]!)) return { ip: mapped[1]!, family: 'ipv4' };
  return { ip, family: isIPv4(ip) ? 'ipv4' : 'ipv6' };
}

/** How many verdicts a member's rules remember (destinations are its pods: few, and seen on every request). */
export const VERDICT_CACHE_SIZE = 4096;

/** The rules of one member. Verdicts are remembered per endpoint; the memory is bounded and starts over when full. */
export function answerRules(config: EppAnswersConfig): AnswerRules {
  const allow = blockListOf(config.destinations.allow);
  const deny = blockListOf(config.destinations.deny);
  const verdicts = new Map<string, GuardFinding | null>();
  const judge = (endpoint: string): GuardFinding | undefined => {
    const a = parseIpPort(endpoint);
    if (a === undefined) return { reason: 'destination_invalid', detail: `"${endpoint}" is not ip:port` };
    if (!allow.check(a.ip, a.family)) return { reason: 'destination_denied', detail: `${endpoint} is outside destinations.allow` };
    if (deny.check(a.ip, a.family)) return { reason: 'destination_denied', detail: `${endpoint} is inside destinations.deny` };
    return undefined;
  };
  return {
    headers: new Set(config.headers),
    destinationRefusal(endpoint) {
      const known = verdicts.get(endpoint);
      if (known !== undefined) return known ?? undefined;
      const verdict = judge(endpoint);
      if (verdicts.size >= VERDICT_CACHE_SIZE) verdicts.clear();
      verdicts.set(endpoint, verdict ?? null);
      return verdict;
    },
  };
}

const rulesByConfig = new WeakMap<EppAnswersConfig, AnswerRules>();

/**
 * The rules of a member's config (the schema's defaults when it has none), built once
 * per config object: the snapshot builder holds a member's parent Gateway addresses,
 * which come from that member's objects, to the same destination rules as its EPPs.
 */
export function memberRules(config: EppAnswersConfig | undefined): AnswerRules {
  const c = config ?? defaultAnswers();
  let rules = rulesByConfig.get(c);
  if (rules === undefined) rulesByConfig.set(c, (rules = answerRules(c)));
  return rules;
}

let defaults: EppAnswersConfig | undefined;
const defaultAnswers = (): EppAnswersConfig => (defaults ??= eppAnswersSchema.parse({}));

/** Rules by member name; members the map lacks get the schema's defaults. */
export class MemberAnswerRules {
  private readonly byCluster = new Map<string, AnswerRules>();

  constructor(config?: Pick<RouterConfig, 'clusters'>) {
    this.update(config);
  }

  /** The members changed (members from ClusterProfiles): rules for exactly these. */
  update(config?: Pick<RouterConfig, 'clusters'>): void {
    this.byCluster.clear();
    for (const c of config?.clusters ?? []) this.byCluster.set(c.name, memberRules(c.eppAnswers));
  }

  of(cluster: string): AnswerRules {
    return this.byCluster.get(cluster) ?? memberRules(undefined);
  }
}
