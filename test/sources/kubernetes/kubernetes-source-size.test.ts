/**
 * KubernetesSource against an API server whose LIST answers grow past
 * kubernetes.maxResponseBytes (real sockets, the API server stand-in): the
 * failure names the cluster, the resource and the bound, is reported like other
 * API-server failures (stale, reason connect), the last good objects keep
 * serving, the list is retried with backoff and the source is fresh again once
 * the server answers within the bound. The bound is on a whole list: many pages,
 * each small, that pass it together fail the same way.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { isList, type RequestRecord } from '../../harness/kube-apiserver.js';
import { endlessList, pagedList } from '../../harness/kube-apiserver-hostile.js';
import { KubeEnv, Recorder, pool, service, waitFor } from './kube-fixtures.js';

const BOUND = 4 * 1024 * 1024;
const HOSTILE_TOTAL = 1024 * 1024 * 1024;
const poolLists = (r: RequestRecord): boolean => isList(r) && r.plural === 'inferencepools';
const TOO_LARGE = `cluster cluster-a: list of InferencePool (inferencepools.inference.networking.k8s.io/v1): the API server's response was larger than kubernetes.maxResponseBytes (${BOUND} bytes); the rest was not read`;

let env: KubeEnv;
beforeEach(async () => {
  env = await new KubeEnv().start();
});
afterEach(async () => {
  await env.close();
});

function source() {
  return env.source({
    kubeConfig: () => loadKubeConfig({ kubeconfig: env.kubeconfig, requestTimeoutMs: 30_000, maxResponseBytes: BOUND }),
    initialSyncTimeoutMs: 10_000,
    backoffInitialMs: 100,
    backoffMaxMs: 400,
  });
}

describe('KubernetesSource: a list larger than kubernetes.maxResponseBytes', () => {
  it('at start: start() rejects naming the cluster, the resource and the bound, and retries in the background', async () => {
    const body = endlessList(HOSTILE_TOTAL);
    const stop = env.server.answerWith(poolLists, body.respond);
    const rec = new Recorder();
    const s = source();
    const err = (await s.start(rec).catch((e: unknown) => e)) as { reason?: string; message?: string };
    expect(err.reason).toBe('connect');
    expect(err.message).toContain(`list of InferencePool (inferencepools.inference.networking.k8s.io/v1): the API server's response was larger than kubernetes.maxResponseBytes (${BOUND} bytes)`);
    expect(s.resources().find((r) => r.resource.startsWith('inferencepools.'))).toMatchObject({ state: 'failed', reason: 'too-large', objects: 0 });

    await waitFor(() => body.answers() >= 3, 5000, 'retries');
    stop();
    env.server.create('inferencepools', pool('p1'));
    await waitFor(() => rec.last?.stale === false && rec.names('InferencePool').length === 1, 5000, 'fresh once the lists fit');
  });

  it('on a re-list: reported like other API-server failures, the last objects keep serving, fresh again once the lists fit', async () => {
    env.server.create('inferencepools', pool('p1'));
    const rec = new Recorder();
    const s = source();
    await s.start(rec);
    expect(rec.names('InferencePool')).toEqual(['InferencePool/default/p1']);

    // From now on pool lists stream without end; a change elsewhere and a compaction make the pools' resume point too old (410: re-list).
    const body = endlessList(HOSTILE_TOTAL);
    const stop = env.server.answerWith(poolLists, body.respond);
    env.server.create('services', service('s1'));
    await waitFor(() => rec.names('Service').length === 1, 2000, 'service event');
    env.server.compact();
    env.server.dropWatches('inferencepools');

    await waitFor(() => rec.errors.find((e) => e.message === TOO_LARGE), 5000, 'the failure reported');
    expect(rec.errors.find((e) => e.message === TOO_LARGE)?.reason).toBe('connect');
    await waitFor(() => rec.last?.stale === true, 2000, 'stale');
    expect(s.resources().find((r) => r.resource.startsWith('inferencepools.'))).toMatchObject({ state: 'failed', reason: 'too-large', objects: 1 });
    expect(rec.names('InferencePool')).toEqual(['InferencePool/default/p1']);
    // Retried with backoff, each attempt cut at the bound (not read to the server's 1 GiB).
    await waitFor(() => body.answers() >= 3, 5000, 'retries');
    await waitFor(() => body.closed() >= 3, 5000, 'attempts cut');
    expect(body.written() / body.answers()).toBeLessThan(48 * 1024 * 1024);

    stop();
    env.server.create('inferencepools', pool('p2'));
    await waitFor(() => rec.last?.stale === false && rec.names('InferencePool').length === 2, 5000, 'fresh again');
    expect(s.resources().every((r) => r.state === 'synced')).toBe(true);
  });
  it('a re-list of pages that pass the bound only together (each 1 MiB, continue tokens without end): fails the same way, the last objects keep serving, fresh again once the list fits', async () => {
    env.server.create('inferencepools', pool('p1'));
    const rec = new Recorder();
    const s = source();
    await s.start(rec);
    const paged = pagedList(1024 * 1024);
    const stop = env.server.answerWith(poolLists, paged.respond);
    env.server.create('services', service('s1'));
    await waitFor(() => rec.names('Service').length === 1, 2000, 'service event');
    env.server.compact();
    env.server.dropWatches('inferencepools');

    const tooLarge = `cluster cluster-a: list of InferencePool (inferencepools.inference.networking.k8s.io/v1): the API server's list answers (4 pages together) were larger than kubernetes.maxResponseBytes (${BOUND} bytes); the rest was not read`;
    await waitFor(() => rec.errors.find((e) => e.message === tooLarge), 5000, 'the failure reported');
    await waitFor(() => rec.last?.stale === true, 2000, 'stale');
    expect(s.resources().find((r) => r.resource.startsWith('inferencepools.'))).toMatchObject({ state: 'failed', reason: 'too-large', objects: 1 });
    expect(rec.names('InferencePool')).toEqual(['InferencePool/default/p1']);
    // Retried with backoff; each attempt stops at the bound (4 pages), never paging on.
    const before = paged.pages();
    await waitFor(() => paged.pages() >= before + 8, 5000, 'retries');
    expect(paged.deepest()).toBe(4);

    stop();
    env.server.create('inferencepools', pool('p2'));
    await waitFor(() => rec.last?.stale === false && rec.names('InferencePool').length === 2, 5000, 'fresh again');
  });
});
