import { describe, expect, it } from 'vitest';
import { controllerEnabled, routerConfigSchema } from '../../../src/config/schema.js';
import { namedConfig } from '../../../src/config/local-name.js';
import { createObjectSource } from '../../../src/sources/create-source.js';
import { KubernetesSource } from '../../../src/sources/kubernetes/kubernetes-source.js';
import { ManifestSource } from '../../../src/sources/manifest-source.js';
import { silent } from './kube-fixtures.js';

const base = {
  clusterName: 'cluster-a',
  gateways: [{ namespace: 'default', name: 'gw' }],
};

function parse(extra: object) {
  return routerConfigSchema.safeParse({ ...base, ...extra });
}

function messages(extra: object): string[] {
  const r = parse(extra);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('config: kubernetes sources and controller', () => {
  it('a kubernetes cluster gets defaults; controller on by default with a kubernetes local cluster', () => {
    const r = parse({ clusters: [{ name: 'cluster-a', kubernetes: { inCluster: true } }, { name: 'cluster-b', kubernetes: { kubeconfig: '/etc/mcip/b/kubeconfig', context: 'b' } }] });
    expect(r.success).toBe(true);
    if (!r.success) return;
    expect(r.data.clusters[0]?.kubernetes).toEqual({ inCluster: true, namespaces: [], requestTimeoutMs: 5000, watchIdleTimeoutMs: 30_000, maxResponseBytes: 256 * 1024 * 1024, allowExecPlugins: false });
    expect(r.data.kubernetes).toEqual({ coalesceMs: 100, coalesceMaxMs: 500, initialSyncTimeoutMs: 10_000, backoffInitialMs: 500, backoffMaxMs: 30_000 });
    expect(r.data.controller).toMatchObject({
      name: 'mcip-router.dev/import-controller',
      leaderElection: { enabled: true, leaseName: 'mcip-router-import-controller', leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 },
    });
    expect(controllerEnabled(r.data)).toBe(true);
  });

  it('controller off by default when the local cluster uses manifests', () => {
    const r = parse({ clusters: [{ name: 'cluster-a', manifests: { paths: ['a'] } }, { name: 'cluster-b', kubernetes: {} }] });
    expect(r.success && controllerEnabled(r.data)).toBe(false);
    expect(messages({ clusters: [{ name: 'cluster-a', manifests: { paths: ['a'] } }], controller: { enabled: true } })).toEqual([
      'controller.enabled: the import controller needs the local cluster to use a kubernetes source',
    ]);
  });

  it('a cluster needs exactly one source', () => {
    expect(messages({ clusters: [{ name: 'cluster-a' }] })).toEqual(['clusters.0: a cluster needs exactly one object source: manifests or kubernetes']);
    expect(messages({ clusters: [{ name: 'cluster-a', manifests: { paths: ['a'] }, kubernetes: {} }] })).toEqual([
      'clusters.0: a cluster needs exactly one object source: manifests or kubernetes',
    ]);
  });

  it('validates the kubernetes block', () => {
    const k = (kubernetes: object) => messages({ clusters: [{ name: 'cluster-a', kubernetes }] });
    expect(k({ inCluster: true, kubeconfig: '/x' })).toEqual(['clusters.0.kubernetes.kubeconfig: inCluster and kubeconfig are mutually exclusive']);
    expect(k({ inCluster: true, context: 'c' })).toEqual(['clusters.0.kubernetes.context: context needs a kubeconfig (not inCluster)']);
    expect(k({ namespaces: ['Bad_NS'] })[0]).toContain('clusters.0.kubernetes.namespaces.0');
    expect(k({ qps: 0 })[0]).toContain('clusters.0.kubernetes.qps');
    expect(k({ requestTimeoutMs: 50 })[0]).toContain('clusters.0.kubernetes.requestTimeoutMs');
    expect(k({ requestTimeoutMs: 1.5 })[0]).toContain('clusters.0.kubernetes.requestTimeoutMs');
    expect(k({ watchIdleTimeoutMs: 10 })[0]).toContain('clusters.0.kubernetes.watchIdleTimeoutMs');
    expect(k({ maxResponseBytes: 1024 * 1024 })[0]).toContain('clusters.0.kubernetes.maxResponseBytes');
    expect(k({ maxResponseBytes: 4 * 1024 * 1024 + 0.5 })[0]).toContain('clusters.0.kubernetes.maxResponseBytes');
    expect(k({ requestTimeoutMs: 1000, watchIdleTimeoutMs: 60_000, maxResponseBytes: 4 * 1024 * 1024 })).toEqual([]);
    expect(k({ typo: 1 }).length).toBeGreaterThan(0);
  });

  it('validates the controller name and leader election timings', () => {
    const c = (controller: object) => messages({ clusters: [{ name: 'cluster-a', kubernetes: {} }], controller });
    expect(c({ name: 'example.com' })[0]).toContain('controller.name');
    expect(c({ name: 'Example.com/x' })[0]).toContain('controller.name');
    expect(c({ name: 'example.com/router' })).toEqual([]);
    expect(c({ leaderElection: { leaseDurationMs: 5000, renewDeadlineMs: 5000 } })).toEqual([
      'controller.leaderElection.renewDeadlineMs: renewDeadlineMs must be less than leaseDurationMs',
    ]);
    expect(c({ leaderElection: { renewDeadlineMs: 1000, retryPeriodMs: 1000 } })).toEqual([
      'controller.leaderElection.retryPeriodMs: retryPeriodMs must be less than renewDeadlineMs',
    ]);
  });

  it('createObjectSource picks the source per cluster', async () => {
    const r = parse({ clusters: [{ name: 'cluster-a', manifests: { paths: ['/tmp/none'] } }, { name: 'cluster-b', kubernetes: { kubeconfig: '/nonexistent' } }] });
    if (!r.success) throw new Error('config');
    const cfg = namedConfig(r.data);
    expect(await createObjectSource(cfg.clusters[0]!, cfg, silent)).toBeInstanceOf(ManifestSource);
    const remote = await createObjectSource(cfg.clusters[1]!, cfg, silent);
    expect(remote).toBeInstanceOf(KubernetesSource);
    expect(remote.cluster).toBe('cluster-b');
  });

  it('a missing kubeconfig file rejects start() with reason read', async () => {
    const r = parse({ clusters: [{ name: 'cluster-a', kubernetes: { kubeconfig: '/nonexistent/kubeconfig' } }] });
    if (!r.success) throw new Error('config');
    const cfg = namedConfig(r.data);
    const s = await createObjectSource(cfg.clusters[0]!, cfg, silent);
    await expect(s.start({ onState: () => undefined, onError: () => undefined })).rejects.toMatchObject({
      reason: 'read',
      message: expect.stringContaining('/nonexistent/kubeconfig'),
    });
    await s.stop();
  });
});
