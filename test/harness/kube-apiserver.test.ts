/** The API server stand-in behaves like kube-apiserver for what the router uses (raw HTTP). */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeApiServer, isList } from './kube-apiserver.js';
import { jsonPatch, mergePatch } from './kube-apiserver-patch.js';

let server: KubeApiServer;
beforeEach(async () => {
  server = new KubeApiServer();
  await server.start();
});
afterEach(async () => {
  await server.close();
});

const POOLS = '/apis/inference.networking.k8s.io/v1/namespaces/default/inferencepools';
const pool = (name: string) => ({ apiVersion: 'inference.networking.k8s.io/v1', kind: 'InferencePool', metadata: { name, namespace: 'default' }, spec: { a: 1 } });

async function call(method: string, path: string, body?: unknown, contentType = 'application/json') {
  const res = await fetch(`${server.url}${path}`, { method, headers: { 'content-type': contentType }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** Reads watch events until `n` arrived (or the stream ended). */
async function watchEvents(path: string, n: number): Promise<{ type: string; object: Record<string, any> }[]> {
  const ctrl = new AbortController();
  const res = await fetch(`${server.url}${path}`, { signal: ctrl.signal });
  const events: { type: string; object: Record<string, any> }[] = [];
  let buf = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk);
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        events.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
      if (events.length >= n) break;
    }
  } finally {
    ctrl.abort();
  }
  return events;
}

describe('KubeApiServer', () => {
  it('lists with a ListMeta resourceVersion; rv increases globally', async () => {
    const a = server.create('inferencepools', pool('a'));
    const s = server.create('services', { metadata: { name: 's', namespace: 'default' }, spec: {} });
    expect(Number(s.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    const list = await call('GET', POOLS);
    expect(list.body).toMatchObject({ kind: 'InferencePoolList', metadata: { resourceVersion: s.metadata.resourceVersion }, items: [{ metadata: { name: 'a' } }] });
  });

  it('lagWatches: a write is answered (and listed) before its watch event arrives, events keep their order', async () => {
    server.lagWatches(300);
    const rv = server.create('inferencepools', pool('seed')).metadata.resourceVersion;
    const t0 = Date.now();
    const watching = watchEvents(`${POOLS}?watch=true&resourceVersion=${rv}`, 3).then((e) => ({ e, at: Date.now() - t0 }));
    await new Promise((r) => setTimeout(r, 50));
    expect((await call('POST', POOLS, pool('x'))).status).toBe(201);
    expect((await call('GET', POOLS)).body.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(['seed', 'x']);
    server.lagWatches(0); // later events still wait behind the lagging ones
    await call('POST', POOLS, pool('y'));
    await call('DELETE', `${POOLS}/x`);
    const { e, at } = await watching;
    expect(e.map((x) => `${x.type} ${x.object.metadata.name}`)).toEqual(['ADDED x', 'ADDED y', 'DELETED x']);
    expect(at).toBeGreaterThanOrEqual(300);
  });

  it('watch from a resourceVersion replays later events; from "" sends ADDED for current objects', async () => {
    const a = server.create('inferencepools', pool('a'));
    server.create('inferencepools', pool('b'));
    server.delete('inferencepools', 'default', 'a');
    const replay = await watchEvents(`${POOLS}?watch=true&resourceVersion=${a.metadata.resourceVersion}`, 2);
    expect(replay.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED b', 'DELETED a']);
    const fresh = await watchEvents(`${POOLS}?watch=true`, 1);
    expect(fresh.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED b']);
  });

  it('410 after compaction: ERROR event, or HTTP 410', async () => {
    const a = server.create('inferencepools', pool('a'));
    server.create('inferencepools', pool('b'));
    server.compact();
    const ev = await watchEvents(`${POOLS}?watch=true&resourceVersion=${a.metadata.resourceVersion}`, 1);
    expect(ev[0]).toMatchObject({ type: 'ERROR', object: { kind: 'Status', code: 410 } });
    server.goneMode = 'http';
    expect((await call('GET', `${POOLS}?watch=true&resourceVersion=${a.metadata.resourceVersion}`)).status).toBe(410);
  });

  it('generation bumps on spec changes only; /status changes only status', async () => {
    const a = server.create('inferencepools', pool('a'));
    const labelled = await call('PUT', `${POOLS}/a`, { ...a, metadata: { ...a.metadata, labels: { x: 'y' } } });
    expect(labelled.body.metadata.generation).toBe(1);
    const spec = await call('PATCH', `${POOLS}/a`, { spec: { a: 2 }, status: { ignored: true } }, 'application/merge-patch+json');
    expect(spec.body).toMatchObject({ metadata: { generation: 2 }, spec: { a: 2 } });
    expect(spec.body.status).toBeUndefined();
    const st = await call('PATCH', `${POOLS}/a/status`, { spec: { a: 3 }, status: { ok: true } }, 'application/merge-patch+json');
    expect(st.body).toMatchObject({ metadata: { generation: 2 }, spec: { a: 2 }, status: { ok: true } });
  });

  it('pruneStatus: a status write keeps only what the CRD schema declares, in the answer and in what is read back', async () => {
    server.create('inferencepools', pool('a'));
    server.pruneStatus('inferencepools', (st) => ({ parents: ((st as { parents: Record<string, unknown>[] }).parents ?? []).map(({ parentRef }) => ({ parentRef })) }));
    const st = await call('PATCH', `${POOLS}/a/status`, { status: { parents: [{ parentRef: { name: 'g' }, controllerName: 'x/y' }] } }, 'application/merge-patch+json');
    expect(st.body.status).toEqual({ parents: [{ parentRef: { name: 'g' } }] });
    expect((await call('GET', `${POOLS}/a`)).body.status).toEqual({ parents: [{ parentRef: { name: 'g' } }] });
  });

  it('resourceVersion conflicts -> 409 for PUT, merge-patch and json-patch; failed test op -> 422', async () => {
    const a = server.create('inferencepools', pool('a'));
    server.update('inferencepools', { ...a, spec: { a: 5 } });
    expect((await call('PUT', `${POOLS}/a/status`, { ...a, status: { x: 1 } })).status).toBe(409);
    expect((await call('PATCH', `${POOLS}/a/status`, { metadata: { resourceVersion: a.metadata.resourceVersion }, status: { x: 1 } }, 'application/merge-patch+json')).status).toBe(409);
    expect((await call('PATCH', `${POOLS}/a`, [{ op: 'replace', path: '/metadata/resourceVersion', value: a.metadata.resourceVersion }], 'application/json-patch+json')).status).toBe(409);
    expect((await call('PATCH', `${POOLS}/a`, [{ op: 'test', path: '/spec/a', value: 1 }], 'application/json-patch+json')).status).toBe(422);
    expect((await call('PATCH', `${POOLS}/a`, { spec: {} }, 'application/strategic-merge-patch+json')).status).toBe(415);
  });

  it('403 and "not installed" 404 toggles; 404 for unknown objects', async () => {
    server.forbid('inferencepools');
    expect(await call('GET', POOLS)).toMatchObject({ status: 403, body: { reason: 'Forbidden' } });
    server.allow('inferencepools');
    server.uninstall('inferencepools');
    expect((await call('GET', POOLS)).status).toBe(404);
    server.install('inferencepools');
    expect((await call('GET', `${POOLS}/missing`)).status).toBe(404);
  });

  it('authorize: RBAC by bearer token; a denied request is 403 naming the user, verb and namespace, nothing stored', async () => {
    server.authorize((token, r) => token === 'writer' && r.namespace === 'mcip-member-a');
    const records = (ns: string) => `/apis/mcip-router.dev/v1alpha1/namespaces/${ns}/memberexportrecords`;
    const as = (token: string, method: string, path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const rec = (ns: string) => ({ apiVersion: 'mcip-router.dev/v1alpha1', kind: 'MemberExportRecord', metadata: { name: 'a', namespace: ns }, spec: {} });
    expect((await as('writer', 'POST', records('mcip-member-a'), rec('mcip-member-a'))).status).toBe(201);
    const denied = await as('writer', 'POST', records('mcip-member-b'), rec('mcip-member-b'));
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { message: string }).message).toBe('memberexportrecords.mcip-router.dev is forbidden: User "writer" cannot create resource "memberexportrecords" in the namespace "mcip-member-b"');
    expect(server.get('memberexportrecords', 'mcip-member-b', 'a')).toBeUndefined();
    expect((await as('other', 'GET', records('mcip-member-a'))).status).toBe(403);
    server.authorize(undefined);
    expect((await as('other', 'GET', records('mcip-member-a'))).status).toBe(200);
  });

  it('leases: create, read, conflicting replace', async () => {
    const path = '/apis/coordination.k8s.io/v1/namespaces/mcip/leases';
    const created = await call('POST', path, { metadata: { name: 'l' }, spec: { holderIdentity: 'a' } });
    expect(created.status).toBe(201);
    expect((await call('POST', path, { metadata: { name: 'l' }, spec: {} })).status).toBe(409);
    const ok = await call('PUT', `${path}/l`, { ...created.body, spec: { holderIdentity: 'b' } });
    expect(ok.status).toBe(200);
    expect((await call('PUT', `${path}/l`, { ...created.body, spec: { holderIdentity: 'c' } })).status).toBe(409);
  });

  it('down/up keeps the port and the data', async () => {
    server.create('inferencepools', pool('a'));
    const url = server.url;
    await server.down();
    await expect(fetch(`${url}${POOLS}`)).rejects.toThrow();
    await server.up();
    expect(server.url).toBe(url);
    expect((await call('GET', POOLS)).body.items).toHaveLength(1);
  });
});

describe('patch helpers', () => {
  it('merge patch: null deletes, arrays replace', () => {
    expect(mergePatch({ a: 1, b: [1, 2], c: { d: 1, e: 2 } }, { a: null, b: [3], c: { e: null, f: 1 } })).toEqual({ b: [3], c: { d: 1, f: 1 } });
  });
  it('json patch: add/remove/replace/move/copy/test', () => {
    const doc = { a: [1, 2], b: { c: 1 } };
    expect(jsonPatch(doc, [{ op: 'add', path: '/a/-', value: 3 }, { op: 'remove', path: '/a/0' }, { op: 'replace', path: '/b/c', value: 2 }, { op: 'copy', from: '/b', path: '/d' }, { op: 'move', from: '/d/c', path: '/e' }, { op: 'test', path: '/e', value: 2 }])).toEqual({ a: [2, 3], b: { c: 2 }, d: {}, e: 2 });
    expect(doc).toEqual({ a: [1, 2], b: { c: 1 } });
  });
});

describe('hang()', () => {
  it('holds matching requests unanswered (connection open), answers the rest, and down() drops the held ones', async () => {
    server.create('inferencepools', pool('p1'));
    const release = server.hang(isList);
    const listing = fetch(`${server.url}${POOLS}`).then(
      (r) => r.status,
      () => 'dropped',
    );
    expect((await call('GET', `${POOLS}/p1`)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.heldCount).toBe(1);
    release();
    expect((await call('GET', POOLS)).status).toBe(200);
    expect(server.heldCount).toBe(1);
    await server.down();
    expect(await listing).toBe('dropped');
    expect(server.heldCount).toBe(0);
  });

  it('Gateway API /status: PATCH changes status only, a stale resourceVersion is 409; GatewayClasses are cluster-scoped', async () => {
    const gw = server.create('gateways', { metadata: { name: 'gw', namespace: 'infra' }, spec: { gatewayClassName: 'c', listeners: [] } });
    const path = '/apis/gateway.networking.k8s.io/v1/namespaces/infra/gateways/gw/status';
    const patched = await call('PATCH', path, { metadata: { resourceVersion: gw.metadata.resourceVersion }, spec: { gatewayClassName: 'other' }, status: { addresses: [{ value: '10.0.0.1' }] } }, 'application/merge-patch+json');
    expect(patched.status).toBe(200);
    expect(patched.body.spec.gatewayClassName).toBe('c');
    expect(patched.body.status.addresses).toEqual([{ value: '10.0.0.1' }]);
    expect(patched.body.metadata.generation).toBe(1);
    const stale = await call('PATCH', path, { metadata: { resourceVersion: gw.metadata.resourceVersion }, status: {} }, 'application/merge-patch+json');
    expect(stale.status).toBe(409);
    const routes = '/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes';
    server.create('httproutes', { metadata: { name: 'r', namespace: 'default' }, spec: { parentRefs: [] } });
    const put = await call('PUT', `${routes}/r/status`, { metadata: { name: 'r' }, spec: { parentRefs: [{ name: 'x' }] }, status: { parents: [] } });
    expect(put.body.spec.parentRefs).toEqual([]);
    expect(put.body.status.parents).toEqual([]);

    server.create('gatewayclasses', { metadata: { name: 'mcip' }, spec: { controllerName: 'example.com/gw' } });
    const classes = await call('GET', '/apis/gateway.networking.k8s.io/v1/gatewayclasses');
    expect(classes.body.items.map((c: Record<string, any>) => [c.metadata.name, c.metadata.namespace])).toEqual([['mcip', undefined]]);
    expect((await call('GET', '/apis/gateway.networking.k8s.io/v1/namespaces/default/gatewayclasses/mcip')).status).toBe(404);
    const cls = await call('PATCH', '/apis/gateway.networking.k8s.io/v1/gatewayclasses/mcip/status', { status: { conditions: [{ type: 'Accepted', status: 'True' }] } }, 'application/merge-patch+json');
    expect(cls.body.status.conditions[0].type).toBe('Accepted');
    expect(cls.body.spec.controllerName).toBe('example.com/gw');
  });

  it('About API ClusterProperty: cluster-scoped, one object in v1beta1 and v1alpha1, /status only in v1beta1, a missing one is NotFound', async () => {
    const about = '/apis/about.k8s.io';
    expect((await call('GET', `${about}/v1beta1/clusterproperties/cluster.clusterset.k8s.io`)).body).toMatchObject({ kind: 'Status', reason: 'NotFound' });
    server.create('clusterproperties', { apiVersion: 'about.k8s.io/v1beta1', kind: 'ClusterProperty', metadata: { name: 'cluster.clusterset.k8s.io' }, spec: { value: 'cluster-a' } });
    for (const v of ['v1beta1', 'v1alpha1']) {
      const got = await call('GET', `${about}/${v}/clusterproperties/cluster.clusterset.k8s.io`);
      expect([got.status, got.body.spec.value, got.body.metadata.namespace]).toEqual([200, 'cluster-a', undefined]);
    }
    expect((await call('GET', `${about}/v1beta1/namespaces/default/clusterproperties/cluster.clusterset.k8s.io`)).status).toBe(404);
    expect((await call('PATCH', `${about}/v1alpha1/clusterproperties/cluster.clusterset.k8s.io/status`, { status: {} }, 'application/merge-patch+json')).status).toBe(404);
    expect((await call('PATCH', `${about}/v1beta1/clusterproperties/cluster.clusterset.k8s.io/status`, { status: {} }, 'application/merge-patch+json')).status).toBe(200);
  });

  it('labelSelector: lists and watches only matching objects; a relabelled object is ADDED or DELETED for the watch; a bad selector is 400', async () => {
    const PROFILES = '/apis/multicluster.x-k8s.io/v1alpha1/namespaces/fleet/clusterprofiles';
    const profile = (name: string, labels: Record<string, string>) => ({ metadata: { name, namespace: 'fleet', labels }, spec: { clusterManager: { name: 'm' } } });
    server.create('clusterprofiles', profile('a', { 'x-k8s.io/cluster-manager': 'ocm', tier: 'gpu' }));
    server.create('clusterprofiles', profile('b', { 'x-k8s.io/cluster-manager': 'fleet' }));
    server.create('clusterprofiles', profile('c', {}));
    const names = async (selector: string): Promise<string[]> =>
      (await call('GET', `${PROFILES}?labelSelector=${encodeURIComponent(selector)}`)).body.items.map((i: Record<string, any>) => i.metadata.name);
    expect(await names('x-k8s.io/cluster-manager=ocm')).toEqual(['a']);
    expect(await names('x-k8s.io/cluster-manager!=ocm')).toEqual(['b', 'c']);
    expect(await names('x-k8s.io/cluster-manager in (ocm, fleet),!tier')).toEqual(['b']);
    expect(await names('x-k8s.io/cluster-manager notin (ocm)')).toEqual(['b', 'c']);
    expect(await names('tier')).toEqual(['a']);
    expect((await call('GET', `${PROFILES}?labelSelector=${encodeURIComponent('a in b')}`)).status).toBe(400);
    const v2 = await call('GET', '/apis/multicluster.x-k8s.io/v1alpha2/namespaces/fleet/clusterprofiles');
    expect(v2.body.items.map((i: Record<string, any>) => i.apiVersion)).toEqual(Array(3).fill('multicluster.x-k8s.io/v1alpha2'));

    const rv = server.store.resourceVersion;
    const events = watchEvents(`${PROFILES}?watch=true&resourceVersion=${rv}&labelSelector=${encodeURIComponent('x-k8s.io/cluster-manager=ocm')}`, 3);
    await new Promise((r) => setTimeout(r, 50));
    const b = server.get('clusterprofiles', 'fleet', 'b')!;
    server.update('clusterprofiles', { ...b, metadata: { ...b.metadata, labels: { 'x-k8s.io/cluster-manager': 'ocm' } } });
    const c = server.get('clusterprofiles', 'fleet', 'c')!;
    server.update('clusterprofiles', { ...c, metadata: { ...c.metadata, labels: { other: 'x' } } });
    const a = server.get('clusterprofiles', 'fleet', 'a')!;
    server.update('clusterprofiles', { ...a, metadata: { ...a.metadata, labels: {} } });
    server.delete('clusterprofiles', 'fleet', 'b');
    expect((await events).map((e) => [e.type, e.object.metadata.name])).toEqual([
      ['ADDED', 'b'],
      ['DELETED', 'a'],
      ['DELETED', 'b'],
    ]);
  });
});
