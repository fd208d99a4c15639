// TLS to EPPs with certificates generated here, over real sockets: verification by
// default, the server name checked, client certificates, and rotated files used by
// the next stream without a restart.
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Metadata } from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tlsSchema } from '../../src/config/schema.js';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { EppClientPool } from '../../src/transport/epp-client.js';
import type { EppTarget } from '../../src/snapshot/types.js';
import { createTestCa, type TestCa } from '../helpers/pki.js';
import { scenarioTransport } from '../extproc/scenario.js';
import { startRecordingEpp, type RecordingEpp } from '../helpers/recording-epp.js';

let serverCa: TestCa;
let clientCa: TestCa;
let otherCa: TestCa;
const epps: RecordingEpp[] = [];
const pools: EppClientPool[] = [];
const files: CredentialFiles[] = [];

beforeAll(() => {
  serverCa = createTestCa('server CA');
  clientCa = createTestCa('client CA', serverCa.dir);
  otherCa = createTestCa('other CA', serverCa.dir);
});
afterAll(() => serverCa.remove());
afterEach(() => {
  for (const p of pools.splice(0)) p.close();
  for (const e of epps.splice(0)) e.stop();
  for (const f of files.splice(0)) f.close();
});

async function epp(o: Parameters<typeof startRecordingEpp>[0]): Promise<RecordingEpp> {
  const e = await startRecordingEpp(o);
  epps.push(e);
  return e;
}

function newPool(): { pool: EppClientPool; files: CredentialFiles } {
  const f = new CredentialFiles({ pollIntervalMs: 0 }); // the test polls explicitly
  files.push(f);
  const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, files: f, transport: scenarioTransport() });
  pools.push(pool);
  return { pool, files: f };
}

/** A target as the snapshot builds it; tls parsed by the schema, so its defaults apply. */
function target(address: string, tls: Record<string, unknown> = {}): EppTarget {
  const [host, port] = address.split(':');
  return {
    address,
    host: host!,
    port: Number(port),
    cluster: 'cluster-b',
    service: { namespace: 'ns', name: 'epp' },
    source: 'override',
    tls: tlsSchema.parse(tls),
  };
}

/** One stream: sends a message carrying a bearer token; resolves with the echo or the gRPC error code. */
async function stream(pool: EppClientPool, t: EppTarget): Promise<{ ok: true } | { ok: false; code: number; details: string }> {
  await pool.ready(t);
  const call = pool.call(t, { authorization: 'Bearer client-secret' });
  return new Promise((resolve) => {
    call.on('data', () => resolve({ ok: true }));
    call.on('error', (e: { code: number; details: string }) => resolve({ ok: false, code: e.code, details: e.details }));
    call.write(Buffer.from('authorization: Bearer client-secret'));
  });
}

/** Replaces a file the way a Kubernetes Secret volume does: a new inode swapped in. */
function rotate(path: string, content: Buffer): void {
  writeFileSync(`${path}.new`, content);
  renameSync(`${path}.new`, path);
}

describe('EPP TLS is verified by default', () => {
  it('refuses a self-signed certificate for attacker.invalid: the EPP never sees a call or the token', async () => {
    const attacker = await epp(createSelfSigned());
    const { pool } = newPool();
    const r = await stream(pool, target(attacker.address, { serverName: 'epp.example' }));
    expect(r).toMatchObject({ ok: false, code: 14 });
    expect(attacker.calls).toHaveLength(0);
  });

  it('refuses a certificate from the trusted CA that names another host', async () => {
    const leaf = serverCa.leaf('attacker', ['DNS:attacker.invalid']);
    const attacker = await epp({ cert: leaf.cert, key: leaf.key });
    const { pool } = newPool();
    const r = await stream(pool, target(attacker.address, { caFile: serverCa.certPath, serverName: 'epp.example' }));
    expect(r).toMatchObject({ ok: false, code: 14 });
    expect(attacker.calls).toHaveLength(0);
  });

  it('accepts the right name from the trusted CA; insecureSkipVerify is the explicit way to accept anything', async () => {
    const leaf = serverCa.leaf('epp', ['DNS:epp.example']);
    const good = await epp({ cert: leaf.cert, key: leaf.key });
    const { pool } = newPool();
    expect(await stream(pool, target(good.address, { caFile: serverCa.certPath, serverName: 'epp.example' }))).toEqual({ ok: true });
    expect(good.calls[0]?.metadata['authorization']).toBe('Bearer client-secret');

    const attacker = await epp(createSelfSigned());
    expect(await stream(pool, target(attacker.address, { insecureSkipVerify: true }))).toEqual({ ok: true });
    expect(attacker.calls).toHaveLength(1);
  });
});

describe('client certificates (mTLS)', () => {
  it('presents certFile/keyFile; an EPP requiring a client certificate refuses a stream without one', async () => {
    const leaf = serverCa.leaf('epp', ['DNS:epp.example']);
    const strict = await epp({ cert: leaf.cert, key: leaf.key, clientCa: clientCa.cert });
    const client = clientCa.leaf('router', [], 'client');
    const { pool } = newPool();
    const base = { caFile: serverCa.certPath, serverName: 'epp.example' };
    expect(await stream(pool, target(strict.address, base))).toMatchObject({ ok: false });
    expect(await stream(pool, target(strict.address, { ...base, certFile: client.certPath, keyFile: client.keyPath }))).toEqual({ ok: true });
    expect(strict.calls).toHaveLength(1);
  });
});

describe('rotated files are used by the next stream', () => {
  it('a rotated CA file: the stream after the change verifies against the new CA', async () => {
    const leaf = otherCa.leaf('epp', ['DNS:epp.example']);
    const server = await epp({ cert: leaf.cert, key: leaf.key });
    const caPath = join(serverCa.dir, 'rotating-ca.pem');
    writeFileSync(caPath, serverCa.cert);
    const { pool, files: f } = newPool();
    const t = target(server.address, { caFile: caPath, serverName: 'epp.example' });
    expect(await stream(pool, t)).toMatchObject({ ok: false });

    rotate(caPath, otherCa.cert);
    await f.poll();
    expect(await stream(pool, t)).toEqual({ ok: true });
    expect(server.calls).toHaveLength(1);
  });

  it('a rotated client certificate and key: the next stream presents the new pair', async () => {
    const leaf = serverCa.leaf('epp', ['DNS:epp.example']);
    const strict = await epp({ cert: leaf.cert, key: leaf.key, clientCa: clientCa.cert });
    const trusted = clientCa.leaf('router', [], 'client');
    const untrusted = otherCa.leaf('router', [], 'client');
    const certPath = join(serverCa.dir, 'client.pem');
    const keyPath = join(serverCa.dir, 'client.key');
    writeFileSync(certPath, trusted.cert);
    writeFileSync(keyPath, trusted.key);
    const { pool, files: f } = newPool();
    const t = target(strict.address, { caFile: serverCa.certPath, serverName: 'epp.example', certFile: certPath, keyFile: keyPath });
    expect(await stream(pool, t)).toEqual({ ok: true });

    // Rotated to a pair the EPP does not trust: the next stream must present it (and be refused).
    rotate(certPath, untrusted.cert);
    rotate(keyPath, untrusted.key);
    await f.poll();
    expect(await stream(pool, t)).toMatchObject({ ok: false });
    expect(strict.calls).toHaveLength(1);

    rotate(certPath, trusted.cert);
    rotate(keyPath, trusted.key);
    await f.poll();
    expect(await stream(pool, t)).toEqual({ ok: true });
    expect(strict.calls).toHaveLength(2);
  });
});

function createSelfSigned(): { cert: Buffer; key: Buffer } {
  // A CA of its own whose only leaf is the attacker's: nothing the router trusts.
  const rogue = createTestCa('rogue', serverCa.dir);
  return rogue.leaf('attacker', ['DNS:attacker.invalid']);
}
