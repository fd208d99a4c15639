import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate } from '../../src/credentials/self-signed.js';
import { timeWork } from '../helpers/work-time.js';

describe('selfSignedCertificate', () => {
  it('is a self-issued EC P-256 server certificate for the names given, valid from now', () => {
    const now = new Date('2026-11-28T07:00:00Z');
    const { cert, key } = selfSignedCertificate({ commonName: 'mcip-router.llm.svc', dnsNames: ['mcip-router.llm.svc', 'mcip-router.llm.svc.cluster.local'], now, days: 30 });
    const x = new X509Certificate(cert);
    expect(x.subject).toBe('O=mcip-router\nCN=mcip-router.llm.svc');
    expect(x.issuer).toBe(x.subject);
    expect(x.verify(x.publicKey)).toBe(true);
    expect(x.subjectAltName).toBe('DNS:mcip-router.llm.svc, DNS:mcip-router.llm.svc.cluster.local');
    expect(x.checkHost('mcip-router.llm.svc.cluster.local')).toBe('mcip-router.llm.svc.cluster.local');
    expect(x.checkHost('other.llm.svc')).toBeUndefined();
    expect(x.ca).toBe(false);
    expect(x.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']); // serverAuth
    expect(new Date(x.validFrom).getTime()).toBeLessThanOrEqual(now.getTime());
    expect(new Date(x.validTo).getTime()).toBe(now.getTime() + 30 * 86_400_000 - (now.getTime() % 1000));
    expect(x.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
    expect(x.checkPrivateKey(createPrivateKey(key))).toBe(true);
    expect(() => createSecureContext({ cert, key })).not.toThrow();
  });

  it('no names: no subjectAltName; a fresh key and serial each time; cheap enough to make at start', () => {
    const t = timeWork(() => [selfSignedCertificate({ commonName: 'a', dnsNames: [] }), selfSignedCertificate({ commonName: 'a', dnsNames: [] })]);
    const [a, b] = t.result.map((c) => new X509Certificate(c.cert));
    expect(a!.subjectAltName).toBeUndefined();
    expect(a!.serialNumber).not.toBe(b!.serialNumber);
    expect(a!.publicKey.export({ format: 'jwk' })).not.toEqual(b!.publicKey.export({ format: 'jwk' }));
    expect(t.ms).toBeLessThan(500);
  });

  it('after 2049 the validity is a GeneralizedTime', () => {
    const x = new X509Certificate(selfSignedCertificate({ commonName: 'a', dnsNames: [], now: new Date('2049-12-01T00:00:00Z'), days: 60 }).cert);
    expect(new Date(x.validTo).toISOString()).toBe('2050-01-30T00:00:00.000Z');
  });
});
