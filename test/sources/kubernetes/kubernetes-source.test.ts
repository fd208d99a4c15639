import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesSourceError } from '../../../src/sources/kubernetes/kubernetes-source.js';
import { LOCAL_KINDS, LOCAL_PICKER_KINDS, REMOTE_KINDS } from '../../../src/sources/kubernetes/resources.js';
import { KubeEnv, Recorder, gateway, importObj, pool, route, service, sleep, waitFor } from './kube-fixtures.js';

let env: KubeEnv;
beforeEach(async () => {
  env = await new KubeEnv().start();
});
afterEach(async () => {
  await env.close();
});

describe('KubernetesSource: list and watch', () => {
  it('delivers the initial objects before start() resolves, all five kinds', async () => {
    env.server.create('inferencepools', pool('p1'));
    env.server.create('services', service('p1-epp'));
    env.server.create('gateways', gateway('gw'));
    env.server.create('httproutes', route('r1', 'gw', [{ kind: 'InferencePool', name: 'p1' }]));
    env.server.create('inferencepoolimports', importObj('imp'));
    const rec = new Recorder();
    await env.source().start(rec);
    expect(rec.states).toHaveLength(1);
    expect(rec.last?.stale).toBe(false);
    expect(rec.names()).toEqual([
      'Gateway/default/gw',
      'HTTPRoute/default/r1',
      'InferencePool/default/p1',
      'InferencePoolImport/default/imp',
      'Service/default/p1-epp',
    ]);
    expect(rec.errors).toEqual([]);
  });

  it('objects created, updated and deleted reach the state within 1 s', async () => {
    const rec = new Recorder();
    await env.source().start(rec);
    const t0 = Date.now();
    env.server.create('inferencepools', pool('p1'));
    await waitFor(() => rec.names().includes('InferencePool/default/p1'), 1000, 'create');
    const p = env.server.get('inferencepools', 'default', 'p1')!;
    env.server.update('inferencepools', { ...p, spec: { ...(p.spec as object), targetPorts: [{ number: 9000 }] } });
    await waitFor(() => {
      const o = rec.last?.objects.find((x) => x.kind === 'InferencePool');
      return o?.kind === 'InferencePool' && o.spec.targetPorts[0]?.number === 9000;
    }, 1000, 'update');
    env.server.delete('inferencepools', 'default', 'p1');
    await waitFor(() => !rec.names().includes('InferencePool/default/p1'), 1000, 'delete');
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('coalesces a burst of events into few states', async () => {
    const rec = new Recorder();
    await env.source({ coalesceMs: 50, coalesceMaxMs: 500 }).start(rec);
    const before = rec.states.length;
    for (let i = 0; i < 200; i++) env.server.create('services', service(`svc-${i}`));
    await waitFor(() => rec.names('Service').length === 200, 1000, '200 services');
    await sleep(100);
    expect(rec.states.length - before).toBeLessThanOrEqual(3);
  });

  it('a dropped watch resumes from its resourceVersion without missing events', async () => {
    const rec = new Recorder();
    await env.source().start(rec);
    env.server.create('services', service('a'));
    await waitFor(() => rec.names('Service').length === 1);
    const lists = env.server.requests.filter((r) => r.plural === 'services' && !r.watch && r.method === 'GET').length;
    expect(env.server.dropWatches('services')).toBeGreaterThan(0);
    // Changes while the watch is down.
    env.server.create('services', service('b'));
    env.server.delete('services', 'default', 'a');
    await waitFor(() => rec.names('Service').join() === 'Service/default/b', 1000, 'resume');
    // Resumed by watch, not by a new list.
    expect(env.server.requests.filter((r) => r.plural === 'services' && !r.watch && r.method === 'GET').length).toBe(lists);
  });

  it('bookmarks advance the resourceVersion so a resume after compaction does not re-list', async () => {
    const rec = new Recorder();
    await env.source().start(rec);
    env.server.create('gateways', gateway('gw'));
    await waitFor(() => rec.names('Service').length === 0 && rec.names('Gateway').length === 1);
    env.server.bookmark();
    await sleep(50);
    env.server.compact();
    const lists = env.server.requests.filter((r) => r.plural === 'services' && !r.watch).length;
    env.server.dropWatches('services');
    env.server.create('services', service('x'));
    await waitFor(() => rec.names('Service').length === 1, 1000, 'service after resume');
    expect(env.server.requests.filter((r) => r.plural === 'services' && !r.watch).length).toBe(lists);
  });

  for (const mode of ['event', 'http'] as const) {
    it(`410 Gone (${mode}) on resume -> re-list, deletions in between are seen`, async () => {
      env.server.goneMode = mode;
      env.server.create('services', service('a'));
      env.server.create('services', service('b'));
      const rec = new Recorder();
      await env.source().start(rec);
      env.server.dropWatches('services');
      env.server.delete('services', 'default', 'a');
      env.server.create('services', service('c'));
      env.server.compact();
      await waitFor(() => rec.names('Service').join() === 'Service/default/b,Service/default/c', 1000, 're-list');
      expect(env.server.requests.filter((r) => r.plural === 'services' && !r.watch).length).toBeGreaterThanOrEqual(2);
    });
  }

  it('watches only the configured namespaces', async () => {
    env.server.create('services', service('in-a', 'ns-a'));
    env.server.create('services', service('in-b', 'ns-b'));
    env.server.create('services', service('in-c', 'ns-c'));
    const rec = new Recorder();
    await env.source({ namespaces: ['ns-a', 'ns-b'] }).start(rec);
    expect(rec.names('Service')).toEqual(['Service/ns-a/in-a', 'Service/ns-b/in-b']);
    env.server.create('services', service('late', 'ns-c'));
    env.server.create('services', service('late', 'ns-b'));
    await waitFor(() => rec.names('Service').includes('Service/ns-b/late'));
    expect(rec.names('Service')).not.toContain('Service/ns-c/late');
    expect(env.server.requests.some((r) => r.plural === 'services' && r.namespace === undefined)).toBe(false);
  });

  it('lists GatewayClasses (cluster-scoped) cluster-wide even when limited to namespaces, as the Endpoint Picker role reads them', async () => {
    env.server.create('gatewayclasses', { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'istio' }, spec: { controllerName: 'istio.io/gateway-controller' } });
    const rec = new Recorder();
    await env.source({ namespaces: ['ns-a'], kinds: [...LOCAL_PICKER_KINDS] }).start(rec);
    const cls = rec.last?.objects.find((o) => o.kind === 'GatewayClass');
    expect(cls).toMatchObject({ metadata: { name: 'istio' }, spec: { controllerName: 'istio.io/gateway-controller' } });
    expect(env.server.requests.some((r) => r.plural === 'gatewayclasses' && r.namespace !== undefined)).toBe(false);
    expect(LOCAL_KINDS).not.toContain('GatewayClass');
  });

  it('reports invalid objects in errors and keeps serving the rest', async () => {
    env.server.create('inferencepools', pool('good'));
    env.server.create('inferencepools', { ...pool('bad'), spec: { selector: { matchLabels: { a: 'b' } }, targetPorts: [{ number: 'x' }] } });
    const rec = new Recorder();
    await env.source().start(rec);
    expect(rec.names('InferencePool')).toEqual(['InferencePool/default/good']);
    expect(rec.last?.errors.length).toBeGreaterThan(0);
    expect(rec.last?.errors[0]?.object).toContain('default/bad');
  });

  it('lists page by page (limit/continue)', async () => {
    for (let i = 0; i < 1200; i++) env.server.create('services', service(`s${String(i).padStart(4, '0')}`));
    const rec = new Recorder();
    await env.source({ kinds: ['Service'] }).start(rec);
    expect(rec.names('Service')).toHaveLength(1200);
    expect(env.server.requests.filter((r) => r.plural === 'services' && !r.watch).length).toBe(3);
  });

  it('a remote member watches only InferencePool, Service and Gateway', async () => {
    const rec = new Recorder();
    await env.source({ cluster: 'cluster-b', kinds: REMOTE_KINDS }).start(rec);
    const plurals = new Set(env.server.requests.map((r) => r.plural));
    expect([...plurals].sort()).toEqual(['gateways', 'inferencepools', 'services']);
  });

  it('rejects start() with reason read when the kubeconfig context does not exist', async () => {
    const { loadKubeConfig } = await import('../../../src/sources/kubernetes/kubeconfig.js');
    const s = env.source({ kubeConfig: () => loadKubeConfig({ kubeconfig: env.kubeconfig, context: 'nope', namespaces: [] }) });
    await expect(s.start(new Recorder())).rejects.toMatchObject({ reason: 'read', message: expect.stringContaining('context "nope" not found') });
  });

  it('uses the configured context, not the current one', async () => {
    const { writeKubeconfig } = await import('../../harness/kube-apiserver.js');
    const { loadKubeConfig } = await import('../../../src/sources/kubernetes/kubeconfig.js');
    const path = await writeKubeconfig(env.dir, { server: env.server.url, context: 'member', currentContext: 'decoy' }, 'kc2');
    const rec = new Recorder();
    await env.source({ kubeConfig: () => loadKubeConfig({ kubeconfig: path, context: 'member', namespaces: [] }) }).start(rec);
    expect(rec.last?.stale).toBe(false);
    expect(KubernetesSourceError).toBeDefined();
  });
});
