import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REMOTE_KINDS } from '../../../src/sources/kubernetes/resources.js';
import { KubeEnv, Recorder, importObj, pool, service, sleep, waitFor } from './kube-fixtures.js';

let env: KubeEnv;
beforeEach(async () => {
  env = await new KubeEnv().start();
});
afterEach(async () => {
  await env.close();
});

describe('KubernetesSource: failures', () => {
  it('a missing CRD is reported, the other kinds keep flowing, and it is picked up once installed', async () => {
    env.server.uninstall('inferencepoolimports');
    env.server.create('inferencepools', pool('p1'));
    const rec = new Recorder();
    await env.source().start(rec);
    expect(rec.names()).toEqual(['InferencePool/default/p1']);
    expect(rec.last?.stale).toBe(false);
    const err = rec.errors.find((e) => e.reason === 'missing-crd');
    expect(err?.message).toContain('InferencePoolImport');
    expect(err?.message).toContain('inferencepoolimports.inference.networking.x-k8s.io/v1alpha1');
    // Reported once, not on every retry.
    await sleep(400);
    expect(rec.errors.filter((e) => e.reason === 'missing-crd')).toHaveLength(1);

    env.server.create('services', service('s1'));
    await waitFor(() => rec.names('Service').length === 1);
    env.server.install('inferencepoolimports');
    env.server.create('inferencepoolimports', importObj('imp'));
    await waitFor(() => rec.names('InferencePoolImport').length === 1, 2000, 'import after install');
  });

  it('a CRD removed at runtime takes its objects with it and is retried', async () => {
    env.server.create('inferencepoolimports', importObj('imp'));
    const rec = new Recorder();
    await env.source().start(rec);
    expect(rec.names('InferencePoolImport')).toHaveLength(1);
    env.server.uninstall('inferencepoolimports');
    await waitFor(() => rec.names('InferencePoolImport').length === 0, 2000, 'objects gone');
    expect(rec.errors.some((e) => e.reason === 'missing-crd')).toBe(true);
    expect(rec.last?.stale).toBe(false);
  });

  it('403 is reported as auth; the last objects stay, marked stale, until access returns', async () => {
    env.server.create('services', service('s1'));
    const rec = new Recorder();
    await env.source().start(rec);
    env.server.forbid('services');
    await waitFor(() => rec.errors.find((e) => e.reason === 'auth'), 2000, 'auth error');
    expect(rec.errors.find((e) => e.reason === 'auth')?.message).toMatch(/Service \(services\/v1\): forbidden \(403\)/);
    await waitFor(() => rec.last?.stale === true, 1000, 'stale');
    expect(rec.names('Service')).toEqual(['Service/default/s1']);
    env.server.allow('services');
    env.server.create('services', service('s2'));
    await waitFor(() => rec.last?.stale === false && rec.names('Service').length === 2, 2000, 'recovered');
  });

  it('403 at start rejects with reason auth and keeps retrying in the background', async () => {
    env.server.forbid('inferencepools');
    env.server.create('services', service('s1'));
    const rec = new Recorder();
    const s = env.source({ cluster: 'cluster-b', kinds: REMOTE_KINDS });
    await expect(s.start(rec)).rejects.toMatchObject({ reason: 'auth', cluster: 'cluster-b' });
    expect(rec.last?.stale).toBe(true);
    expect(rec.names('Service')).toEqual(['Service/default/s1']);
    env.server.allow('inferencepools');
    env.server.create('inferencepools', pool('p1'));
    await waitFor(() => rec.last?.stale === false && rec.names('InferencePool').length === 1, 2000, 'recovered');
  });

  it('remote member down: last objects kept and stale, then recovery with changes made meanwhile', async () => {
    env.server.create('inferencepools', pool('p1'));
    env.server.create('services', service('p1-epp'));
    const rec = new Recorder();
    await env.source({ cluster: 'cluster-b', kinds: REMOTE_KINDS }).start(rec);
    expect(rec.last?.stale).toBe(false);

    await env.server.down();
    await waitFor(() => rec.last?.stale === true, 2000, 'stale');
    expect(rec.names()).toEqual(['InferencePool/default/p1', 'Service/default/p1-epp']);
    expect(rec.errors.some((e) => e.reason === 'connect')).toBe(true);

    // Changes while the member is unreachable (the store lives on).
    env.server.delete('inferencepools', 'default', 'p1');
    env.server.create('inferencepools', pool('p2'));
    await env.server.up();
    await waitFor(() => rec.last?.stale === false, 3000, 'recovered');
    await waitFor(() => rec.names('InferencePool').join() === 'InferencePool/default/p2', 1000, 'changes after recovery');
  });

  it('down long enough for compaction: recovery re-lists', async () => {
    env.server.create('services', service('a'));
    const rec = new Recorder();
    await env.source({ kinds: ['Service'] }).start(rec);
    await env.server.down();
    await waitFor(() => rec.last?.stale === true, 2000, 'stale');
    env.server.delete('services', 'default', 'a');
    env.server.create('services', service('b'));
    env.server.compact();
    await env.server.up();
    await waitFor(() => rec.last?.stale === false && rec.names('Service').join() === 'Service/default/b', 3000, 're-listed');
  });

  it('unreachable at start: rejects with connect, state stale and empty, recovers when the server appears', async () => {
    env.server.create('services', service('a'));
    await env.server.down();
    const rec = new Recorder();
    const s = env.source({ kinds: ['Service'], initialSyncTimeoutMs: 500 });
    await expect(s.start(rec)).rejects.toMatchObject({ reason: 'connect' });
    expect(rec.last).toMatchObject({ stale: true, objects: [] });
    await env.server.up();
    await waitFor(() => rec.last?.stale === false && rec.names('Service').length === 1, 3000, 'recovered');
  });

  it('401 (bad credentials) is reported as auth', async () => {
    const { KubeApiServer, writeKubeconfig } = await import('../../harness/kube-apiserver.js');
    const { loadKubeConfig } = await import('../../../src/sources/kubernetes/kubeconfig.js');
    const guarded = new KubeApiServer({ token: 'right' });
    await guarded.start();
    try {
      const path = await writeKubeconfig(env.dir, { server: guarded.url, token: 'wrong' }, 'kc-401');
      const s = env.source({ kinds: ['Service'], kubeConfig: () => loadKubeConfig({ kubeconfig: path, namespaces: [] }) });
      await expect(s.start(new Recorder())).rejects.toMatchObject({ reason: 'auth', message: expect.stringContaining('401') });
      await s.stop();
    } finally {
      await guarded.close();
    }
  });

  it('stop() ends every watch', async () => {
    const s = env.source();
    await s.start(new Recorder());
    await waitFor(() => env.server.watchCount() === 5, 1000, 'five watches');
    await s.stop();
    await waitFor(() => env.server.watchCount() === 0, 1000, 'watches closed');
  });
});
