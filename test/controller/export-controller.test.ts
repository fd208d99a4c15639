/**
 * The export controller against three API-server stand-ins (cluster-a, -b, -c):
 * imports created in every member, our entries and conditions, withdrawal with
 * grace, annotation removal, member outage, missing namespace, 409 conflicts
 * and two replicas with one writer.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isList } from '../harness/kube-apiserver.js';
import { ApiError } from '../harness/kube-apiserver-store.js';
import { importObj, service, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ClusterSetEnv, EXPORTER, rbacGrants, rbacRequests, withinOneSecond } from './export-fixtures.js';

const MEMBERS = ['cluster-a', 'cluster-b', 'cluster-c'];
const OTHER = { name: 'example.com/other-exporter', exportingClusters: [{ name: 'cluster-z' }] };
const GATEWAY_PARENT = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' },
  controllerName: 'example.com/gateway',
  conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
};

let env: ClusterSetEnv;
beforeEach(async () => {
  env = await new ClusterSetEnv(MEMBERS).start();
});
afterEach(async () => {
  await env.close();
});

const everywhere = (name: string, clusters: string[]) => () => MEMBERS.every((m) => env.exportingClusters(m, name)?.join(',') === clusters.join(','));

describe('export controller (three members)', () => {
  it('creates the import in every member within 1 s, with our entry and Exported True on the pool; other entries stay', async () => {
    env.server('cluster-a').create('inferencepoolimports', importObj('llm'));
    env.server('cluster-a').updateStatus('inferencepoolimports', { ...env.server('cluster-a').get('inferencepoolimports', 'default', 'llm')!, status: { controllers: [OTHER] } });
    await env.replica();
    env.exportPool('cluster-b', 'llm');
    env.server('cluster-b').updateStatus('inferencepools', { ...env.server('cluster-b').get('inferencepools', 'default', 'llm')!, status: { parents: [GATEWAY_PARENT] } });
    await withinOneSecond(everywhere('llm', ['cluster-b']), 'imports everywhere');
    for (const m of MEMBERS) {
      const imp = env.server(m).get('inferencepoolimports', 'default', 'llm')!;
      expect(imp.spec).toBeUndefined();
      const ours = env.ours(m, 'llm')!;
      expect(ours.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([['Accepted', 'True', 'Accepted']]);
    }
    expect(env.controllers('cluster-a', 'llm')?.[0]).toEqual(OTHER);
    await waitFor(() => env.exported('cluster-b', 'llm')?.status === 'True', 8000, 'Exported True');
    const parents = env.parents('cluster-b', 'llm');
    expect(parents[0]).toEqual(GATEWAY_PARENT);
    expect(parents[1]?.parentRef).toEqual({ group: 'inference.networking.x-k8s.io', kind: 'InferencePoolImport', namespace: 'default', name: 'llm' });
    expect(env.exported('cluster-b', 'llm')?.reason).toBe('Exported');

    // Converged: no more writes.
    const writes = (): number[] => MEMBERS.map((m) => env.server(m).writes().filter((w) => w.plural !== 'leases').length);
    const settled = writes();
    await sleep(300);
    expect(writes()).toEqual(settled);
  });

  it('a second exporter joins every list; a member that stops exporting leaves every list; its pool entry goes with the annotation', async () => {
    await env.replica();
    env.exportPool('cluster-b', 'llm');
    env.exportPool('cluster-c', 'llm');
    await waitFor(everywhere('llm', ['cluster-b', 'cluster-c']), 8000, 'two exporters');
    await waitFor(() => env.exported('cluster-c', 'llm')?.status === 'True', 8000, 'c Exported');
    env.annotate('cluster-b', 'llm', undefined);
    await waitFor(everywhere('llm', ['cluster-c']), 8000, 'b withdrawn everywhere');
    await waitFor(() => env.parents('cluster-b', 'llm').length === 0, 8000, 'b pool entry removed');
    expect(env.exported('cluster-c', 'llm')?.status).toBe('True');
  });

  it('no exporter left: our entry goes at once, the import after the grace, unless another controller still exports it', async () => {
    await env.replica();
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    const c = env.server('cluster-c');
    c.updateStatus('inferencepoolimports', { ...c.get('inferencepoolimports', 'default', 'llm')!, status: { controllers: [...env.controllers('cluster-c', 'llm')!, OTHER] } });
    const t0 = Date.now();
    env.server('cluster-b').delete('inferencepools', 'default', 'llm');
    await waitFor(() => MEMBERS.every((m) => env.ours(m, 'llm') === undefined), 8000, 'entries removed');
    expect(env.server('cluster-a').get('inferencepoolimports', 'default', 'llm')).toBeDefined();
    await waitFor(() => env.server('cluster-a').get('inferencepoolimports', 'default', 'llm') === undefined, 8000, 'deleted after grace');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    expect(env.server('cluster-b').get('inferencepoolimports', 'default', 'llm')).toBeUndefined();
    expect(env.controllers('cluster-c', 'llm')).toEqual([OTHER]);

    // Everything it asked of each member is granted by the shipped RBAC: its own cluster (clusterName, cluster-a) and every other member.
    const used = (members: string[]) => [...new Set(members.flatMap((m) => [...rbacRequests(env.server(m))]))].sort();
    expect(used(MEMBERS)).toContain('inferencepoolimports delete');
    expect(used(['cluster-a'])).toContain('clusterproperties get');
    for (const [file, role, members] of [['deploy/rbac/export-member.yaml', 'mcip-export-member', ['cluster-b', 'cluster-c']], ['deploy/rbac/export-controller.yaml', 'mcip-export-controller', ['cluster-a']]] as const) {
      const granted = rbacGrants(file, role);
      expect(used([...members]).filter((u) => !granted.has(u))).toEqual([]);
    }
  });

  it('a replica taking over during the grace still deletes the imports once the grace is over', async () => {
    const r1 = await env.replica('replica-1');
    await waitFor(() => r1.isLeader(), 8000, 'r1 leads');
    const r2 = await env.replica('replica-2');
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    env.server('cluster-b').delete('inferencepools', 'default', 'llm');
    await waitFor(() => MEMBERS.every((m) => env.ours(m, 'llm') === undefined), 8000, 'entries removed');
    await r1.stop();
    await waitFor(() => r2.isLeader(), 8000, 'r2 leads');
    await waitFor(() => MEMBERS.every((m) => env.server(m).get('inferencepoolimports', 'default', 'llm') === undefined), 8000, 'deleted by r2');
  });

  it('an exporter returning within the grace keeps the imports', async () => {
    await env.replica('replica-1', { withdrawalGraceMs: 1500 });
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    env.annotate('cluster-b', 'llm', undefined);
    await waitFor(() => env.ours('cluster-a', 'llm') === undefined, 8000, 'withdrawn');
    env.annotate('cluster-b', 'llm', 'ClusterSet');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'back');
    await sleep(1700); // past the first withdrawal's deadline
    expect(MEMBERS.every((m) => env.server(m).writes('inferencepoolimports').every((w) => w.method !== 'DELETE'))).toBe(true);
  });

  it('a pool our decoder refuses keeps its recorded export instead of being withdrawn', async () => {
    await env.replica();
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    const b = env.server('cluster-b');
    const cur = b.get('inferencepools', 'default', 'llm')!;
    b.update('inferencepools', { ...cur, spec: { ...(cur.spec as object), targetPorts: [{ number: 0 }] } });
    await sleep(700); // longer than the grace
    expect(everywhere('llm', ['cluster-b'])()).toBe(true);
    expect(MEMBERS.every((m) => env.server(m).writes('inferencepoolimports').every((w) => w.method !== 'DELETE'))).toBe(true);
  });

  it('an unsupported annotation value: Exported False NotSupported, nothing imported', async () => {
    await env.replica();
    env.exportPool('cluster-b', 'llm', 'default', 'Region');
    await waitFor(() => env.exported('cluster-b', 'llm'), 8000, 'condition');
    expect(env.exported('cluster-b', 'llm')).toMatchObject({ status: 'False', reason: 'NotSupported' });
    expect(env.exported('cluster-b', 'llm')?.message).toContain('"Region"');
    expect(MEMBERS.map((m) => env.server(m).get('inferencepoolimports', 'default', 'llm'))).toEqual([undefined, undefined, undefined]);
  });

  it('a member that is down delays only its own part; Exported names it until it is back', async () => {
    await env.replica();
    await env.server('cluster-c').down();
    env.exportPool('cluster-b', 'llm');
    await withinOneSecond(() => env.exportingClusters('cluster-a', 'llm') && env.exportingClusters('cluster-b', 'llm'), 'a and b');
    await waitFor(() => env.exported('cluster-b', 'llm')?.message === 'waiting for: cluster-c (its API server is unreachable)', 8000, 'names only c');
    expect(env.exported('cluster-b', 'llm')).toMatchObject({ status: 'False', reason: 'Pending' });
    await env.server('cluster-c').up();
    await waitFor(everywhere('llm', ['cluster-b']), 10_000, 'c caught up');
    await waitFor(() => env.exported('cluster-b', 'llm')?.status === 'True', 8000, 'Exported True');
  });

  it('a member whose API server accepts writes but never answers delays only its own part', async () => {
    const h = await env.replica();
    env.server('cluster-c').onWrite(() => new Promise(() => undefined));
    env.exportPool('cluster-b', 'llm');
    env.exportPool('cluster-b', 'other');
    await withinOneSecond(() => ['llm', 'other'].every((n) => env.exportingClusters('cluster-a', n) && env.exportingClusters('cluster-b', n)), 'a and b');
    await waitFor(() => h.debug().pools['default/llm']?.members['cluster-c']?.import?.why?.includes('timed out') && h.debug().pools['default/llm']?.members['cluster-c']?.import, 8000, 'timeout recorded');
    expect(env.exported('cluster-b', 'llm')?.status).toBe('False');
  });

  it('a member whose API server accepts connections but never answers anything: the others within 1 s, it is named, it catches up', async () => {
    const c = env.server('cluster-c');
    const answer = c.hang();
    const h = await env.replica();
    env.exportPool('cluster-b', 'llm');
    await withinOneSecond(() => env.exportingClusters('cluster-a', 'llm') && env.exportingClusters('cluster-b', 'llm'), 'a and b');
    await waitFor(() => env.exported('cluster-b', 'llm')?.message === 'waiting for: cluster-c (its API server is unreachable)', 8000, 'names only c');
    expect(h.debug().members.find((m) => m.name === 'cluster-c')).toMatchObject({ reachable: false, synced: false });
    expect(h.debug().members.find((m) => m.name === 'cluster-c')?.error).toContain('timed out');
    answer();
    await waitFor(everywhere('llm', ['cluster-b']), 15_000, 'c caught up');
    await waitFor(() => env.exported('cluster-b', 'llm')?.status === 'True', 8000, 'Exported True');
  });

  it('a member that answers everything but the re-LIST: reported unreachable within seconds, its export kept, written meanwhile, fresh again', async () => {
    const h = await env.replica();
    env.exportPool('cluster-b', 'llm');
    env.exportPool('cluster-c', 'llm');
    await waitFor(everywhere('llm', ['cluster-b', 'cluster-c']), 8000, 'two exporters');
    const c = env.server('cluster-c');
    const answerLists = c.hang(isList);
    // A change elsewhere, then a compaction: the pools' resume point is too old (410), so they must be re-listed.
    c.create('services', service('unrelated'));
    c.compact();
    const cut = Date.now();
    c.dropWatches('inferencepools');
    await waitFor(() => h.debug().members.find((m) => m.name === 'cluster-c')?.reachable === false, 8000, 'c reported');
    expect(Date.now() - cut).toBeLessThan(5000);
    // Its last known pools still export: b withdrawing leaves c alone in every list, c's included (writes are answered).
    env.annotate('cluster-b', 'llm', undefined);
    await waitFor(everywhere('llm', ['cluster-c']), 8000, 'b withdrawn everywhere, c kept');
    expect(MEMBERS.every((m) => env.server(m).writes('inferencepoolimports').every((w) => w.method !== 'DELETE'))).toBe(true);
    answerLists();
    await waitFor(() => h.debug().members.find((m) => m.name === 'cluster-c')?.reachable === true, 8000, 'fresh again');
    expect(everywhere('llm', ['cluster-c'])()).toBe(true);
  });

  it('a namespace missing in a member is reported, not created', async () => {
    const h = await env.replica();
    env.server('cluster-c').onWrite((ctx) => {
      if (ctx.method === 'POST' && ctx.namespace === 'team-x') throw new ApiError(404, 'NotFound', 'namespaces "team-x" not found');
    });
    env.exportPool('cluster-b', 'llm', 'team-x');
    await waitFor(() => env.exportingClusters('cluster-a', 'llm') === undefined && env.ours('cluster-a', 'llm', 'team-x'), 8000, 'a imported');
    await waitFor(() => env.exported('cluster-b', 'llm', 'team-x')?.message.includes('namespace team-x does not exist'), 8000, 'reported');
    expect(env.exported('cluster-b', 'llm', 'team-x')?.message).toContain('cluster-c');
    const rec = h.debug().pools['team-x/llm']?.members['cluster-c']?.import;
    expect(rec).toMatchObject({ action: 'create', outcome: 'namespace-missing' });
    expect(h.debug().members.find((m) => m.name === 'cluster-c')?.missingNamespaces).toEqual(['team-x']);

    // Another 404 on create (the CRD is not served) is a failure, not a missing namespace.
    env.server('cluster-a').onWrite((ctx) => {
      if (ctx.method === 'POST' && ctx.namespace === 'team-y') throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
    });
    env.exportPool('cluster-b', 'llm', 'team-y');
    await waitFor(() => h.debug().pools['team-y/llm']?.members['cluster-a']?.import?.outcome === 'error', 8000, 'error recorded');
    expect(h.debug().members.find((m) => m.name === 'cluster-a')?.missingNamespaces).toEqual([]);
  });

  it('409 conflicts are retried and another controller written meanwhile is kept', async () => {
    const a = env.server('cluster-a');
    a.create('inferencepoolimports', importObj('llm'));
    let raced = false;
    a.onWrite((ctx) => {
      if (raced || ctx.plural !== 'inferencepoolimports' || ctx.subresource !== 'status') return;
      raced = true;
      const cur = a.get('inferencepoolimports', 'default', 'llm')!;
      a.updateStatus('inferencepoolimports', { ...cur, status: { controllers: [OTHER] } });
    });
    const h = await env.replica();
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    expect(raced).toBe(true);
    await sleep(50);
    // Retried within the same write: no failure was recorded.
    expect(h.record.actionCounts().filter((c) => c.outcome === 'error' || c.outcome === 'conflict')).toEqual([]);
    expect(env.controllers('cluster-a', 'llm')?.map((c) => c.name)).toEqual([OTHER.name, EXPORTER]);
  });

  it('two replicas: one writer; when it stops the other takes over', async () => {
    const r1 = await env.replica('replica-1');
    await waitFor(() => r1.isLeader(), 8000, 'r1 leads');
    const r2 = await env.replica('replica-2');
    env.exportPool('cluster-b', 'llm');
    await waitFor(everywhere('llm', ['cluster-b']), 8000, 'exported');
    await sleep(300);
    expect(r2.isLeader()).toBe(false);
    expect(Object.keys(r2.debug().pools['default/llm']?.members ?? {})).toEqual([]);
    await r1.stop();
    await waitFor(() => r2.isLeader(), 8000, 'r2 leads');
    env.exportPool('cluster-c', 'llm');
    await waitFor(everywhere('llm', ['cluster-b', 'cluster-c']), 8000, 'r2 writes');
    await waitFor(() => r2.record.actionCounts().some((c) => c.member === 'cluster-a' && c.action === 'status' && c.outcome === 'written'), 8000, 'r2 counted its write');
    expect(r1.record.actionCounts().filter((c) => c.action === 'status')).toEqual([]);
  });
});
