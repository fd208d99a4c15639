// TLS on the router's ext_proc server (the picker ports' transport), on both transports,
// through real TLS with certificates the test makes: served from files, rotated without a
// restart (a new connection gets the new certificate, an open stream goes on), a bad file
// leaving the last good certificate in use, a self-signed certificate when there are no
// files, and a plaintext client refused.
import { X509Certificate } from 'node:crypto';
import { copyFileSync, writeFileSync } from 'node:fs';
import { connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createExtProcServer } from '../../src/extproc/server.js';
import type { ServerTls } from '../../src/transport/server-tls.js';
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { EppClientPool } from '../../src/transport/epp-client.js';
import { noopObserver } from '../../src/extproc/observer.js';
import { createEnvoyStandin } from '../harness/envoy-standin.js';
import { ExternalProcessorClient, type PbProcessingRequest, type PbProcessingResponse } from '../harness/protos.js';
import { createTestCa, type Leaf, type TestCa } from '../helpers/pki.js';
import { eventually } from '../helpers/eventually.js';
import { jsonBody, POOL_A_ENDPOINTS, startScenario, type Scenario } from './scenario.js';
import { join } from 'node:path';

let ca: TestCa;
let leaf1: Leaf;
let leaf2: Leaf;
beforeAll(() => {
  ca = createTestCa('router tls test CA');
  leaf1 = ca.leaf('router-1', ['DNS:mcip-router.llm.svc', 'IP:127.0.0.1']);
  leaf2 = ca.leaf('router-2', ['DNS:mcip-router.llm.svc', 'IP:127.0.0.1']);
});
afterAll(() => ca.remove());

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

/** The files the router serves, starting as `leaf`. */
function servedFiles(leaf: Leaf, name: string): { certFile: string; keyFile: string; become(l: Leaf): void } {
  const certFile = join(ca.dir, `${name}.crt`);
  const keyFile = join(ca.dir, `${name}.key`);
  const become = (l: Leaf): void => {
    // A Secret volume swaps both files; the key first here, so a poll between the two
    // writes sees a certificate that does not match its key.
    copyFileSync(l.keyPath, keyFile);
    copyFileSync(l.certPath, certFile);
  };
  become(leaf);
  return { certFile, keyFile, become };
}

/** SHA-256 fingerprint of the certificate a new TLS connection to `address` is served. */
function servedFingerprint(address: string): Promise<string> {
  const [host, port] = [address.replace(/:\d+$/, ''), Number(address.split(':').pop())];
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host, port, ALPNProtocols: ['h2'], rejectUnauthorized: false, servername: 'mcip-router.llm.svc' }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.destroy();
    });
    s.once('error', reject);
  });
}

const fingerprint = (l: Leaf): string => new X509Certificate(l.cert).fingerprint256;

const request = { authority: 'local.example', path: '/v1/completions', body: [jsonBody(256)] };

describe.each(['http2', 'grpc-js'] as const)('ext_proc server TLS (%s)', (transport) => {
  it('serves the certificate from its files; a client trusting the CA completes exchanges; a plaintext client gets nothing', async () => {
    const files = servedFiles(leaf1, `served-${transport}`);
    sc = await startScenario({ transport, serverOptions: { tls: { kind: 'files', ...files, pollIntervalMs: 20 } } });
    const envoy = createEnvoyStandin(sc.address, { tls: { ca: ca.cert } });
    try {
      const r = await envoy.run(request);
      expect(r.outcome).toBe('forwarded');
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
    } finally {
      envoy.close();
    }
    expect(await servedFingerprint(sc.address)).toBe(fingerprint(leaf1));
    // The scenario's own stand-in speaks h2c: refused (no stream ever reaches the router).
    const plain = await sc.envoy.run(request).catch((err: Error) => ({ outcome: 'error', message: err.message }));
    expect(plain.outcome).not.toBe('forwarded');
    expect(sc.observer.started).toBe(1);
  });

  it('rotates without a restart: a new connection gets the new certificate, a stream opened before goes on; a bad pair keeps the last good one', async () => {
    const files = servedFiles(leaf1, `rotated-${transport}`);
    sc = await startScenario({ transport, serverOptions: { tls: { kind: 'files', ...files, pollIntervalMs: 20 } } });
    // A stream opened on the first certificate: request headers answered, body still to come.
    const client = new ExternalProcessorClient(sc.address, grpc.credentials.createSsl(ca.cert), { 'grpc.ssl_target_name_override': 'mcip-router.llm.svc' });
    const call = (client as unknown as { Process(): grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse> }).Process();
    const answers: string[] = [];
    let status: grpc.StatusObject | undefined;
    call.on('data', (m: PbProcessingResponse) => answers.push(m.response ?? 'none'));
    call.on('status', (s: grpc.StatusObject) => (status = s));
    call.on('error', () => undefined);
    const headers = [
      { key: ':authority', raw_value: Buffer.from('local.example') },
      { key: ':path', raw_value: Buffer.from('/') },
      { key: ':method', raw_value: Buffer.from('POST') },
    ];
    try {
      call.write({ request_headers: { headers: { headers } }, protocol_config: { request_body_mode: 4, response_body_mode: 4 } });
      await eventually(() => expect(sc!.eppA.counters.messages.request_headers).toBe(1));

      files.become(leaf2);
      await eventually(async () => expect(await servedFingerprint(sc!.address)).toBe(fingerprint(leaf2)), 5000);

      call.write({ request_body: { body: jsonBody(256), end_of_stream: true } });
      await eventually(() => expect(answers).toEqual(['request_headers', 'request_body']), 5000);
      call.end();
      await eventually(() => expect(status?.code).toBe(grpc.status.OK), 5000);
    } finally {
      client.close();
    }

    // A key that is not the certificate's (and then a file that is no PEM at all): the
    // last good certificate stays, and the server keeps serving new connections.
    copyFileSync(leaf1.keyPath, files.keyFile);
    await new Promise((r) => setTimeout(r, 200)); // 10 polls
    expect(await servedFingerprint(sc.address)).toBe(fingerprint(leaf2));
    writeFileSync(files.certFile, 'not a certificate');
    await new Promise((r) => setTimeout(r, 200));
    expect(await servedFingerprint(sc.address)).toBe(fingerprint(leaf2));
    const envoy = createEnvoyStandin(sc.address, { tls: { ca: ca.cert } });
    try {
      expect((await envoy.run(request)).outcome).toBe('forwarded');
    } finally {
      envoy.close();
    }
    // Fixed files are picked up again (the polling was on all along).
    files.become(leaf1);
    await eventually(async () => expect(await servedFingerprint(sc!.address)).toBe(fingerprint(leaf1)), 5000);
  });

  it('without files: a self-signed certificate naming the Service, made at start', async () => {
    const tls: ServerTls = { kind: 'self-signed', dnsNames: ['mcip-router', 'mcip-router.llm.svc'] };
    sc = await startScenario({ transport, serverOptions: { tls } });
    const [host, port] = [sc.address.replace(/:\d+$/, ''), Number(sc.address.split(':').pop())];
    const served = await new Promise<X509Certificate>((resolve, reject) => {
      const s = tlsConnect({ host, port, ALPNProtocols: ['h2'], rejectUnauthorized: false, servername: 'mcip-router.llm.svc' }, () => {
        resolve(new X509Certificate(s.getPeerCertificate().raw));
        s.destroy();
      });
      s.once('error', reject);
    });
    expect(served.subjectAltName).toBe('DNS:mcip-router, DNS:mcip-router.llm.svc');
    expect(served.issuer).toBe(served.subject);
    expect(served.verify(served.publicKey)).toBe(true); // signed by its own key
    // A client that trusts exactly this certificate, verifying the Service name, completes an exchange.
    const envoy = createEnvoyStandin(sc.address, { tls: { ca: Buffer.from(served.toString()), serverName: 'mcip-router.llm.svc' } });
    try {
      expect((await envoy.run(request)).outcome).toBe('forwarded');
    } finally {
      envoy.close();
    }
  });

  it('certificate files that cannot be served are an error naming the file, at creation', () => {
    const deps = {
      snapshot: () => undefined,
      settings: { ...DEFAULT_EXT_PROC, transport },
      random: Math.random,
      eppClients: new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 100, transport }),
      observer: noopObserver,
      logger: pino({ level: 'silent' }),
    };
    const missing = join(ca.dir, 'absent.crt');
    expect(() => createExtProcServer(deps, { tls: { kind: 'files', certFile: missing, keyFile: leaf1.keyPath, pollIntervalMs: 20 } })).toThrow(missing);
    expect(() => createExtProcServer(deps, { tls: { kind: 'files', certFile: leaf1.certPath, keyFile: leaf2.keyPath, pollIntervalMs: 20 } })).toThrow(/key values mismatch/);
    deps.eppClients.close();
  });
});
