/**
 * Kubernetes mode through the whole router: two API server stand-ins (local
 * cluster-a, remote cluster-b), simulated EPPs, the Envoy stand-in. Object
 * changes reach the data path within 1 s, the import controller writes our
 * status entry, and a remote API outage marks that member stale without
 * disturbing local traffic, and so does a remote API server that answers
 * everything but the re-LIST.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import { withTestTransport } from '../harness/extproc-transport.js';
import { KubeApiServer, isList, writeKubeconfig } from '../harness/kube-apiserver.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually, eventuallyWithin } from '../helpers/eventually.js';
import { exportEntry, gateway, importObj, pool, route, service } from '../sources/kubernetes/kube-fixtures.js';
import { completionBody, startEpps, stopAll } from './clusterset.js';

const A = '10.1.0.1:8000';
const B = '10.2.0.1:8000';
const CONTROLLER = 'mcip-router.dev/import-controller';

let local: KubeApiServer;
let remote: KubeApiServer;
let epps: Record<string, SimulatedEpp>;
let router: RouterHandle;
let envoy: EnvoyStandin;

async function destinations(n: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const r = await envoy.run({ authority: 'llm.example', path: '/v1/completions', body: [completionBody()] });
    expect(r.outcome, r.reason).toBe('forwarded');
    seen.add(r.destination!);
  }
  return seen;
}

async function metric(name: string, labels: string): Promise<number | undefined> {
  const text = await router.metrics.registry.metrics();
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Every log line, raw (JSON.parse would hide a repeated key). */
const logLines: string[] = [];

beforeAll(async () => {
  epps = await startEpps({ a: A, b: B });
  local = new KubeApiServer();
  remote = new KubeApiServer();
  await local.start();
  await remote.start();
  const dir = await mkdtemp(join(tmpdir(), 'mcip-k8s-e2e-'));
  const kubeA = await writeKubeconfig(dir, { server: local.url }, 'cluster-a.kubeconfig');
  const kubeB = await writeKubeconfig(dir, { server: remote.url }, 'cluster-b.kubeconfig');

  local.create('gateways', gateway('inference-gateway'));
  local.create('inferencepools', pool('llm'));
  local.create('services', service('llm-epp'));
  local.create('inferencepoolimports', importObj('llm', [exportEntry('mcip.example.com/export-controller', ['cluster-b'])]));
  local.create(
    'httproutes',
    route('llm-route', 'inference-gateway', [
      { kind: 'InferencePool', name: 'llm', weight: 50 },
      { kind: 'InferencePoolImport', name: 'llm', weight: 50 },
    ]),
  );
  remote.create('inferencepools', pool('llm', 'default', 'llm-epp', { annotations: { 'inference.networking.x-k8s.io/export': 'ClusterSet' } }));
  remote.create('services', service('llm-epp'));

  const override = (address: string) => ({ services: [{ namespace: 'default', name: 'llm-epp', address }] });
  const configFile = join(dir, 'router.yaml');
  await writeFile(
    configFile,
    stringify(withTestTransport({
      clusterName: 'cluster-a',
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: [{ namespace: 'default', name: 'inference-gateway' }],
      clusters: [
        { name: 'cluster-a', kubernetes: { kubeconfig: kubeA }, epp: { tls: { enabled: false }, metrics: { enabled: false } }, addressOverrides: override(epps.a!.address) },
        { name: 'cluster-b', kubernetes: { kubeconfig: kubeB, requestTimeoutMs: 1000 }, epp: { tls: { enabled: false }, metrics: { enabled: false } }, addressOverrides: override(epps.b!.address) },
      ],
      kubernetes: { coalesceMs: 20, coalesceMaxMs: 200, initialSyncTimeoutMs: 3000, backoffInitialMs: 50, backoffMaxMs: 300 },
      controller: {
        name: CONTROLLER,
        resyncMs: 1000,
        leaderElection: { leaseNamespace: 'default', leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 },
      },
      log: { level: 'silent' },
    })),
  );
  router = await startRouter(await loadConfig(configFile), { logger: createLogger('info', { write: (l: string) => void logLines.push(l) }), processMetrics: false });
  envoy = createEnvoyStandin(router.extProcAddress);
});

afterAll(async () => {
  envoy?.close();
  await router?.shutdown();
  await Promise.all([local?.close(), remote?.close()]);
  await stopAll(epps ?? {});
});

describe('Kubernetes mode end to end', () => {
  it('routes the 50/50 HTTPRoute to the local pool and to the pool imported from cluster-b', async () => {
    expect([...(await destinations(40))].sort()).toEqual([A, B]);
  });

  it('an HTTPRoute change in the API reaches the data path within 1 s', async () => {
    const current = local.get('httproutes', 'default', 'llm-route')!;
    local.update('httproutes', { ...route('llm-route', 'inference-gateway', [{ kind: 'InferencePool', name: 'llm' }]), metadata: current.metadata });
    await eventuallyWithin(async () => expect([...(await destinations(10))]).toEqual([A]), 1000, 'the HTTPRoute change');
    // Restore the split for the next tests.
    const again = local.get('httproutes', 'default', 'llm-route')!;
    local.update('httproutes', {
      ...route('llm-route', 'inference-gateway', [
        { kind: 'InferencePool', name: 'llm', weight: 50 },
        { kind: 'InferencePoolImport', name: 'llm', weight: 50 },
      ]),
      metadata: again.metadata,
    });
    await eventually(async () => expect((await destinations(20)).size).toBe(2), 2000);
  });

  it('the import controller writes our status entry and leaves the exporter\'s entry intact', async () => {
    const entries = await eventually(() => {
      const obj = local.get('inferencepoolimports', 'default', 'llm') as { status?: { controllers?: { name: string; parents?: unknown[] }[] } };
      const controllers = obj.status?.controllers ?? [];
      expect(controllers.map((c) => c.name).sort()).toEqual([CONTROLLER, 'mcip.example.com/export-controller'].sort());
      return controllers;
    }, 5000);
    const ours = entries.find((c) => c.name === CONTROLLER) as {
      parents: { parentRef: { name: string; kind: string }; conditions: { type: string; status: string }[] }[];
    };
    expect(ours.parents.map((p) => `${p.parentRef.kind}/${p.parentRef.name}`)).toEqual(['Gateway/inference-gateway']);
    expect(ours.parents[0]!.conditions.find((c) => c.type === 'Accepted')?.status).toBe('True');
    expect(entries.find((c) => c.name === 'mcip.example.com/export-controller')).toMatchObject({ exportingClusters: [{ name: 'cluster-b' }] });
    // This single replica holds the lease, and the writes are counted.
    const text = await router.metrics.registry.metrics();
    expect(text).toMatch(/^mcip_import_controller_leader 1$/m);
    expect(await metric('mcip_import_status_writes_total', 'result="written"')).toBeGreaterThanOrEqual(1);
    // /debug/sources sees both (lazily loaded) Kubernetes sources and the controller.
    const sources = (await (await fetch(`http://${router.adminAddress}/debug/sources`)).json()) as {
      kubernetes: Record<string, unknown[]>;
      importController: { leader?: boolean; enabled?: boolean };
    };
    expect(Object.keys(sources.kubernetes).sort()).toEqual(['cluster-a', 'cluster-b']);
    expect(sources.kubernetes['cluster-a']!.length).toBeGreaterThan(sources.kubernetes['cluster-b']!.length);
    expect(sources.importController.leader).toBe(true);
  });

  it('a remote API outage marks cluster-b stale, keeps its last objects and local traffic, and recovers', async () => {
    await remote.down();
    await eventually(async () => expect(await metric('mcip_cluster_stale', 'cluster="cluster-b"')).toBe(1), 5000);
    expect(await metric('mcip_cluster_stale', 'cluster="cluster-a"')).toBe(0);
    // Last known objects keep serving: both pools still get traffic.
    expect([...(await destinations(30))].sort()).toEqual([A, B]);
    expect((await fetch(`http://${router.adminAddress}/readyz`)).status).toBe(200);
    // An outage is staleness, not a rejected change: once the source has reported the failure,
    // the reload metrics and /debug/sources' `rejected` still show cluster-b healthy.
    const debugSources = async () =>
      (await (await fetch(`http://${router.adminAddress}/debug/sources`)).json()) as {
        rejected: Record<string, unknown>;
        kubernetes: Record<string, { state: string }[]>;
      };
    await eventually(async () => expect((await debugSources()).kubernetes['cluster-b']!.some((r) => r.state === 'failed')).toBe(true), 10_000);
    expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-b"')).toBe(1);
    expect(await metric('mcip_config_reloads_total', 'cluster="cluster-b",result="rejected"')).toBeUndefined();
    expect(await metric('mcip_config_errors_total', 'cluster="cluster-b",reason="connect"')).toBeUndefined();
    expect((await debugSources()).rejected).toEqual({});
    await remote.up();
    await eventually(async () => expect(await metric('mcip_cluster_stale', 'cluster="cluster-b"')).toBe(0), 5000);
    // The source's lines name the cluster once (the logger is bound to it; a repeated key is invalid for many JSON readers).
    const unreachable = logLines.filter((l) => l.includes('cluster unreachable'));
    expect(unreachable.length).toBeGreaterThan(0);
    for (const l of logLines) expect(l.match(/"cluster":/g)?.length ?? 0, l).toBeLessThanOrEqual(1);
  });

  it('a remote re-LIST that is never answered marks cluster-b stale within seconds (metric and /debug/sources), and recovers', async () => {
    const answerLists = remote.hang(isList);
    // A change elsewhere plus a compaction make the pools' resume point too old: the resumed watch gets 410 and re-lists.
    remote.create('services', service('other-epp'));
    remote.compact();
    const cut = Date.now();
    remote.dropWatches('inferencepools');
    await eventually(async () => expect(await metric('mcip_cluster_stale', 'cluster="cluster-b"')).toBe(1), 5000, 50);
    expect(Date.now() - cut).toBeLessThan(5000);
    const sources = (await (await fetch(`http://${router.adminAddress}/debug/sources`)).json()) as {
      kubernetes: Record<string, { resource: string; state: string; reason?: string; message?: string }[]>;
    };
    const pools = sources.kubernetes['cluster-b']!.find((r) => r.resource.startsWith('inferencepools.'));
    expect(pools).toMatchObject({ state: 'failed', reason: 'timeout' });
    expect(pools?.message).toContain('no answer from the API server within 1000 ms');
    // Its last known pool keeps serving.
    expect([...(await destinations(30))].sort()).toEqual([A, B]);
    answerLists();
    await eventually(async () => expect(await metric('mcip_cluster_stale', 'cluster="cluster-b"')).toBe(0), 5000, 50);
  });
});
