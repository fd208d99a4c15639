/** The shipped examples/ config and manifests load and validate, and hang together. */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { KubeObject } from '../../src/model/types.js';
import { buildSnapshot } from '../../src/snapshot/build.js';
import { loadManifests } from '../../src/sources/manifest-source.js';

const EXAMPLES = fileURLToPath(new URL('../../examples/', import.meta.url));

async function load() {
  const cfg = namedConfig(await loadConfig(`${EXAMPLES}router.yaml`));
  const clusters = new Map<string, readonly KubeObject[]>();
  for (const c of cfg.clusters) {
    const { state, error } = await loadManifests(c.name, c.manifests?.paths ?? []);
    expect(error?.message).toBeUndefined();
    clusters.set(c.name, state?.objects ?? []);
  }
  return { cfg, clusters };
}

function find<K extends KubeObject['kind']>(objects: readonly KubeObject[] | undefined, kind: K, name: string) {
  return objects?.find((o): o is Extract<KubeObject, { kind: K }> => o.kind === kind && o.metadata.name === name);
}

describe('examples/', () => {
  it('router.yaml is valid and names two clusters with manifest directories', async () => {
    const { cfg } = await load();
    expect(cfg.clusterName).toBe('cluster-a');
    expect(cfg.mode).toBe('Endpoint');
    expect(cfg.listen).toMatchObject({ extProc: '127.0.0.1:9002', admin: '127.0.0.1:9901' });
    expect(cfg.gateways).toEqual([{ namespace: 'default', name: 'inference-gateway' }]);
    expect(cfg.clusters.map((c) => [c.name, c.manifests?.paths, c.epp.tls.enabled])).toEqual([
      ['cluster-a', [`${EXAMPLES}cluster-a`], false],
      ['cluster-b', [`${EXAMPLES}cluster-b`], false],
    ]);
    expect(cfg.clusters.map((c) => c.addressOverrides.services)).toEqual([
      [{ namespace: 'default', name: 'llm-pool-epp', address: '127.0.0.1:9102' }],
      [{ namespace: 'default', name: 'llm-pool-epp', address: '127.0.0.1:9202' }],
    ]);
  });

  it('cluster-a routes 50/50 between its pool and the pool imported from cluster-b', async () => {
    const a = (await load()).clusters.get('cluster-a');
    expect(find(a, 'Gateway', 'inference-gateway')).toBeDefined();
    const route = find(a, 'HTTPRoute', 'llm-route');
    expect(route?.spec.hostnames).toEqual([]);
    expect(route?.spec.parentRefs.map((p) => p.name)).toEqual(['inference-gateway']);
    expect(route?.spec.rules[0]?.backendRefs.map((b) => [b.kind, b.name, b.weight])).toEqual([
      ['InferencePool', 'llm-pool', 50],
      ['InferencePoolImport', 'llm-pool', 50],
    ]);
    const pool = find(a, 'InferencePool', 'llm-pool');
    expect(find(a, 'Service', pool?.spec.endpointPickerRef?.name ?? '')).toBeDefined();
    // No hand-written InferencePoolImport status: the router derives the import from cluster-b's exported pool.
    expect(find(a, 'InferencePoolImport', 'llm-pool')).toBeUndefined();
    const { cfg, clusters } = await load();
    const states = [...clusters].map(([cluster, objects]) => ({ cluster, objects, errors: [], stale: false, revision: '1' }));
    const { snapshot, diagnostics } = buildSnapshot({ config: cfg, clusters: states, version: 1 });
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    const imported = snapshot.routes[0]?.rules[0]?.backends[1];
    expect(imported?.import).toEqual({ source: 'derived', exportingClusters: ['cluster-b'] });
    expect(imported?.candidates.map((c) => c.id)).toEqual(['cluster-b/default/llm-pool']);
  });

  it('cluster-b exports its pool, whose EPP is a LoadBalancer Service', async () => {
    const b = (await load()).clusters.get('cluster-b');
    const pool = find(b, 'InferencePool', 'llm-pool');
    expect(pool?.metadata.annotations['inference.networking.x-k8s.io/export']).toBe('ClusterSet');
    expect(pool?.status.parents[0]?.parentRef).toMatchObject({ kind: 'Gateway', name: 'inference-gateway' });
    expect(find(b, 'Service', pool?.spec.endpointPickerRef?.name ?? '')?.spec.type).toBe('LoadBalancer');
    expect(find(b, 'Gateway', 'inference-gateway')?.status.addresses).toEqual([{ type: 'IPAddress', value: '203.0.113.30' }]);
  });
});
