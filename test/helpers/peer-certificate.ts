/** The certificate a TLS server presents (not verified), over a connection offering h2 as gRPC clients do. */
import type { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';

export function peerCertificate(host: string, port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ['h2'] }, () => {
      const c = s.getPeerX509Certificate();
      s.destroy();
      if (c) resolve(c);
      else reject(new Error('no certificate'));
    });
    s.on('error', reject);
  });
}
