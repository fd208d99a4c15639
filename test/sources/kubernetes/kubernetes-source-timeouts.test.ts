/**
 * KubernetesSource never goes silent (real sockets, the API server stand-in):
 * a server that accepts and never answers, and one that answers everything
 * but the re-LIST, are reported (stale, timeout) within seconds and retried;
 * an ordinary watch drop is routine (resumed, logged at debug, not stale).
 */
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../src/sources/kubernetes/kubeconfig.js';
import { isList } from '../../harness/kube-apiserver.js';
import { KubeEnv, Recorder, pool, service, sleep, waitFor } from './kube-fixtures.js';

/** 1 s request timeout; "within seconds" is asserted as 5 s for a loaded 2-core machine. */
const REQUEST_TIMEOUT_MS = 1000;
const STALE_WITHIN_MS = 5000;

interface LogLine {
  level: number;
  msg: string;
}

let env: KubeEnv;
let logs: LogLine[];
beforeEach(async () => {
  env = await new KubeEnv().start();
  logs = [];
});
afterEach(async () => {
  await env.close();
});

function source(initialSyncTimeoutMs = 10_000) {
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) });
  return env.source({
    kubeConfig: () => loadKubeConfig({ kubeconfig: env.kubeconfig, requestTimeoutMs: REQUEST_TIMEOUT_MS }),
    initialSyncTimeoutMs,
    backoffInitialMs: 200,
    backoffMaxMs: 1000,
    logger,
  });
}

const lists = (plural: string): number => env.server.requests.filter((r) => isList(r) && r.plural === plural).length;

describe('KubernetesSource against an API server that does not answer', () => {
  it('accepts connections but never answers: start() fails within seconds with a timeout, not after the sync timeout', async () => {
    env.server.hang();
    const rec = new Recorder();
    const s = source(30_000);
    const started = Date.now();
    const err = (await s.start(rec).catch((e: unknown) => e)) as { reason?: string; message?: string };
    expect(Date.now() - started).toBeLessThan(STALE_WITHIN_MS);
    expect(err.reason).toBe('connect');
    expect(err.message).toContain(`no answer from the API server within ${REQUEST_TIMEOUT_MS} ms (request timed out)`);
    expect(err.message).not.toMatch(/HTTP 23/);
    expect(rec.last?.stale).toBe(true);
    expect(s.resources().every((r) => r.state === 'failed' && r.reason === 'timeout')).toBe(true);
  });

  it('answers everything but the re-LIST: stale within seconds, retried with backoff, fresh again once lists are answered', async () => {
    env.server.create('inferencepools', pool('p1'));
    env.server.create('services', service('s1'));
    const rec = new Recorder();
    const s = source();
    await s.start(rec);
    expect(rec.last?.stale).toBe(false);

    // Lists hang from now on; a change elsewhere and a compaction make the pools' resume point too old (410).
    const answerLists = env.server.hang(isList);
    const before = lists('inferencepools');
    env.server.create('services', service('s2'));
    await waitFor(() => rec.names('Service').length === 2, 2000, 'service event');
    env.server.compact();
    const cut = Date.now();
    env.server.dropWatches('inferencepools');

    await waitFor(() => rec.last?.stale === true, STALE_WITHIN_MS + 1000, 'stale');
    expect(Date.now() - cut).toBeLessThan(STALE_WITHIN_MS);
    const pools = s.resources().find((r) => r.resource.startsWith('inferencepools.'));
    expect(pools).toMatchObject({ state: 'failed', reason: 'timeout', objects: 1 });
    expect(pools?.message).toContain('no answer from the API server');
    expect(rec.errors.some((e) => e.reason === 'connect' && e.message.includes('request timed out'))).toBe(true);
    // The last known objects keep serving.
    expect(rec.names('InferencePool')).toEqual(['InferencePool/default/p1']);
    // Retried, not given up: more hung lists follow (backoff 200..1000 ms).
    await waitFor(() => lists('inferencepools') >= before + 3, 8000, 'retries');

    answerLists();
    env.server.create('inferencepools', pool('p2'));
    await waitFor(() => rec.last?.stale === false && rec.names('InferencePool').length === 2, 5000, 'fresh again');
    expect(s.resources().every((r) => r.state === 'synced')).toBe(true);
  });
});

describe('KubernetesSource: an ordinary watch drop is routine', () => {
  it('resumes from its resourceVersion without a re-list, never stale, no failure reported, logged at debug only', async () => {
    env.server.create('inferencepools', pool('p1'));
    const rec = new Recorder();
    await source().start(rec);
    await waitFor(() => env.server.watchCount() === 5, 3000, 'watches open');
    const listsBefore = env.server.requests.filter(isList).length;
    const statesBefore = rec.states.length;

    for (let i = 0; i < 3; i++) {
      expect(env.server.dropWatches(undefined, i % 2 === 0 ? 'destroy' : 'end')).toBeGreaterThan(0);
      await waitFor(() => env.server.watchCount() === 5, 3000, 'watches back');
    }
    env.server.create('inferencepools', pool('p2'));
    await waitFor(() => rec.names('InferencePool').length === 2, 2000, 'event after resume');
    await sleep(200);

    expect(env.server.requests.filter(isList).length).toBe(listsBefore);
    expect(rec.states.slice(statesBefore).every((st) => !st.stale)).toBe(true);
    expect(rec.errors).toEqual([]);
    expect(logs.filter((l) => l.level >= 40).map((l) => l.msg)).toEqual([]);
    expect(logs.some((l) => l.level === 20 && l.msg === 'watch ended, resuming from the last resourceVersion')).toBe(true);
  });
});
