/**
 * An EPP target's TLS settings as node:http2 connect options: the same policy
 * as the grpc-js channel credentials (src/extproc/epp-client.ts): verified
 * against the CA file or the system roots unless insecureSkipVerify without a
 * CA file, client certificate for mTLS, the same SNI and identity rules.
 */
import type { SecureClientSessionOptions } from 'node:http2';
import { checkServerIdentity } from 'node:tls';
import { identityHostFor, serverNameFor, tlsMaterial } from '../extproc/epp-client.js';
import type { EppTarget } from '../snapshot/types.js';

/** Undefined for a plaintext target (h2c). Throws a RouterError on unusable settings. */
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
