/**
 * The member agent (push/pull topology) against four API-server stand-ins: a hub
 * enforcing deploy/rbac/export-agent-hub.yaml and members cluster-a, -b, -c, each
 * with its own agent. No component holds another cluster's credentials.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { ExportConfigError } from '../../src/controller/export-runtime.js';
import { clusterProperty } from '../sources/identity/about-fixtures.js';
import { hubToken, PushPullEnv, rbacAuthorizer, verbOf } from './export-agent-fixtures.js';
import { rbacGrants, rbacRequests } from './export-fixtures.js';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { routerConfigSchema } from '../../src/config/schema.js';
import { serveExportController } from '../../src/controller/export-serve.js';

const MEMBERS = ['cluster-a', 'cluster-b', 'cluster-c'];
let env: PushPullEnv;
beforeEach(async () => {
  env = await new PushPullEnv(MEMBERS).start();
});
afterEach(async () => {
  await env.close();
});

const startAll = () => Promise.all(MEMBERS.map((m) => env.agent(m)));
const importedEverywhere = (name: string, clusters: string[]) => () => MEMBERS.every((m) => env.importedFrom(m, name)?.join(',') === clusters.join(','));

describe('export agent (push/pull)', () => {
  it('the agent config in docs/kubernetes.md is valid as written, with the documented defaults', () => {
    const doc = readFileSync('docs/kubernetes.md', 'utf8');
    const block = /# \/etc\/mcip\/agent.yaml\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBeDefined();
    const cfg = routerConfigSchema.parse(parse(block!));
    expect(cfg.exportAgent).toMatchObject({ namespacePrefix: 'mcip-member-', name: 'mcip-router.dev/export-agent', heartbeatMs: 10_000, staleAfterMs: 45_000, withdrawalGraceMs: 30_000, resyncMs: 60_000 });
    expect(cfg.exportAgent?.leaderElection.leaseName).toBe('mcip-router-export-agent');
    expect(() => routerConfigSchema.parse({ ...parse(block!), exportAgent: { heartbeatMs: 5000, staleAfterMs: 4000 } })).toThrow(/staleAfterMs must be greater than heartbeatMs/);
  });

  it('an export in cluster-a becomes an import in every member, through records on the hub; Exported True once all hold it', async () => {
    await startAll();
    env.exportPool('cluster-a', 'llm');
    await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'imports everywhere');
    const rec = env.hub.get('memberexportrecords', 'mcip-member-cluster-a', 'cluster-a');
    expect(rec?.spec).toMatchObject({ formatVersion: 1, cluster: 'cluster-a', exports: [{ namespace: 'default', name: 'llm' }] });
    await waitFor(() => env.exported('cluster-a', 'llm')?.status === 'True', 10_000, 'Exported True');
    expect(env.exported('cluster-a', 'llm')?.reason).toBe('Exported');
    // A second exporter joins every list.
    env.exportPool('cluster-c', 'llm');
    await waitFor(importedEverywhere('llm', ['cluster-a', 'cluster-c']), 10_000, 'two exporters');

    // Each agent wrote on the hub only in its own namespace, and the shipped RBAC covers all it did.
    const writes = env.hub.writes('memberexportrecords');
    expect(writes.length).toBeGreaterThan(0);
    expect(new Set(writes.map((w) => w.namespace))).toEqual(new Set(MEMBERS.map((m) => `mcip-member-${m}`)));
    expect(new Set(writes.flatMap((w) => (w.name === undefined ? [] : [`${w.namespace}/${w.name}`])))).toEqual(new Set(MEMBERS.map((m) => `mcip-member-${m}/${m}`)));
    expect(env.hub.requests.filter((r) => r.plural !== 'memberexportrecords')).toEqual([]);
    const used = [...new Set(MEMBERS.flatMap((m) => [...rbacRequests(env.server(m))]))].sort();
    const granted = rbacGrants('deploy/rbac/export-agent-member.yaml', 'mcip-export-agent');
    expect(used.filter((u) => !granted.has(u))).toEqual([]);
  });

  it("its cluster's About API naming another cluster: the agent does not start, naming both, and writes nothing here or on the hub", async () => {
    env.server('cluster-a').create('clusterproperties', clusterProperty('cluster-east'));
    env.exportPool('cluster-a', 'llm');
    const err = await env.agent('cluster-a').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExportConfigError);
    expect((err as Error).message).toMatch(/^cluster name mismatch: config clusterName "cluster-a" \(the router config\) differs from "cluster-east" \(the About API of cluster cluster-a/);
    await sleep(300);
    expect(env.hub.writes()).toEqual([]);
    expect(env.server('cluster-a').writes()).toEqual([]);
  });

  it('the hub RBAC limits an agent to its own namespace: a write into another member\'s namespace is refused', async () => {
    const allowed = rbacAuthorizer(readFileSync('deploy/rbac/export-agent-hub.yaml', 'utf8'));
    const req = (namespace: string, method: string) => ({ method, plural: 'memberexportrecords', namespace, name: 'x', watch: false });
    expect(allowed(hubToken('cluster-a'), req('mcip-member-cluster-a', 'PUT'))).toBe(true);
    expect(allowed(hubToken('cluster-a'), req('mcip-member-cluster-b', 'PUT'))).toBe(false);
    expect(allowed(hubToken('cluster-a'), { method: 'GET', plural: 'memberexportrecords', watch: true })).toBe(true);
    expect(allowed(hubToken('cluster-a'), { method: 'GET', plural: 'configmaps', watch: false })).toBe(false);
    expect(verbOf({ method: 'DELETE', watch: false })).toBe('delete');
  });

  it('a member cannot fill the hub with records: its namespace holds one record (ResourceQuota), its own', async () => {
    await startAll();
    await waitFor(() => env.hub.get('memberexportrecords', 'mcip-member-cluster-a', 'cluster-a') !== undefined, 10_000, "cluster-a's record");
    // cluster-a's hub credential, used by hand: a second record in its own namespace.
    const res = await fetch(`${env.hub.url}/apis/mcip-router.dev/v1alpha1/namespaces/mcip-member-cluster-a/memberexportrecords`, {
      method: 'POST',
      headers: { authorization: `Bearer ${hubToken('cluster-a')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'mcip-router.dev/v1alpha1', kind: 'MemberExportRecord', metadata: { name: 'filler-1' }, spec: { formatVersion: 1, cluster: 'cluster-a', renewTime: new Date().toISOString() } }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { message: string }).message).toMatch(/exceeded quota: mcip-export-agent-records, requested: count\/memberexportrecords.mcip-router.dev=1, used: count\/memberexportrecords.mcip-router.dev=1, limited: count\/memberexportrecords.mcip-router.dev=1$/);
    expect(env.hub.get('memberexportrecords', 'mcip-member-cluster-a', 'filler-1')).toBeUndefined();
  });

  it('an unexport removes our entry at once and the import after the grace, everywhere', async () => {
    await startAll();
    env.exportPool('cluster-a', 'llm');
    await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'imported');
    const t0 = Date.now();
    env.unexport('cluster-a', 'llm');
    await waitFor(() => MEMBERS.every((m) => env.importedFrom(m, 'llm') === undefined), 10_000, 'entries removed');
    await waitFor(() => MEMBERS.every((m) => env.server(m).get('inferencepoolimports', 'default', 'llm') === undefined), 10_000, 'deleted');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    await waitFor(() => env.exported('cluster-a', 'llm') === undefined, 10_000, 'pool entry removed');
  });

  it('a member whose record goes stale is an unreachable member: its exports stay past the grace, pool statuses name it', async () => {
    const [a, b] = await startAll();
    env.exportPool('cluster-a', 'llm');
    env.exportPool('cluster-b', 'other');
    await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'llm imported');
    await waitFor(importedEverywhere('other', ['cluster-b']), 10_000, 'other imported');
    await a!.stop(); // cluster-a's agent stops writing; its record stays on the hub
    await waitFor(() => b!.debug().members.find((m) => m.name === 'cluster-a')?.reachable === false, 10_000, 'a stale for b');
    await sleep(600); // past the grace
    expect(env.importedFrom('cluster-b', 'llm')).toEqual(['cluster-a']);
    expect(env.importedFrom('cluster-c', 'llm')).toEqual(['cluster-a']);
    expect(MEMBERS.every((m) => env.server(m).writes('inferencepoolimports').every((w) => w.method !== 'DELETE'))).toBe(true);
    // cluster-b's pool: cluster-a is named as lagging once another export needs it.
    env.exportPool('cluster-b', 'third');
    await waitFor(() => env.exported('cluster-b', 'third')?.message.includes('cluster-a (its export record was not renewed'), 10_000, 'b names a').catch((e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(env.exported('cluster-b', 'third'))} ${JSON.stringify(b!.debug())}`);
    });
    expect(env.exported('cluster-b', 'third')).toMatchObject({ status: 'False', reason: 'Pending' });
  });

  it('a forged record is refused: another member\'s name in a member\'s namespace, or a namespace that is no member\'s', async () => {
    const [, b] = await startAll();
    env.hub.create('memberexportrecords', {
      metadata: { namespace: 'mcip-member-cluster-d', name: 'cluster-a' },
      spec: { formatVersion: 1, cluster: 'cluster-a', renewTime: new Date().toISOString(), exports: [{ namespace: 'default', name: 'forged' }] },
    });
    env.hub.create('memberexportrecords', {
      metadata: { namespace: 'kube-system', name: 'cluster-z' },
      spec: { formatVersion: 1, cluster: 'cluster-z', renewTime: new Date().toISOString(), exports: [{ namespace: 'default', name: 'elsewhere' }] },
    });
    env.hub.create('memberexportrecords', {
      metadata: { namespace: 'mcip-member-cluster-y', name: 'cluster-y' },
      spec: { formatVersion: 2, cluster: 'cluster-y', renewTime: new Date().toISOString(), exports: [{ namespace: 'default', name: 'future' }] },
    });
    env.exportPool('cluster-a', 'llm');
    await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'the genuine export');
    await waitFor(() => b!.debug().hub.refused.length === 3, 10_000, 'refused');
    const refused = b!.debug().hub.refused;
    expect(refused.find((e) => e.object === 'MemberExportRecord mcip-member-cluster-d/cluster-a')).toMatchObject({ path: 'spec.cluster', reason: 'ClusterMismatch' });
    expect(refused.find((e) => e.object === 'MemberExportRecord kube-system/cluster-z')).toMatchObject({ path: 'metadata.namespace', reason: 'ForeignNamespace' });
    expect(refused.find((e) => e.object === 'MemberExportRecord mcip-member-cluster-y/cluster-y')).toMatchObject({ path: 'spec.formatVersion', reason: 'UnknownFormat' });
    for (const n of ['forged', 'elsewhere', 'future']) expect(MEMBERS.map((m) => env.server(m).get('inferencepoolimports', 'default', n))).toEqual([undefined, undefined, undefined]);
    // Neither the forged cluster-a (in cluster-d's namespace: cluster-c's holds its own record only) nor cluster-z or cluster-y became a member: own first, then the genuine ones.
    expect(b!.debug().members.map((m) => m.name)).toEqual(['cluster-b', 'cluster-a', 'cluster-c']);
  });

  it('mcip-router --export-agent serves it with /metrics and /debug/exports (the hub, its record namespace, refused records)', async () => {
    await Promise.all(['cluster-a', 'cluster-c'].map((m) => env.agent(m)));
    const server = await serveExportController(env.config('cluster-b'), silent, false, 'agent');
    try {
      env.exportPool('cluster-a', 'llm');
      await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'imported by the served agent too');
      const admin = server.adminAddress;
      const metrics = await (await fetch(`http://${admin}/metrics`)).text();
      expect(metrics).toMatch(/^mcip_export_leader 1$/m);
      expect(metrics).toMatch(/^mcip_export_member_reachable\{member="cluster-a"\} 1$/m);
      const debug = (await (await fetch(`http://${admin}/debug/exports`)).json()) as { controllerName: string; recordNamespace: string; hub: { records: number; state: string } };
      expect(debug).toMatchObject({ controllerName: 'mcip-router.dev/export-agent', recordNamespace: 'mcip-member-cluster-b', hub: { state: 'synced', records: 3 } });
    } finally {
      await server.shutdown();
    }
  });

  it('two agent replicas in a member: one writes; when it stops the other takes over', async () => {
    await Promise.all(['cluster-a', 'cluster-c'].map((m) => env.agent(m)));
    const b1 = await env.agent('cluster-b', 'b-1');
    await waitFor(() => b1.isLeader(), 10_000, 'b-1 leads');
    const b2 = await env.agent('cluster-b', 'b-2');
    env.exportPool('cluster-a', 'llm');
    await waitFor(importedEverywhere('llm', ['cluster-a']), 10_000, 'imported');
    expect(b2.isLeader()).toBe(false);
    await b1.stop();
    await waitFor(() => b2.isLeader(), 10_000, 'b-2 leads');
    env.exportPool('cluster-b', 'mine');
    await waitFor(importedEverywhere('mine', ['cluster-b']), 10_000, 'b-2 publishes');
  });
});
