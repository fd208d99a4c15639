/**
 * Address helpers for the snapshot builder: IP literal checks and host:port
 * parsing/joining. Pure string code (no node:net), so the builder stays free
 * of I/O modules.
 */
import type { EppTarget } from './types.js';

const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

export function isIPv4(s: string): boolean {
  return IPV4.test(s);
}

/** Counts the 16-bit groups in a colon-separated run, or -1 if one is malformed. */
function countGroups(run: string, allowV4Tail: boolean): number {
  if (run === '') return 0;
  const parts = run.split(':');
  let groups = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (allowV4Tail && i === parts.length - 1 && p.includes('.')) {
      if (!isIPv4(p)) return -1;
      groups += 2;
    } else if (HEX_GROUP.test(p)) {
      groups += 1;
    } else {
      return -1;
    }
  }
  return groups;
}

/** RFC 4291 text forms, including "::" compression and an embedded IPv4 tail; no zone ids. */
export function isIPv6(s: string): boolean {
  if (s.length < 2 || s.length > 45 || !s.includes(':')) return false;
  const dbl = s.indexOf('::');
  if (dbl === -1) return countGroups(s, true) === 8;
  if (s.indexOf('::', dbl + 1) !== -1) return false;
  const head = countGroups(s.slice(0, dbl), false);
  const tail = countGroups(s.slice(dbl + 2), true);
  return head >= 0 && tail >= 0 && head + tail <= 7;
}

export function isIP(s: string): boolean {
  return isIPv4(s) || isIPv6(s);
}

/** "host:port" with IPv6 hosts in brackets. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export interface HostPort {
  /** Without brackets. */
  readonly host: string;
  readonly port?: number;
}

function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/**
 * Parses "host", "host:port", "[v6]" or "[v6]:port"; a bare IPv6 literal is
 * accepted too. Returns undefined for anything else (empty host, bad port).
 */
export function parseHostPort(s: string): HostPort | undefined {
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 2) return undefined;
    const host = s.slice(1, close);
    const rest = s.slice(close + 1);
    if (rest === '') return { host };
    if (!rest.startsWith(':')) return undefined;
    const port = parsePort(rest.slice(1));
    return port === undefined ? undefined : { host, port };
  }
  if (isIPv6(s)) return { host: s };
  const colon = s.indexOf(':');
  if (colon === -1) return s === '' ? undefined : { host: s };
  if (colon !== s.lastIndexOf(':') || colon === 0) return undefined;
  const port = parsePort(s.slice(colon + 1));
  return port === undefined ? undefined : { host: s.slice(0, colon), port };
}

/**
 * The host name a URL built from `host` dials (WHATWG URL, as node:http, node:http2 and
 * undici read it), or undefined when it is no URL host. A name that spells an IPv4
 * address (a trailing dot, fewer parts, decimal, octal or hex numbers: `127.1`,
 * `2130706433`, `127.0.0.1.`) comes back as that address in dotted form; Node then
 * connects to it without asking a `lookup` hook.
 */
export function urlHostname(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

/**
 * An EPP host name read from the member's objects (a load-balancer hostname): where it
 * resolves is the member's to say, so the router holds the resolved addresses to the
 * member's destination rules when it connects. IPs are judged when the snapshot is built;
 * address overrides are the operator's own.
 */
export function fromMemberDns(target: Pick<EppTarget, 'source' | 'host'>): boolean {
  return target.source !== 'override' && !isIP(target.host.replace(/^\[(.*)\]$/, '$1'));
}
