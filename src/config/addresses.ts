/** Names and addresses as the router config spells them. */
import { isIPv4, isIPv6 } from 'node:net';
import { z } from 'zod';

export const objectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lower-case RFC 1123 name');

/** "host:port", "[v6]:port", or a unix socket "unix:/path" / "unix:///path". */
export const listenAddress = z
  .string()
  .min(1)
  .refine(
    (s) =>
      s.startsWith('unix:')
        ? s.replace(/^unix:(\/\/)?/, '') !== ''
        : /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(s) && Number(s.slice(s.lastIndexOf(':') + 1)) <= 65535,
    'must be host:port (port 0-65535), [ipv6]:port or unix:/path/to.sock',
  );

/** "host:port" or a bare host (the port then comes from the referencing object). */
export const targetAddress = z
  .string()
  .min(1)
  .refine((s) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]/]+)(?::(\d{1,5}))?$/.exec(s);
    return m !== null && (m[2] === undefined || (Number(m[2]) >= 1 && Number(m[2]) <= 65535));
  }, 'must be host, host:port or [ipv6]:port (port 1-65535)');

export const addressOverrideSchema = z.strictObject({
  namespace: objectName,
  name: objectName,
  address: targetAddress,
});

/** "ip:port" or "[ipv6]:port": what Envoy's ORIGINAL_DST cluster accepts in the destination header. */
export const ipPort = z
  .string()
  .refine((s) => {
    const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9a-fA-F:.]+)\]):(\d{1,5})$/.exec(s);
    if (m === null || Number(m[3]) < 1 || Number(m[3]) > 65535) return false;
    return m[1] !== undefined ? isIPv4(m[1]) : isIPv6(m[2]!);
  }, 'must be ip:port or [ipv6]:port (Envoy ORIGINAL_DST takes IP addresses only)');

/** A listen address reachable only from this host (network namespace): 127.0.0.0/8, ::1, localhost or a unix socket. */
export function isLoopbackListen(listen: string): boolean {
  if (listen.startsWith('unix:')) return true;
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host === '::1') return true;
  return isIPv4(host) && host.startsWith('127.');
}
