/**
 * The TLS policy of the router's connections to EPPs (ext_proc calls on either
 * transport, health probes): the server certificate is verified against the CA
 * file or the system roots unless insecureSkipVerify is set without a CA file,
 * a client certificate is sent for mTLS, and an IP is never sent as SNI.
 */
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import { credentials, type ChannelCredentials } from '@grpc/grpc-js';
import type { TlsConfig } from '../config/schema.js';

/**
 * Builds the channel credentials for an EPP's TLS settings: the server certificate is
 * verified (CA file or system roots) unless insecureSkipVerify is set without a CA file.
 * Throws an Error naming the problem on unusable settings. `verifyHost`: the name or IP the certificate
 * is verified against when it is not the name sent as SNI (see identityHostFor).
 */
export function channelCredentials(tls: TlsConfig, readFile: (path: string) => Buffer, verifyHost?: string): ChannelCredentials {
  if (!tls.enabled) return credentials.createInsecure();
  const { ca, key, cert, verify } = tlsMaterial(tls, readFile);
  if (!verify) {
    // The member chose to accept any certificate (logged at start): encrypted, not authenticated.
    return credentials.createSsl(null, key, cert, {
      rejectUnauthorized: false,
      checkServerIdentity: () => undefined,
    });
  }
  // Verify against the CA file, or the system roots when no CA file is given.
  if (verifyHost === undefined) return credentials.createSsl(ca, key, cert);
  return credentials.createSsl(ca, key, cert, { checkServerIdentity: (_sni, c) => checkServerIdentity(verifyHost, c) });
}

/** The files of an EPP's TLS settings, and whether the server certificate is verified. Throws an Error naming the problem on unusable settings. */
export function tlsMaterial(
  tls: TlsConfig,
  readFile: (path: string) => Buffer,
): { ca: Buffer | null; key: Buffer | null; cert: Buffer | null; verify: boolean } {
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new Error('EPP TLS: certFile and keyFile must be set together');
  }
  const read = (what: string, path: string | undefined): Buffer | null => {
    if (path === undefined) return null;
    try {
      return readFile(path);
    } catch (err) {
      throw new Error(`EPP TLS: cannot read ${what} ${path}: ${(err as Error).message}`, { cause: err });
    }
  };
  const ca = read('caFile', tls.caFile);
  return { ca, key: read('keyFile', tls.keyFile), cert: read('certFile', tls.certFile), verify: ca !== null || !tls.insecureSkipVerify };
}

/** The TLS names of a channel: the SNI to send instead of the host, and the identity to verify when it is not the SNI. */
export interface TlsNames {
  readonly sni?: string;
  readonly verifyHost?: string;
}

/**
 * The TLS names for a channel to `host` (a name, an IP, or "[v6]"): a configured serverName
 * is sent and verified. An IP is not a valid SNI (RFC 6066; Node 24 warns, Node 26 refuses
 * to connect), so to an IP `ipSni` is sent instead, and a verified certificate must still
 * match the IP (its IP SAN), as when the IP was the server name. A DNS host is left as is.
 */
export function tlsNames(host: string, tls: TlsConfig, ipSni: string): TlsNames {
  if (!tls.enabled) return {};
  if (tls.serverName) return { sni: tls.serverName };
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 0) return {};
  const verifying = tls.caFile !== undefined || !tls.insecureSkipVerify;
  return verifying ? { sni: ipSni, verifyHost: bare } : { sni: ipSni };
}
