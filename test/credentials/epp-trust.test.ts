// The certificate failures Node's TLS client reports, over real sockets with certificates
// generated here: each is recognised as an untrusted certificate; other failures are not.
import { createServer, type Server } from 'node:tls';
import { connect } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eppTrustHint, untrustedCertificate } from '../../src/credentials/epp-trust.js';
import { createTestCa, selfSignedLeaf, type TestCa } from '../helpers/pki.js';

let ca: TestCa;
const servers: Server[] = [];
beforeAll(() => {
  ca = createTestCa('trust CA');
});
afterAll(() => {
  for (const s of servers) s.close();
  ca.remove();
});

async function serve(cert: Buffer, key: Buffer): Promise<number> {
  const server = createServer({ cert, key }, (s) => s.end());
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

function dialError(port: number, o: { ca?: Buffer; servername?: string } = {}): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port, servername: o.servername ?? 'epp.inference.svc', ...(o.ca ? { ca: o.ca } : {}) });
    s.on('secureConnect', () => {
      s.destroy();
      resolve('connected');
    });
    s.on('error', (e) => resolve(e.message));
  });
}

describe('untrustedCertificate', () => {
  it('recognises a self-signed certificate, an unknown issuer and a name mismatch', async () => {
    const self = selfSignedLeaf('Inference Ext', ca.dir);
    const selfSigned = await dialError(await serve(self.cert, self.key));
    expect(selfSigned).toMatch(/self[- ]signed/);
    const leaf = ca.leaf('epp', ['DNS:epp.inference.svc']);
    const port = await serve(leaf.cert, leaf.key);
    const unknownIssuer = await dialError(port);
    const wrongName = await dialError(port, { ca: ca.cert, servername: 'other.inference.svc' });
    for (const m of [selfSigned, unknownIssuer, wrongName]) expect(untrustedCertificate(m), m).toBe(true);
    // Trusted: connects.
    expect(await dialError(port, { ca: ca.cert })).toBe('connected');
  });

  it('does not take a refused connection or a missing message for a certificate failure', () => {
    expect(untrustedCertificate('connect ECONNREFUSED 127.0.0.1:9002')).toBe(false);
    expect(untrustedCertificate('14 UNAVAILABLE: No connection established. Last error: read ECONNRESET')).toBe(false);
    expect(untrustedCertificate(undefined)).toBe(false);
  });

  it('an expired certificate from the trusted CA (an EPP that kept serving it past its renewal): untrusted, and the hint says restart, not trust', async () => {
    const port = await serve(...((l) => [l.cert, l.key] as const)(ca.expiredLeaf('epp', ['DNS:epp.inference.svc'])));
    const expired = await dialError(port, { ca: ca.cert });
    expect(expired).toMatch(/certificate has expired/);
    expect(untrustedCertificate(expired)).toBe(true);
    const hint = eppTrustHint('cluster-b', expired);
    expect(hint).toMatch(/outside its validity period.*restart it/);
    expect(hint).not.toMatch(/insecureSkipVerify/);
  });

  it('the hint names both ways to trust an EPP', () => {
    expect(eppTrustHint('cluster-b', 'self-signed certificate')).toMatch(/cluster cluster-b: epp\.tls\.caFile.*credentials\.eppTls.*epp\.tls\.insecureSkipVerify: true/);
  });
});
