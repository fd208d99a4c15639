import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RelaySigner, RelayVerifier, type RelayClaim, type RelayKeys } from '../../src/credentials/relay-token.js';

const keyA = randomBytes(32);
const keyB = randomBytes(32);
const claim: RelayClaim = { target: '10.1.2.3:8000', kind: 'endpoint', cluster: 'cluster-b' };
const T0 = 1_800_000_000_000;

function pair(signKeys: RelayKeys, verifyKeys: RelayKeys = signKeys, maxNonces = 100) {
  return {
    signer: new RelaySigner(() => signKeys, 10_000),
    verifier: new RelayVerifier({ keys: () => verifyKeys, ttlMs: 10_000, maxSkewMs: 2_000, maxNonces }),
  };
}

describe('relay tokens', () => {
  it('carries the claim from signer to verifier, once', () => {
    const { signer, verifier } = pair({ keys: [keyA] });
    const token = signer.sign(claim, T0);
    expect(verifier.verify(token, T0 + 5)).toEqual({ ok: true, claim, expiresAtMs: T0 + 10_000 });
    expect(verifier.verify(token, T0 + 6)).toEqual({ ok: false, reason: 'replayed' });
  });

  it('gives every token its own nonce', () => {
    const { signer, verifier } = pair({ keys: [keyA] });
    for (let i = 0; i < 50; i++) expect(verifier.verify(signer.sign(claim, T0), T0).ok).toBe(true);
    expect(verifier.remembered).toBe(50);
  });

  it('refuses a token signed with another key, a changed claim and garbage', () => {
    const { verifier } = pair({ keys: [keyA] });
    const other = new RelaySigner(() => ({ keys: [keyB] }), 10_000);
    expect(verifier.verify(other.sign(claim, T0), T0)).toEqual({ ok: false, reason: 'forged' });
    const { signer } = pair({ keys: [keyA] });
    const [v, payload, mac] = signer.sign(claim, T0).split('.');
    const changed = Buffer.from(payload!, 'base64url').toString('utf8').replace('10.1.2.3:8000', '169.254.169.254:80');
    expect(verifier.verify(`${v}.${Buffer.from(changed).toString('base64url')}.${mac}`, T0)).toEqual({ ok: false, reason: 'forged' });
    expect(verifier.verify('10.1.2.3:8000', T0)).toEqual({ ok: false, reason: 'malformed' });
    expect(verifier.verify(undefined, T0)).toEqual({ ok: false, reason: 'missing' });
    expect(verifier.verify(`v1.${'a'.repeat(2000)}.b`, T0)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('accepts tokens of a retiring key while the new one signs', () => {
    const oldSigner = new RelaySigner(() => ({ keys: [keyA] }), 10_000);
    const { signer, verifier } = pair({ keys: [keyB, keyA] });
    expect(verifier.verify(oldSigner.sign(claim, T0), T0).ok).toBe(true);
    expect(verifier.verify(signer.sign(claim, T0), T0).ok).toBe(true);
  });

  it('refuses expired tokens and tokens from beyond the skew bound', () => {
    const { signer, verifier } = pair({ keys: [keyA] });
    expect(verifier.verify(signer.sign(claim, T0), T0 + 12_000)).toEqual({ ok: false, reason: 'expired' });
    expect(verifier.verify(signer.sign(claim, T0), T0 + 11_999).ok).toBe(true);
    expect(verifier.verify(signer.sign(claim, T0 + 2_001), T0)).toEqual({ ok: false, reason: 'not_yet_valid' });
    expect(verifier.verify(signer.sign(claim, T0 + 2_000), T0).ok).toBe(true);
  });

  it('forgets nonces once their tokens expired, and refuses rather than forget early', () => {
    const { signer, verifier } = pair({ keys: [keyA] }, undefined, 3);
    for (let i = 0; i < 3; i++) expect(verifier.verify(signer.sign(claim, T0), T0).ok).toBe(true);
    expect(verifier.verify(signer.sign(claim, T0), T0)).toEqual({ ok: false, reason: 'overloaded' });
    expect(verifier.verify(signer.sign(claim, T0 + 12_001), T0 + 12_001).ok).toBe(true);
    expect(verifier.remembered).toBe(1);
  });

  it('refuses to sign without a key', () => {
    expect(() => new RelaySigner(() => ({ keys: [] }), 10_000).sign(claim, T0)).toThrow(/no relay key/);
  });
});
