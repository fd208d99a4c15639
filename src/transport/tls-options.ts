/**
 * An EPP target's TLS names (the SNI and the identity verified), and its TLS
 * settings as node:http2 connect options: the same policy as the grpc-js channel
 * credentials (src/credentials/tls-policy.ts): verified against the CA file or
 * the system roots unless insecureSkipVerify without a CA file, client
 * certificate for mTLS, the same SNI and identity rules.
 */
import type { SecureClientSessionOptions } from 'node:http2';
import { checkServerIdentity } from 'node:tls';
import { tlsMaterial, tlsNames, type TlsNames } from '../credentials/tls-policy.js';
import type { EppTarget } from '../snapshot/types.js';

/** The SNI sent to an EPP when it is not the address's host (an IP: the Service's DNS name). */
export function serverNameFor(target: EppTarget): string | undefined {
  return eppTlsNames(target).sni;
}

/** What a verified certificate must match when it is not the SNI (an IP host). */
export function identityHostFor(target: EppTarget): string | undefined {
  return eppTlsNames(target).verifyHost;
}

function eppTlsNames(target: EppTarget): TlsNames {
  return tlsNames(target.host, target.tls, `${target.service.name}.${target.service.namespace}.svc`);
}

/** Undefined for a plaintext target (h2c). Throws an Error naming the problem on unusable settings. */
export function h2TlsOptions(target: EppTarget, readFile: (path: string) => Buffer): SecureClientSessionOptions | undefined {
  if (!target.tls.enabled) return undefined;
  const { ca, key, cert, verify } = tlsMaterial(target.tls, readFile);
  const options: SecureClientSessionOptions = { ALPNProtocols: ['h2'] };
  if (key !== null && cert !== null) Object.assign(options, { key, cert });
  const sni = serverNameFor(target);
  if (sni !== undefined) options.servername = sni;
  if (!verify) {
    options.rejectUnauthorized = false;
    options.checkServerIdentity = () => undefined;
    return options;
  }
  if (ca !== null) options.ca = ca;
  const verifyHost = identityHostFor(target);
  if (verifyHost !== undefined) options.checkServerIdentity = (_sni, c) => checkServerIdentity(verifyHost, c);
  return options;
}
