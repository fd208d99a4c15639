/**
 * The bench's relay hop (bench/lib/relay-exchange.ts): the token is read from a picker
 * port's request-headers answer, and the verifier exchange counts only a "forward" answer
 * as done (through the real relay verifier over a real socket), so refused tokens show as
 * failed exchanges in the Endpoint Picker role cell instead of as cheap successes.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayTokenOf, VerifierClient } from '../../bench/lib/relay-exchange.js';
import { startVerifier } from '../../bench/lib/relay-verifier.js';
import { RelaySigner, type RelayClaim } from '../../src/credentials/relay-token.js';
import { encodeResponse } from '../../src/protocol/codec.js';
import { RELAY_TOKEN_HEADER } from '../../src/protocol/constants.js';

const key = randomBytes(32);
const signer = new RelaySigner(() => ({ keys: [key] }), 10_000);
const forger = new RelaySigner(() => ({ keys: [randomBytes(32)] }), 10_000);
const claim: RelayClaim = { target: '10.1.2.3:8000', kind: 'endpoint', cluster: 'cluster-b' };
let verifier: { address: string; stop(): Promise<void> };
let client: VerifierClient;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcip-bench-relay-'));
  writeFileSync(join(dir, 'key'), `${key.toString('base64')}\n`);
  verifier = await startVerifier(join(dir, 'key'));
  client = new VerifierClient(verifier.address);
});

afterAll(async () => {
  client?.close();
  await verifier?.stop();
});

describe('relayTokenOf', () => {
  const answer = (headers: Record<string, string>) =>
    encodeResponse({
      request_headers: {
        response: { header_mutation: { set_headers: Object.entries(headers).map(([key, v]) => ({ header: { key, raw_value: Buffer.from(v) } })) } },
      },
    });

  it('reads the token a relay answer sets, and nothing from a direct answer', () => {
    expect(relayTokenOf(answer({ 'x-gateway-destination-endpoint': '127.0.0.1:8443', [RELAY_TOKEN_HEADER]: 'tok.en' }))).toBe('tok.en');
    expect(relayTokenOf(answer({ 'x-gateway-destination-endpoint': '10.0.0.1:8000' }))).toBeUndefined();
  });
});

describe('VerifierClient', () => {
  it('is done when the verifier forwards a fresh token', async () => {
    expect(await client.exchange(signer.sign(claim, Date.now()))).toBeUndefined();
  });

  it('fails a forged token and a replayed one', async () => {
    expect(await client.exchange(forger.sign(claim, Date.now()))).toMatch(/refused/);
    const token = signer.sign(claim, Date.now());
    expect(await client.exchange(token)).toBeUndefined();
    expect(await client.exchange(token)).toMatch(/refused/);
  });
});
