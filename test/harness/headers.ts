// Header lists and Envoy's header-mutation rules, as the Envoy stand-in applies them.
import { asBuffer, type PbHeaderMap, type PbHeaderMutation } from './protos.js';

/** Ordered header list: [lower-case name, value]; a name may repeat. */
export type HeaderList = Array<[string, string]>;
export type HeaderInput = HeaderList | Record<string, string | string[]>;

export function toHeaderList(input: HeaderInput | undefined): HeaderList {
  if (!input) return [];
  if (Array.isArray(input)) return input.map(([k, v]) => [k.toLowerCase(), v]);
  const out: HeaderList = [];
  for (const [k, v] of Object.entries(input)) {
    for (const one of Array.isArray(v) ? v : [v]) out.push([k.toLowerCase(), one]);
  }
  return out;
}

/** First value of a header (what Envoy's ORIGINAL_DST reads), or undefined. */
export function getHeader(list: HeaderList | undefined, name: string): string | undefined {
  const n = name.toLowerCase();
  return list?.find(([k]) => k === n)?.[1];
}

export function getHeaderAll(list: HeaderList | undefined, name: string): string[] {
  const n = name.toLowerCase();
  return (list ?? []).filter(([k]) => k === n).map(([, v]) => v);
}

export function removeHeader(list: HeaderList, name: string): HeaderList {
  const n = name.toLowerCase();
  return list.filter(([k]) => k !== n);
}

/** Envoy sends header values in raw_value only. */
export function toPbHeaderMap(list: HeaderList): PbHeaderMap {
  return { headers: list.map(([key, v]) => ({ key, raw_value: Buffer.from(v, 'utf8') })) };
}

/** Reads raw_value only, as Envoy and EPPs do: a value-only header reads as empty. */
export function fromPbHeaderMap(map: PbHeaderMap | undefined): HeaderList {
  return (map?.headers ?? []).map((h) => [(h.key ?? '').toLowerCase(), asBuffer(h.raw_value).toString('utf8')]);
}

export interface MutationRules {
  /** Immediate responses use Envoy's permissive checker (routing and x-envoy-* allowed). */
  permissive: boolean;
  /** Response headers: `:status` may be set to a valid code. */
  isResponse: boolean;
}

export type MutationOutcome =
  | { ok: true; headers: HeaderList; skipped: string[] }
  | { ok: false; error: string };

const ROUTING = new Set([':authority', 'host', ':method', ':scheme']);
const NAME_RE = /^:?[a-z0-9!#$%&'*+\-.^_`|~]+$/;

function disallowed(name: string, rules: MutationRules, value?: string): boolean {
  if (rules.permissive) return false;
  if (ROUTING.has(name) || name.startsWith('x-envoy')) return true;
  if (name === ':status') {
    if (!rules.isResponse || value === undefined) return true;
    const code = Number(value);
    return !/^\d{3}$/.test(value) || code < 200 || code > 599;
  }
  if (name === ':path') return rules.isResponse;
  return name.startsWith(':');
}

/**
 * Applies a HeaderMutation the way Envoy's ext_proc filter does (default mutation rules):
 * remove_headers first, then set_headers; only raw_value is read (a value-only mutation sets
 * an empty header); append unset/false overwrites, true appends; append_action and
 * keep_empty_value are ignored; routing headers, x-envoy-* and pseudo-headers are skipped
 * silently (pseudo-headers can never be removed). An invalid header name or value is an error.
 */
export function applyHeaderMutation(
  input: HeaderList,
  mutation: PbHeaderMutation | undefined,
  rules: MutationRules,
): MutationOutcome {
  let headers: HeaderList = input.map(([k, v]) => [k, v]);
  const skipped: string[] = [];
  if (!mutation) return { ok: true, headers, skipped };
  for (const raw of mutation.remove_headers ?? []) {
    const name = raw.toLowerCase();
    if (!NAME_RE.test(name)) return { ok: false, error: `invalid header name to remove: ${raw}` };
    if (name.startsWith(':') || disallowed(name, rules)) {
      skipped.push(`remove ${name}`);
      continue;
    }
    headers = removeHeader(headers, name);
  }
  for (const opt of mutation.set_headers ?? []) {
    const name = (opt.header?.key ?? '').toLowerCase();
    if (!NAME_RE.test(name)) return { ok: false, error: `invalid header name: ${name}` };
    const value = opt.header?.raw_value !== undefined ? asBuffer(opt.header.raw_value).toString('utf8') : '';
    if (/[\r\n\0]/.test(value)) return { ok: false, error: `invalid value for header ${name}` };
    if (disallowed(name, rules, value)) {
      skipped.push(`set ${name}`);
      continue;
    }
    const append = opt.append?.value === true;
    const exists = headers.some(([k]) => k === name);
    if (append || !exists) {
      headers.push([name, value]);
    } else {
      // Overwrite: the first occurrence keeps its position, later ones are dropped.
      const first = headers.findIndex(([k]) => k === name);
      headers = headers.filter(([k], i) => k !== name || i === first);
      headers[first] = [name, value];
    }
  }
  return { ok: true, headers, skipped };
}

export type DestinationParse = { ok: true; address: string } | { ok: false; error: string };

const IPV4_RE = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

function validPort(p: string): boolean {
  return /^\d{1,5}$/.test(p) && Number(p) >= 1 && Number(p) <= 65535;
}

/**
 * ORIGINAL_DST with use_http_header: the value must be exactly one `ip:port` (IPv4) or
 * `[ipv6]:port`. Lists, hostnames, whitespace or a missing port fail to parse.
 */
export function parseDestination(value: string): DestinationParse {
  const bad = (why: string): DestinationParse => ({ ok: false, error: `${why}: ${JSON.stringify(value)}` });
  if (value.includes(',')) return bad('a list is not one ip:port');
  if (value.startsWith('[')) {
    const m = /^\[([0-9a-fA-F:.]+)\]:(\d+)$/.exec(value);
    if (!m || !validPort(m[2]!)) return bad('not [ipv6]:port');
    const ip = m[1]!;
    const groups = ip.split('::');
    if (groups.length > 2 || !/:/.test(ip)) return bad('not an IPv6 address');
    const parts = ip.split(':').filter((g) => g !== '');
    if (parts.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g) && !IPV4_RE.test(g))) return bad('not an IPv6 address');
    if (groups.length === 1 && parts.length !== 8) return bad('not an IPv6 address');
    if (groups.length === 2 && parts.length > 7) return bad('not an IPv6 address');
    return { ok: true, address: value };
  }
  const idx = value.lastIndexOf(':');
  if (idx < 0) return bad('missing port');
  const ip = value.slice(0, idx);
  const port = value.slice(idx + 1);
  const m = IPV4_RE.exec(ip);
  if (!m || m.slice(1).some((o) => Number(o) > 255)) return bad('not an IPv4 address');
  if (!validPort(port)) return bad('invalid port');
  return { ok: true, address: value };
}
