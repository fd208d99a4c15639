/** The chart's export-controller role: a second Deployment of the same image, its RBAC, and the member-side RBAC. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { routerConfigSchema } from '../../src/config/schema.js';
import { find, mergeValues, renderChart, REPO, type K8sObject, type Obj } from './render-chart.js';
import { REMOTE_VALUES } from './sample-values.js';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };

const EXPORT_VALUES = mergeValues(REMOTE_VALUES, {
  exportController: { enabled: true, replicaCount: 3, withdrawalGraceMs: 5000 },
  remoteClusters: [
    { ...(REMOTE_VALUES.remoteClusters as Obj[])[0], exportKubeconfigSecret: { name: 'cluster-b-export' } },
    (REMOTE_VALUES.remoteClusters as Obj[])[1],
  ],
});

const rulesOf = (o: K8sObject): Rule[] => (o as unknown as { rules: Rule[] }).rules;

describe('chart: export controller role', () => {
  it('is off by default: no Deployment, no RBAC, and the routers never run it in-process', () => {
    const r = renderChart(REMOTE_VALUES);
    expect(r.objects.filter((o) => o.metadata.name.includes('export'))).toEqual([]);
    const cm = find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
    expect(routerConfigSchema.parse(parse(cm.data['router.yaml']!)).exportController.enabled).toBe(false);
  });

  it('enabled: a Deployment running --export-controller on the shared router config, with write credentials per member', () => {
    const r = renderChart(EXPORT_VALUES);
    expect(r.missingValues).toEqual([]);
    const d = find(r, 'Deployment', '-export-controller') as K8sObject & { spec: Obj };
    const spec = d.spec as { replicas: number; template: { spec: { serviceAccountName: string; containers: Obj[]; volumes: Obj[] } } };
    expect(spec.replicas).toBe(3);
    const c = spec.template.spec.containers[0] as { args: string[]; volumeMounts: { name: string; mountPath: string }[] };
    expect(c.args).toEqual(['--export-controller', '--config', '/etc/mcip-router/router.yaml']);
    expect(spec.template.spec.serviceAccountName).toBe('gw-mcip-router-export-controller');
    const secrets = spec.template.spec.volumes.map((v) => (v as { secret?: { secretName: string } }).secret?.secretName).filter(Boolean);
    expect(secrets).toEqual(['cluster-b-export', 'cluster-c']);
    const cm = find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
    const cfg = routerConfigSchema.parse(parse(cm.data['router.yaml']!));
    expect(cfg.exportController).toMatchObject({ enabled: false, withdrawalGraceMs: 5000, leaderElection: { leaseName: 'gw-mcip-router-export-controller', leaseNamespace: 'mcip-system' } });
    const mountPaths = c.volumeMounts.map((m) => m.mountPath);
    for (const member of cfg.clusters.slice(1)) expect(mountPaths).toContain(member.kubernetes!.kubeconfig!.replace(/\/kubeconfig$/, ''));
  });

  it('its ClusterRole is the one in deploy/rbac/export-controller.yaml, and its Lease Role names its own Lease', () => {
    const r = renderChart(EXPORT_VALUES);
    const chartRules = rulesOf(find(r, 'ClusterRole', '-export-controller'));
    const deployed = parseAll(`${REPO}/deploy/rbac/export-controller.yaml`);
    const role = deployed.find((o) => o.kind === 'ClusterRole')!;
    expect(chartRules).toEqual(rulesOf(role));
    const lease = rulesOf(find(r, 'Role', '-export-controller-leader-election'));
    expect(lease[1]?.resourceNames).toEqual(['gw-mcip-router-export-controller']);
    const member = renderChart({ exportMember: { create: true } });
    // In the other members it needs no About API read (its own cluster's name is checked at home).
    const memberRole = parseAll(`${REPO}/deploy/rbac/export-member.yaml`).find((o) => o.kind === 'ClusterRole')!;
    expect(rulesOf(find(member, 'ClusterRole', '-export-member'))).toEqual(rulesOf(memberRole));
    expect(chartRules.filter((r) => !(r as { apiGroups: string[] }).apiGroups.includes('about.k8s.io'))).toEqual(rulesOf(memberRole));
    expect(find(member, 'Secret', '-export-member-token').metadata.annotations?.['kubernetes.io/service-account.name']).toBe('gw-mcip-router-export-member');
  });
});

function parseAll(file: string): K8sObject[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON() as K8sObject);
}
