/**
 * Two clusters, each behind its own API server stand-in, feeding the real
 * snapshot builder: routing follows object changes within 1 s, and a remote
 * member going down leaves local routing untouched and its own candidates
 * served from stale objects until it returns.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema, type RouterConfig } from '../../../src/config/schema.js';
import { namedConfig } from '../../../src/config/local-name.js';
import { buildSnapshot } from '../../../src/snapshot/build.js';
import type { RoutingSnapshot } from '../../../src/snapshot/types.js';
import { createObjectSource } from '../../../src/sources/create-source.js';
import type { ClusterState, ObjectSource } from '../../../src/sources/types.js';
import { KubeEnv, exportEntry, gateway, importObj, pool, route, service, silent, waitFor } from './kube-fixtures.js';
import { withinProcessMs } from '../../helpers/work-time.js';

let local: KubeEnv;
let remote: KubeEnv;
let sources: ObjectSource[] = [];
let snapshot: RoutingSnapshot | undefined;
let snapshots = 0;

beforeEach(async () => {
  local = await new KubeEnv().start();
  remote = await new KubeEnv().start();
  snapshot = undefined;
  snapshots = 0;
});
afterEach(async () => {
  await Promise.all(sources.map((s) => s.stop()));
  sources = [];
  await local.close();
  await remote.close();
});

function config(): RouterConfig {
  return namedConfig(routerConfigSchema.parse({
    clusterName: 'cluster-a',
    gateways: [{ namespace: 'default', name: 'gw' }],
    clusters: [
      { name: 'cluster-a', kubernetes: { kubeconfig: local.kubeconfig } },
      { name: 'cluster-b', kubernetes: { kubeconfig: remote.kubeconfig } },
    ],
    kubernetes: { coalesceMs: 50, backoffInitialMs: 50, backoffMaxMs: 200, initialSyncTimeoutMs: 2000 },
  }));
}

async function startRouter(cfg: RouterConfig): Promise<void> {
  const states = new Map<string, ClusterState>();
  const rebuild = (): void => {
    snapshot = buildSnapshot({ config: cfg, clusters: [...states.values()], version: ++snapshots }).snapshot;
  };
  for (const c of cfg.clusters) {
    const s = await createObjectSource(c, cfg, silent);
    sources.push(s);
    await s.start({
      onState: (st) => {
        states.set(st.cluster, st);
        rebuild();
      },
      onError: () => undefined,
    });
  }
}

const candidateIds = (): string[] => [...(snapshot?.candidates.keys() ?? [])].sort();
const clusterStale = (name: string): boolean | undefined => snapshot?.clusters.find((c) => c.name === name)?.stale;

describe('Kubernetes mode, two clusters', () => {
  beforeEach(() => {
    local.server.create('gateways', gateway('gw'));
    local.server.create('inferencepools', pool('llm'));
    local.server.create('services', service('llm-epp'));
    local.server.create('inferencepoolimports', importObj('llm', [exportEntry('example.com/export', ['cluster-b'])]));
    remote.server.create('inferencepools', pool('llm', 'default', 'llm-epp', { annotations: { 'inference.networking.x-k8s.io/export': 'ClusterSet' } }));
    remote.server.create('services', service('llm-epp', 'default', '10.9.0.1'));
  });

  it('a new HTTPRoute changes routing within 1 s; deleting it removes the route', async () => {
    await startRouter(config());
    expect(snapshot?.routes).toEqual([]);
    local.server.create('httproutes', route('r1', 'gw', [{ kind: 'InferencePool', name: 'llm', weight: 50 }, { kind: 'InferencePoolImport', name: 'llm', weight: 50 }]));
    await withinProcessMs(1000, 'route within 1 s', () => waitFor(() => snapshot?.routes.length === 1, 15_000, 'route'));
    expect(candidateIds()).toEqual(['cluster-a/default/llm', 'cluster-b/default/llm']);
    local.server.delete('httproutes', 'default', 'r1');
    await withinProcessMs(1000, 'route gone within 1 s', () => waitFor(() => snapshot?.routes.length === 0, 15_000, 'route gone'));
  });

  it('remote member down: local routing unaffected, remote candidate served stale, recovery', async () => {
    local.server.create('httproutes', route('r1', 'gw', [{ kind: 'InferencePool', name: 'llm' }, { kind: 'InferencePoolImport', name: 'llm' }]));
    await startRouter(config());
    expect(candidateIds()).toEqual(['cluster-a/default/llm', 'cluster-b/default/llm']);
    expect(clusterStale('cluster-b')).toBe(false);

    await remote.server.down();
    await waitFor(() => clusterStale('cluster-b') === true, 2000, 'remote stale');
    expect(clusterStale('cluster-a')).toBe(false);
    expect(candidateIds()).toEqual(['cluster-a/default/llm', 'cluster-b/default/llm']);

    // Local changes keep flowing while the remote is down.
    local.server.create('httproutes', route('r2', 'gw', [{ kind: 'InferencePool', name: 'llm' }]));
    await waitFor(() => snapshot?.routes.length === 2, 1000, 'local change while remote down');

    // The remote's EPP moved while it was unreachable.
    const svc = remote.server.get('services', 'default', 'llm-epp')!;
    remote.server.update('services', { ...svc, spec: { ...(svc.spec as object), clusterIP: '10.9.0.2' } });
    await remote.server.up();
    await waitFor(() => clusterStale('cluster-b') === false, 3000, 'remote recovered');
    await waitFor(() => snapshot?.candidates.get('cluster-b/default/llm')?.epp?.host === '10.9.0.2', 1000, 'remote change after recovery');
  });

  it('remote member unreachable at start: the router still starts with the local cluster', async () => {
    await remote.server.down();
    const cfg = config();
    const states = new Map<string, ClusterState>();
    const results = await Promise.allSettled(
      cfg.clusters.map(async (c) => {
        const s = await createObjectSource(c, { ...cfg, kubernetes: { ...cfg.kubernetes, initialSyncTimeoutMs: 300 } }, silent);
        sources.push(s);
        return s.start({ onState: (st) => states.set(st.cluster, st), onError: () => undefined });
      }),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(results[1]).toMatchObject({ reason: { reason: 'connect', cluster: 'cluster-b' } });
    expect(states.get('cluster-a')?.objects.length).toBeGreaterThan(0);
    await remote.server.up();
    await waitFor(() => states.get('cluster-b')?.stale === false && states.get('cluster-b')!.objects.length === 2, 3000, 'remote later');
  });
});
