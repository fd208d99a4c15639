/**
 * Gateway API hostname rules: case-insensitive, "*.example.com" matches one or
 * more leading labels but never the bare "example.com".
 */

/** A set of effective hostnames; 'any' when neither route nor listener restricts them. */
export type HostnameSet = 'any' | readonly string[];

export function normalizeHostname(h: string): string {
  const lower = h.toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

export function isWildcard(h: string): boolean {
  return h.startsWith('*.');
}

/** True when `host` (itself possibly a wildcard) lies within `pattern`. */
export function hostnameWithin(pattern: string, host: string): boolean {
  if (pattern === host) return true;
  if (!isWildcard(pattern)) return false;
  const suffix = pattern.slice(1);
  return host.length > suffix.length && host.endsWith(suffix);
}

/**
 * Effective hostnames of a route attached to a listener (Gateway API: route
 * hostnames that do not intersect the listener hostname are ignored; a more
 * specific listener hostname narrows a route wildcard). An empty array means
 * no intersection: the route does not attach to that listener.
 */
export function intersectHostnames(routeHostnames: readonly string[], listenerHostname: string | undefined): HostnameSet {
  const route = routeHostnames.map(normalizeHostname);
  if (listenerHostname === undefined || listenerHostname === '') return route.length === 0 ? 'any' : dedupe(route);
  const listener = normalizeHostname(listenerHostname);
  if (route.length === 0) return [listener];
  const out: string[] = [];
  for (const h of route) {
    if (hostnameWithin(listener, h)) out.push(h);
    else if (hostnameWithin(h, listener)) out.push(listener);
  }
  return dedupe(out);
}

export function unionHostnames(sets: readonly HostnameSet[]): HostnameSet {
  const out: string[] = [];
  for (const s of sets) {
    if (s === 'any') return 'any';
    out.push(...s);
  }
  return dedupe(out);
}

function dedupe(hosts: readonly string[]): string[] {
  return [...new Set(hosts)];
}
