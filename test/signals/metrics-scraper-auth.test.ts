// Scrape authentication over real HTTPS with certificates generated here: verified by
// default, client certificates, rotated files, the member's own Kubernetes token, and
// no token over plain http unless the member allows it.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { clusterSchema, DEFAULT_POOL_METRIC_NAMES } from '../../src/config/schema.js';
import { bearerTokenSpec } from '../../src/credentials/bearer-token.js';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { MetricsScraper, type ScrapeSettings } from '../../src/signals/metrics-scraper.js';
import { systemClock } from '../../src/signals/types.js';
import { createTestCa, type TestCa } from '../helpers/pki.js';

let ca: TestCa;
let clientCa: TestCa;
const closers: (() => void)[] = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
});
beforeAll(() => {
  ca = createTestCa('metrics CA');
  clientCa = createTestCa('scrape client CA', ca.dir);
});
afterAll(() => ca.remove());

interface Seen {
  authorization: string | undefined;
  clientCert: string | undefined;
}

/** A token-protected /metrics endpoint (https with a CA-signed certificate, or plain http). */
async function metricsServer(o: { https?: { sans: string[]; clientCa?: Buffer }; token: string }): Promise<{ origin: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const peer = (req.socket as TLSSocket).getPeerCertificate?.();
    seen.push({ authorization: req.headers.authorization, clientCert: peer && 'subject' in peer ? String(peer.subject?.CN) : undefined });
    if (req.headers.authorization !== `Bearer ${o.token}`) {
      res.writeHead(401).end('unauthorized\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('llm_d_epp_ready_endpoints{name="p"} 3\n');
  };
  let server;
  if (o.https) {
    const leaf = ca.leaf('metrics', o.https.sans);
    server = createHttpsServer(
      { cert: leaf.cert, key: leaf.key, ...(o.https.clientCa ? { ca: o.https.clientCa, requestCert: true, rejectUnauthorized: true } : {}) },
      handler,
    );
  } else {
    server = createHttpServer(handler);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { origin: `${o.https ? 'https' : 'http'}://127.0.0.1:${port}`, seen };
}

function scraper(origin: string, over: Partial<ScrapeSettings>, files?: CredentialFiles): MetricsScraper {
  const s = new MetricsScraper(
    {
      origin,
      path: '/metrics',
      cluster: 'cluster-b',
      tls: { insecureSkipVerify: false },
      intervalMs: 60_000,
      timeoutMs: 2000,
      maxBytes: 1 << 20,
      names: { ...DEFAULT_POOL_METRIC_NAMES, readyPods: ['llm_d_epp_ready_endpoints'] },
      ...over,
    },
    { clock: systemClock, ...(files ? { files } : {}) },
  );
  closers.push(() => s.stop());
  return s;
}

function file(name: string, content: string | Buffer): string {
  const path = join(ca.dir, name);
  writeFileSync(`${path}.new`, content);
  renameSync(`${path}.new`, path);
  return path;
}

describe('HTTPS scrapes', () => {
  it('verify the server by default: a certificate for another name is refused before any token is sent', async () => {
    const srv = await metricsServer({ https: { sans: ['DNS:attacker.invalid'] }, token: 't' });
    const token = file('token-a', 't');
    const r = await scraper(srv.origin, { tls: { caFile: ca.certPath, insecureSkipVerify: false, serverName: 'epp.example' }, bearerToken: { file: token } }).scrapeOnce();
    expect(r).toMatchObject({ ok: false, reason: 'tls' });
    expect(srv.seen).toHaveLength(0);
    // The name the certificate carries: accepted, token sent.
    const ok = await scraper(srv.origin, { tls: { caFile: ca.certPath, insecureSkipVerify: false, serverName: 'attacker.invalid' }, bearerToken: { file: token } }).scrapeOnce();
    expect(ok.ok).toBe(true);
    expect(srv.seen[0]?.authorization).toBe('Bearer t');
  });

  it('present a client certificate (mTLS) and use a rotated one on the next scrape', async () => {
    const srv = await metricsServer({ https: { sans: ['IP:127.0.0.1'], clientCa: clientCa.cert }, token: 't' });
    const first = clientCa.leaf('router-1', [], 'client');
    const second = clientCa.leaf('router-2', [], 'client');
    const certFile = file('scrape-client.pem', first.cert);
    const keyFile = file('scrape-client.key', first.key);
    const files = new CredentialFiles({ pollIntervalMs: 0 });
    closers.push(() => files.close());
    const s = scraper(srv.origin, { tls: { caFile: ca.certPath, insecureSkipVerify: false, certFile, keyFile }, bearerToken: { file: file('token-b', 't') } }, files);
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(srv.seen.at(-1)?.clientCert).toBe('router-1');

    file('scrape-client.pem', second.cert);
    file('scrape-client.key', second.key);
    await files.poll();
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(srv.seen.at(-1)?.clientCert).toBe('router-2');
  });
});

describe('the scrape token', () => {
  it("defaults to the member's own kubeconfig user token, re-read when the kubeconfig is rotated", async () => {
    const srv = await metricsServer({ https: { sans: ['IP:127.0.0.1'] }, token: 'member-token-1' });
    const kubeconfig = (token: string): string =>
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'b', cluster: { server: 'https://127.0.0.1:6443' } }],
        users: [{ name: 'reader', user: { token } }],
        contexts: [{ name: 'b', context: { cluster: 'b', user: 'reader' } }],
        'current-context': 'b',
      });
    const path = file('kubeconfig-b', kubeconfig('member-token-1'));
    // The token spec comes from the member's config as the router derives it: no bearerTokenFile, a kubeconfig.
    const member = clusterSchema.parse({ name: 'b', kubernetes: { kubeconfig: path }, epp: { metrics: { scheme: 'https' } } });
    const bearerToken = bearerTokenSpec(member.epp.metrics.bearerTokenFile, member.kubernetes);
    const s = scraper(srv.origin, { tls: { caFile: ca.certPath, insecureSkipVerify: false }, ...(bearerToken ? { bearerToken } : {}) });
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(srv.seen.at(-1)?.authorization).toBe('Bearer member-token-1');

    file('kubeconfig-b', kubeconfig('member-token-2'));
    await s.scrapeOnce();
    expect(srv.seen.at(-1)?.authorization).toBe('Bearer member-token-2');
  });

  it('is not sent over plain http unless allowTokenOverPlainHttp; the 401 says why, naming the member and field', async () => {
    const srv = await metricsServer({ token: 't' });
    const token = file('token-c', 't');
    const withheld = await scraper(srv.origin, { bearerToken: { file: token } }).scrapeOnce();
    expect(withheld).toMatchObject({ ok: false, reason: 'http-401' });
    expect(withheld.ok ? '' : withheld.message).toMatch(/cluster "cluster-b".*allowTokenOverPlainHttp/);
    expect(srv.seen[0]?.authorization).toBeUndefined();

    const allowed = await scraper(srv.origin, { bearerToken: { file: token }, allowTokenOverPlainHttp: true }).scrapeOnce();
    expect(allowed.ok).toBe(true);
    expect(srv.seen[1]?.authorization).toBe('Bearer t');
  });
});
