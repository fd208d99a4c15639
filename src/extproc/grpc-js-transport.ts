/**
 * What the grpc-js ext_proc server (`extProc.transport: grpc-js`) adds for a
 * server facing the network: TLS through grpc-js's certificate-provider
 * credentials (its HTTP/2 server calls setSecureContext on each new
 * certificate), and the hostile-peer defence on the HTTP/2 servers it creates.
 */
import type { Http2SecureServer, Http2Server } from 'node:http2';
import { experimental, Server, ServerCredentials } from '@grpc/grpc-js';
import { guardHttp2Server, type OnPeerCut } from '../transport/h2-peer-guard.js';
import type { PeerLimits } from '../transport/peer-guard.js';
import type { ServedCertificate } from '../transport/server-tls.js';

type IdentityListener = experimental.IdentityCertificateUpdateListener;

/** Insecure without `cert`; else TLS serving `cert` and each certificate it changes to. */
export function grpcJsCredentials(cert: ServedCertificate | undefined): ServerCredentials {
  if (cert === undefined) return ServerCredentials.createInsecure();
  const listeners = new Set<IdentityListener>();
  const identity = (): { certificate: Buffer; privateKey: Buffer } => ({ certificate: cert.current().cert, privateKey: cert.current().key });
  cert.onChange(() => {
    for (const l of listeners) l(identity());
  });
  const provider: experimental.CertificateProvider = {
    addIdentityCertificateListener(l) {
      listeners.add(l);
      // grpc-js registers its server's watcher only after this returns: an update delivered
      // now would reach no server, and the server would drop every connection.
      queueMicrotask(() => {
        if (listeners.has(l)) l(identity());
      });
    },
    removeIdentityCertificateListener(l) {
      listeners.delete(l);
    },
    addCaCertificateListener() {},
    removeCaCertificateListener() {},
  };
  // grpc-js 1.14 passes its first argument on as the identity provider (its declared
  // parameter names are swapped); no CA provider: clients are not asked for certificates.
  return experimental.createCertificateProviderServerCredentials(provider, null, false);
}

/**
 * Puts the defence on every HTTP/2 server `server` created in its binds (grpc-js keeps them
 * in a private map; there is no public hook). Its listeners run after grpc-js's own: a
 * stream reset at once has been set up by grpc-js before it counts. False when grpc-js no
 * longer has that map.
 */
export function guardGrpcJsServer(server: Server, limits: PeerLimits, onCut: OnPeerCut): boolean {
  const servers = (server as unknown as { http2Servers?: Map<Http2Server | Http2SecureServer, unknown> }).http2Servers;
  if (!(servers instanceof Map)) return false;
  for (const h2 of servers.keys()) guardHttp2Server(h2, limits, onCut);
  return true;
}
