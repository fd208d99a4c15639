/**
 * The size bound on API server answers over real sockets: a LIST whose body never
 * ends is cut just past kubernetes.maxResponseBytes (the server could hand over
 * only a fraction of what it meant to stream), a Content-Length past the bound is
 * refused before the body, a compressed answer is refused, an answer under the
 * bound is read whole, the bound keeps the member's proxy and TLS settings (CA,
 * client certificate, SNI), and a refused watch's error body is read only in part.
 * The pages of one list share the bound: pages without end, or many small pages
 * past it together, fail the list; each list starts its own count.
 */
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_ERROR_BODY_BYTES, WatchRequestError, type BoundedKubeConfig } from '../../../src/sources/kubernetes/api-access.js';
import { classifyError } from '../../../src/sources/kubernetes/api-errors.js';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { createLister } from '../../../src/sources/kubernetes/lister.js';
import { RESOURCE_SPECS } from '../../../src/sources/kubernetes/resources.js';
import { CompressedResponseError, ResponseTooLargeError, responseRefusal } from '../../../src/sources/kubernetes/response-bound.js';
import { isList } from '../../harness/kube-apiserver.js';
import { endlessList, pagedList } from '../../harness/kube-apiserver-hostile.js';
import { createTestCa, type TestCa } from '../../helpers/pki.js';
import { KubeEnv, importObj, waitFor } from './kube-fixtures.js';

const MiB = 1024 * 1024;
/** The smallest bound the config schema accepts. */
const BOUND = 4 * MiB;
/** What the hostile server means to stream: far more than the bound. */
const HOSTILE_TOTAL = 1024 * MiB;
/** The bound plus what socket buffers on both ends and undici's parser may hold in flight. */
const CUT_WITHIN = 48 * MiB;
const spec = RESOURCE_SPECS.InferencePoolImport;
const imports = (r: { plural?: string }): boolean => isList(r as Parameters<typeof isList>[0]) && r.plural === 'inferencepoolimports';

let env: KubeEnv;
let kc: BoundedKubeConfig;
beforeEach(async () => {
  env = await new KubeEnv().start();
  // A generous request timeout: it is the size bound, not the clock, that must end these requests.
  kc = loadKubeConfig({ kubeconfig: env.kubeconfig, requestTimeoutMs: 60_000, maxResponseBytes: BOUND });
});
afterEach(async () => {
  await env.close();
});

async function failure(p: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const started = Date.now();
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { err, ms: Date.now() - started };
}

describe('a list answer larger than kubernetes.maxResponseBytes', () => {
  it('an endless body is cut just past the bound: the router stops reading, the server could not hand over its stream', async () => {
    const body = endlessList(HOSTILE_TOTAL);
    env.server.answerWith(imports, body.respond);
    const { err, ms } = await failure(createLister(kc)(spec, undefined));
    expect(responseRefusal(err)).toBeInstanceOf(ResponseTooLargeError);
    const f = classifyError(err, spec);
    expect(f.reason).toBe('too-large');
    expect(f.message).toBe(
      `list of InferencePoolImport (inferencepoolimports.inference.networking.x-k8s.io/v1alpha1): the API server's response was larger than kubernetes.maxResponseBytes (${BOUND} bytes); the rest was not read`,
    );
    // The connection was dropped: the server's stream ended long before its 1 GiB.
    await waitFor(() => body.closed() === 1, 5000, 'server sees the client hang up');
    expect(body.written()).toBeGreaterThan(BOUND);
    expect(body.written()).toBeLessThan(CUT_WITHIN);
    expect(ms).toBeLessThan(10_000);
  });

  it('a Content-Length past the bound is refused from the headers, without waiting for the body', async () => {
    let closed = false;
    env.server.answerWith(imports, (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BOUND + 1) });
      res.write('{"items":[');
      res.on('close', () => (closed = true));
    });
    const { err, ms } = await failure(createLister(kc)(spec, undefined));
    expect(classifyError(err, spec)).toMatchObject({ reason: 'too-large' });
    expect(classifyError(err, spec).message).toContain(`larger than kubernetes.maxResponseBytes (${BOUND} bytes)`);
    expect(ms).toBeLessThan(5000);
    await waitFor(() => closed, 5000, 'connection dropped');
  });

  it('asks for an uncompressed answer and refuses a compressed one (its inflated size could not be bounded)', async () => {
    const encodings: (string | undefined)[] = [];
    env.server.answerWith(imports, (req, res) => {
      encodings.push(req.headers['accept-encoding']);
      req.resume();
      const gz = gzipSync(JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '1' }, items: [] }));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(gz.length) });
      res.end(gz);
    });
    const { err } = await failure(createLister(kc)(spec, undefined));
    expect(encodings).toEqual(['identity']);
    expect(responseRefusal(err)).toBeInstanceOf(CompressedResponseError);
    expect(classifyError(err, spec).message).toContain('compressed its response (Content-Encoding: gzip)');
  });

  it('an answer under the bound is read whole (a 3 MiB page, with and without Content-Length)', async () => {
    const items = Array.from({ length: 48 }, (_, i) => ({ ...(importObj(`imp-${i}`) as object), metadata: { name: `imp-${i}`, namespace: 'default', annotations: { pad: 'y'.repeat(64 * 1024) } } }));
    const json = JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '42' }, items });
    expect(json.length).toBeGreaterThan(3 * MiB);
    expect(json.length).toBeLessThan(BOUND);
    let withLength = true;
    env.server.answerWith(imports, (req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', ...(withLength ? { 'content-length': String(Buffer.byteLength(json)) } : {}) });
      res.end(json);
    });
    for (const w of [true, false]) {
      withLength = w;
      const list = await createLister(kc)(spec, undefined);
      expect(list.items).toHaveLength(48);
      expect(list.resourceVersion).toBe('42');
    }
  });

  it('pages without end, each far under the bound: the list fails once its pages together pass it, and reads no further', async () => {
    const paged = pagedList(MiB);
    env.server.answerWith(imports, paged.respond);
    const { err } = await failure(createLister(kc)(spec, undefined));
    expect(responseRefusal(err)).toBeInstanceOf(ResponseTooLargeError);
    const f = classifyError(err, spec);
    expect(f.reason).toBe('too-large');
    expect(f.message).toBe(
      `list of InferencePoolImport (inferencepoolimports.inference.networking.x-k8s.io/v1alpha1): the API server's list answers (4 pages together) were larger than kubernetes.maxResponseBytes (${BOUND} bytes); the rest was not read`,
    );
    // The fourth page's Content-Length would pass the bound: refused from its headers, no fifth asked for.
    expect(paged.pages()).toBe(4);
    expect(paged.deepest()).toBe(4);
  });

  it('a list of many pages under the bound together is read whole, each list counting its own; nine such pages fail', async () => {
    let pages = 7;
    const sevenPages = pagedList(MiB / 2, 7);
    const ninePages = pagedList(MiB / 2, 9);
    env.server.answerWith(imports, (req, res) => (pages === 7 ? sevenPages : ninePages).respond(req, res));
    const first = await createLister(kc)(spec, undefined);
    const second = await createLister(kc)(spec, undefined);
    expect(first.items.length).toBeGreaterThanOrEqual(7 * 8);
    expect(second.items.length).toBe(first.items.length);
    expect(sevenPages.continued()).toBe(12);
    pages = 9;
    const { err } = await failure(createLister(kc)(spec, undefined));
    expect(classifyError(err, spec).message).toMatch(/list answers \(8 pages together\) were larger than kubernetes.maxResponseBytes/);
  });

  it('the default bound lets ordinary answers through', async () => {
    env.server.create('inferencepoolimports', importObj('imp'));
    const list = await createLister(loadKubeConfig({ kubeconfig: env.kubeconfig }))(spec, undefined);
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['imp']);
  });
});

describe('a refused watch', () => {
  it('reads only the start of an endless error body', async () => {
    const body = endlessList(HOSTILE_TOTAL, 500);
    env.server.answerWith((r) => r.watch, body.respond);
    const err = await new Promise<unknown>((resolve) => {
      void kc.watch('/apis/inference.networking.x-k8s.io/v1alpha1/inferencepoolimports', {}, () => undefined, (e) => resolve(e));
    });
    expect(err).toBeInstanceOf(WatchRequestError);
    expect((err as WatchRequestError).statusCode).toBe(500);
    expect((err as WatchRequestError).body.length).toBeLessThanOrEqual(2000);
    await waitFor(() => body.closed() === 1, 5000, 'server sees the client hang up');
    expect(body.written()).toBeGreaterThan(MAX_ERROR_BODY_BYTES);
    expect(body.written()).toBeLessThan(CUT_WITHIN);
  });
});

describe('the bound keeps the member proxy', () => {
  it('requests still go through the kubeconfig proxy-url; an endless list through it is cut at the bound', async () => {
    const tunnels: string[] = [];
    const proxy = createHttpServer();
    proxy.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      tunnels.push(String(req.url));
      const [host, port] = String(req.url).split(':');
      const upstream = connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      const end = (): void => {
        upstream.destroy();
        client.destroy();
      };
      upstream.on('error', end).on('close', end);
      client.on('error', end).on('close', end);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const path = join(env.dir, 'proxy-kubeconfig');
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      await writeFile(
        path,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'm', cluster: { server: env.server.url, 'insecure-skip-tls-verify': true, 'proxy-url': proxyUrl } }],
          users: [{ name: 'u', user: { token: 't' } }],
          contexts: [{ name: 'm', context: { cluster: 'm', user: 'u' } }],
          'current-context': 'm',
        }),
      );
      const proxied = loadKubeConfig({ kubeconfig: path, requestTimeoutMs: 60_000, maxResponseBytes: BOUND });
      env.server.create('inferencepoolimports', importObj('via-proxy'));
      const list = await createLister(proxied)(spec, undefined);
      expect(list.items.map((i) => i.metadata?.name)).toEqual(['via-proxy']);
      expect(tunnels.length).toBeGreaterThan(0);
      expect(tunnels.every((t) => t === new URL(env.server.url).host)).toBe(true);

      const body = endlessList(HOSTILE_TOTAL);
      env.server.answerWith(imports, body.respond);
      const { err } = await failure(createLister(proxied)(spec, undefined));
      expect(classifyError(err, spec).reason).toBe('too-large');
      await waitFor(() => body.closed() === 1, 5000, 'server sees the client hang up');
      expect(body.written()).toBeLessThan(CUT_WITHIN);
    } finally {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
  });
});

describe('the bound keeps the member TLS settings', () => {
  let ca: TestCa;
  let server: Server;
  let url: string;
  let mode: 'small' | 'endless' = 'small';
  let endless = endlessList(HOSTILE_TOTAL);
  const peers: string[] = [];
  beforeAll(async () => {
    ca = createTestCa('kube size test CA');
    // The certificate names only api.member.example: the connection succeeds only with the kubeconfig's tls-server-name.
    const leaf = ca.leaf('api.member.example', ['DNS:api.member.example']);
    server = createServer({ cert: leaf.cert, key: leaf.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      peers.push(String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN));
      if (mode === 'endless') return endless.respond(req, res);
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '9' }, items: [importObj('tls-imp')] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    ca.remove();
  });

  it('CA, client certificate and SNI still apply; an endless list over TLS is cut at the bound', async () => {
    const client = ca.leaf('mcip-router', [], 'client');
    const b64 = (b: Buffer): string => b.toString('base64');
    const path = join(env.dir, 'tls-kubeconfig');
    await writeFile(
      path,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'm', cluster: { server: url, 'certificate-authority-data': b64(ca.cert), 'tls-server-name': 'api.member.example' } }],
        users: [{ name: 'u', user: { 'client-certificate-data': b64(client.cert), 'client-key-data': b64(client.key) } }],
        contexts: [{ name: 'm', context: { cluster: 'm', user: 'u' } }],
        'current-context': 'm',
      }),
    );
    const tlsKc = loadKubeConfig({ kubeconfig: path, requestTimeoutMs: 60_000, maxResponseBytes: BOUND });

    mode = 'small';
    const list = await createLister(tlsKc)(spec, undefined);
    expect(list.items.map((i) => i.metadata?.name)).toEqual(['tls-imp']);
    expect(peers).toEqual(['mcip-router']);

    mode = 'endless';
    endless = endlessList(HOSTILE_TOTAL);
    const { err } = await failure(createLister(tlsKc)(spec, undefined));
    expect(classifyError(err, spec).reason).toBe('too-large');
    await waitFor(() => endless.closed() === 1, 5000, 'server sees the client hang up');
    expect(endless.written()).toBeLessThan(CUT_WITHIN);
  });
});
