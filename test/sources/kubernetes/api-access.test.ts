/**
 * The Kubernetes access layer over real sockets: every request through a
 * loaded KubeConfig (lists, gets, creates, patches, deletes, Lease operations,
 * watches) ends within its bound against an API server that accepts and never
 * answers, a timeout is classified as a timeout (not "HTTP 23"), and an
 * established watch ends routinely on its idle watchdog and lifetime bound.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLeaseClient } from '../../../src/controller/leader-election.js';
import { createImportStatusClient } from '../../../src/controller/status-writer.js';
import { MAX_WATCH_EVENT_CHARS, RequestTimeoutError, type BoundedKubeConfig } from '../../../src/sources/kubernetes/api-access.js';
import { classifyError, httpStatusOf } from '../../../src/sources/kubernetes/api-errors.js';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { createLister } from '../../../src/sources/kubernetes/lister.js';
import { RESOURCE_SPECS } from '../../../src/sources/kubernetes/resources.js';
import { writeKubeconfig } from '../../harness/kube-apiserver.js';
import { KubeEnv, importObj, sleep } from './kube-fixtures.js';

const TIMEOUT_MS = 300;
/** Generous for a loaded 2-core machine: the bound is 300 ms. */
const WITHIN_MS = 3000;

let env: KubeEnv;
let kc: BoundedKubeConfig;
beforeEach(async () => {
  env = await new KubeEnv().start();
  kc = loadKubeConfig({ kubeconfig: env.kubeconfig, requestTimeoutMs: TIMEOUT_MS, watchIdleTimeoutMs: 1000 });
});
afterEach(async () => {
  await env.close();
});

/** Settles `p` and reports how long it took and what it rejected with. */
async function timed(p: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const started = Date.now();
  try {
    await p;
    return { ms: Date.now() - started, err: undefined };
  } catch (err) {
    return { ms: Date.now() - started, err };
  }
}

interface WatchEnd {
  err: unknown;
  established: boolean;
  ms: number;
  events: string[];
}

function watchUntilDone(k: BoundedKubeConfig, query: Record<string, string | number | boolean> = {}): Promise<WatchEnd> {
  const started = Date.now();
  const events: string[] = [];
  return new Promise((resolve) => {
    void k.watch('/apis/inference.networking.x-k8s.io/v1alpha1/inferencepoolimports', { allowWatchBookmarks: true, ...query }, (type) => events.push(type), (err, established) =>
      resolve({ err, established, ms: Date.now() - started, events }),
    );
  });
}

describe('bounded requests against an API server that accepts and never answers', () => {
  beforeEach(() => {
    env.server.hang();
  });

  it('list, get, patch, create, replace and delete time out within the bound, reported as timeouts', async () => {
    const spec = RESOURCE_SPECS.InferencePoolImport;
    const status = createImportStatusClient(kc);
    const lease = createLeaseClient(kc);
    const core = kc.makeApiClient(CoreV1Api);
    const calls: Record<string, Promise<unknown>> = {
      list: createLister(kc)(spec, undefined),
      listServices: createLister(kc)(RESOURCE_SPECS.Service, 'default'),
      get: status.get('default', 'llm'),
      patch: status.patchStatus('default', 'llm', { status: {} }),
      leaseRead: lease.read('mcip', 'lease'),
      leaseCreate: lease.create('mcip', { metadata: { name: 'lease' } }),
      leaseReplace: lease.replace('mcip', 'lease', { metadata: { name: 'lease' } }),
      delete: core.deleteNamespacedService({ namespace: 'default', name: 'svc' }),
    };
    const results = await Promise.all(Object.entries(calls).map(async ([name, p]) => [name, await timed(p)] as const));
    for (const [name, r] of results) {
      expect(r.err, name).toBeInstanceOf(RequestTimeoutError);
      expect(r.ms, name).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
      expect(r.ms, name).toBeLessThan(WITHIN_MS);
      expect(httpStatusOf(r.err), name).toBeUndefined();
      const failure = classifyError(r.err, spec);
      expect(failure.reason).toBe('timeout');
      expect(failure.message).toBe(`InferencePoolImport (inferencepoolimports.inference.networking.x-k8s.io/v1alpha1): no answer from the API server within ${TIMEOUT_MS} ms (request timed out)`);
    }
    expect(env.server.requests.length).toBeGreaterThanOrEqual(Object.keys(calls).length);
  });

  it('a watch that gets no answer fails within the bound (not established)', async () => {
    const end = await watchUntilDone(kc);
    expect(end.established).toBe(false);
    expect(end.err).toBeInstanceOf(RequestTimeoutError);
    expect(end.ms).toBeLessThan(WITHIN_MS);
  });
});

describe('DOMException timeouts are no HTTP status', () => {
  it('"The operation was aborted due to timeout" is a timeout, not HTTP 23', () => {
    const err = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    expect(err.code).toBe(23);
    expect(httpStatusOf(err)).toBeUndefined();
    const failure = classifyError(err, RESOURCE_SPECS.InferencePool);
    expect(failure).toEqual({ reason: 'timeout', message: 'InferencePool (inferencepools.inference.networking.k8s.io/v1): request timed out' });
    expect(failure.message).not.toContain('HTTP');
  });
});

describe('established watches', () => {
  it('the idle watchdog ends a silent watch routinely; bookmarks keep a quiet one alive', async () => {
    env.server.create('inferencepoolimports', importObj('llm'));
    const silent = await watchUntilDone(kc);
    expect(silent).toMatchObject({ err: null, established: true, events: ['ADDED'] });
    expect(silent.ms).toBeGreaterThanOrEqual(900);
    expect(silent.ms).toBeLessThan(1000 + WITHIN_MS);

    const quiet = watchUntilDone(kc);
    const ticker = setInterval(() => env.server.bookmark(), 200);
    try {
      await sleep(2500);
      expect(env.server.watchCount('inferencepoolimports')).toBe(1);
    } finally {
      clearInterval(ticker);
    }
    const end = await quiet;
    expect(end.err).toBeNull();
    expect(end.events.filter((e) => e === 'BOOKMARK').length).toBeGreaterThanOrEqual(5);
  });

  it('a server that streams past timeoutSeconds is cut at timeoutSeconds + the request timeout', async () => {
    // Unlike the stand-in, this server ignores timeoutSeconds and bookmarks every 100 ms forever.
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const t = setInterval(() => res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '1' } } })}\n`), 100);
      res.on('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const k = loadKubeConfig({ kubeconfig: await writeKubeconfig(env.dir, { server: url }, 'endless'), requestTimeoutMs: TIMEOUT_MS, watchIdleTimeoutMs: 1000 });
      const end = await watchUntilDone(k, { timeoutSeconds: 1 });
      expect(end).toMatchObject({ err: null, established: true });
      expect(end.ms).toBeGreaterThanOrEqual(1000 + TIMEOUT_MS - 20);
      expect(end.ms).toBeLessThan(1000 + TIMEOUT_MS + WITHIN_MS);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a hostile server streaming one endless line is cut past MAX_WATCH_EVENT_CHARS (an error, not held in memory)', async () => {
    // 1 MiB chunks with no newline, up to 2x the cap, then silence: without the cap the router
    // holds every byte and the idle watchdog ends the watch as routine.
    let sent = 0;
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      const more = (): void => {
        while (sent < 2 * MAX_WATCH_EVENT_CHARS && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
      };
      more();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const k = loadKubeConfig({ kubeconfig: await writeKubeconfig(env.dir, { server: url }, 'endless-line'), requestTimeoutMs: TIMEOUT_MS, watchIdleTimeoutMs: 1000 });
      const end = await watchUntilDone(k);
      expect(end.established).toBe(true);
      expect(String(end.err)).toContain(`watch event longer than ${MAX_WATCH_EVENT_CHARS} characters`);
      expect(end.events).toEqual([]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }, 30_000);

  it('events split across chunks and several per chunk are all read', async () => {
    const ev = (rv: string): string => `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } })}\n`;
    const text = ev('1') + ev('2') + ev('3');
    const server: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // a line cut in three, then two lines in one chunk
      const cut = ev('1').length;
      res.write(text.slice(0, 5));
      setTimeout(() => res.write(text.slice(5, cut - 3)), 20);
      setTimeout(() => res.end(text.slice(cut - 3)), 40);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const k = loadKubeConfig({ kubeconfig: await writeKubeconfig(env.dir, { server: url }, 'split'), requestTimeoutMs: TIMEOUT_MS, watchIdleTimeoutMs: 1000 });
      const end = await watchUntilDone(k);
      expect(end).toMatchObject({ err: null, established: true, events: ['BOOKMARK', 'BOOKMARK', 'BOOKMARK'] });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a refused watch carries the HTTP status and the server message', async () => {
    env.server.forbid('inferencepoolimports');
    const end = await watchUntilDone(kc);
    expect(end.established).toBe(false);
    const failure = classifyError(end.err, RESOURCE_SPECS.InferencePoolImport);
    expect(failure).toMatchObject({ reason: 'auth', status: 403 });
    expect(failure.message).toContain('cannot watch resource "inferencepoolimports"');
  });
});
