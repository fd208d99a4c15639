/**
 * The chart renders valid, consistently wired Kubernetes objects; its RBAC is the one in
 * deploy/rbac/ and covers what the router's sources and controller call; its CRD is the
 * InferencePoolImport the router reads.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { routerConfigSchema } from '../../src/config/schema.js';
import { LOCAL_KINDS, REMOTE_KINDS, RESOURCE_SPECS } from '../../src/sources/kubernetes/resources.js';
import { CHART_DIR, find, mergeValues, renderChart, REPO, type K8sObject, type Obj } from './render-chart.js';
import { routerConfigText } from './router-config.js';
import { AGENT_VALUES, ENDPOINT_PICKER_VALUES, FLEET_VALUES, REMOTE_VALUES } from './sample-values.js';

interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }
type Labels = Record<string, string>;

const API_VERSIONS: Record<string, string> = {
  Deployment: 'apps/v1',
  ConfigMap: 'v1',
  Service: 'v1',
  ServiceAccount: 'v1',
  Secret: 'v1',
  ClusterRole: 'rbac.authorization.k8s.io/v1',
  ClusterRoleBinding: 'rbac.authorization.k8s.io/v1',
  Role: 'rbac.authorization.k8s.io/v1',
  RoleBinding: 'rbac.authorization.k8s.io/v1',
  PodDisruptionBudget: 'policy/v1',
  ServiceMonitor: 'monitoring.coreos.com/v1',
  HorizontalPodAutoscaler: 'autoscaling/v2',
  GatewayClass: 'gateway.networking.k8s.io/v1',
  NetworkPolicy: 'networking.k8s.io/v1',
};
const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'GatewayClass']);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function deployFile(file: string): K8sObject[] {
  return parseAllDocuments(readFileSync(path.join(REPO, 'deploy', file), 'utf8')).map((d) => d.toJS() as K8sObject);
}
const rulesOf = (o: K8sObject): Rule[] => o.rules as Rule[];
const ofKind = (objs: K8sObject[], kind: string): K8sObject => objs.find((o) => o.kind === kind)!;
const allows = (rules: Rule[], group: string, resource: string, verb: string, name?: string): boolean =>
  rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb) && (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))));
const selects = (selector: Labels, labels: Labels): boolean => Object.entries(selector).every(([k, v]) => labels[k] === v);

describe.each<[string, Obj]>([
  ['defaults', {}],
  ['every option on', REMOTE_VALUES],
  ['the Endpoint Picker role', mergeValues(REMOTE_VALUES, ENDPOINT_PICKER_VALUES)],
  ['fleet members, the export controller and the export agent', mergeValues(mergeValues(FLEET_VALUES, AGENT_VALUES), { exportController: { enabled: true } })],
])('objects rendered with %s', (_name, values) => {
  const r = renderChart(values);
  const pod = (find(r, 'Deployment', 'mcip-router').spec as { template: { metadata: { labels: Labels }; spec: Obj } }).template;

  it('are well-formed: known apiVersion per kind, valid unique names, namespaces where they belong', () => {
    const seen = new Set<string>();
    for (const o of r.objects) {
      expect(API_VERSIONS[o.kind], o.kind).toBe(o.apiVersion);
      expect(o.metadata.name).toMatch(o.kind === 'Service' ? DNS_LABEL : DNS_SUBDOMAIN);
      if (CLUSTER_SCOPED.has(o.kind)) expect(o.metadata.namespace).toBeUndefined();
      else expect(o.metadata.namespace).toMatch(DNS_LABEL);
      for (const v of Object.values(o.metadata.labels ?? {})) expect(v).toMatch(/^([A-Za-z0-9][-A-Za-z0-9_.]{0,61}[A-Za-z0-9]?)?$/);
      const key = `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      expect(seen.has(key), key).toBe(false);
      seen.add(key);
    }
  });

  it('wire up: selectors match the pods, named ports exist, volumes and the service account are rendered', () => {
    const spec = pod.spec as { containers: { ports: { name: string }[]; volumeMounts: { name: string }[] }[]; volumes: { name: string; configMap?: { name: string } }[]; serviceAccountName: string };
    expect(selects((find(r, 'Deployment', 'mcip-router').spec as { selector: { matchLabels: Labels } }).selector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(selects((find(r, 'PodDisruptionBudget').spec as { selector: { matchLabels: Labels } }).selector.matchLabels, pod.metadata.labels)).toBe(true);
    const portNames = spec.containers.flatMap((c) => c.ports.map((p) => p.name));
    for (const svc of r.objects.filter((o) => o.kind === 'Service')) {
      const s = svc.spec as { selector: Labels; ports: { targetPort: string }[] };
      expect(selects(s.selector, pod.metadata.labels)).toBe(true);
      for (const p of s.ports) expect(portNames).toContain(p.targetPort);
    }
    const volumeNames = spec.volumes.map((v) => v.name);
    for (const c of spec.containers) for (const m of c.volumeMounts) expect(volumeNames).toContain(m.name);
    for (const v of spec.volumes.filter((x) => x.configMap)) expect(find(r, 'ConfigMap', v.configMap!.name).metadata.name).toBe(v.configMap!.name);
    expect(find(r, 'ServiceAccount', spec.serviceAccountName).metadata.name).toBe(spec.serviceAccountName);
  });

  it('run non-root on a read-only root filesystem, with resources, as the image user (every Deployment)', () => {
    const user = /^USER (\d+):(\d+)$/m.exec(readFileSync(path.join(REPO, 'Dockerfile'), 'utf8'))!;
    for (const d of r.objects.filter((o) => o.kind === 'Deployment')) {
      const spec = (d.spec as { template: { spec: Obj } }).template.spec as { securityContext: Obj; containers: { securityContext: Obj; resources: { requests?: Obj; limits?: Obj } }[] };
      expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 });
      expect([Number(user[1]), Number(user[2])]).toEqual([spec.securityContext.runAsUser, spec.securityContext.runAsGroup]);
      for (const c of spec.containers) {
        expect(c.securityContext, d.metadata.name).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
        expect(c.resources.requests, d.metadata.name).toBeDefined();
        expect(c.resources.limits?.memory, d.metadata.name).toBeDefined();
      }
    }
  });

  it('grant the local RBAC of deploy/rbac/local.yaml, bound to the pod service account', () => {
    const local = deployFile('rbac/local.yaml');
    expect(rulesOf(find(r, 'ClusterRole', 'mcip-router'))).toEqual(rulesOf(ofKind(local, 'ClusterRole')));
    const lease = /leaseName: "([^"]+)"/.exec(routerConfigText(r))![1]!;
    const leaseNamespace = /leaseNamespace: "([^"]+)"/.exec(routerConfigText(r))![1]!;
    const role = find(r, 'Role', 'mcip-router-leader-election');
    expect(role.metadata.namespace).toBe(leaseNamespace);
    const expected = rulesOf(ofKind(local, 'Role')).map((x) => (x.resourceNames ? { ...x, resourceNames: [lease] } : x));
    expect(rulesOf(role)).toEqual(expected);
    const sa = (pod.spec as { serviceAccountName: string }).serviceAccountName;
    for (const binding of [find(r, 'ClusterRoleBinding', 'mcip-router'), find(r, 'RoleBinding', 'mcip-router-leader-election')]) {
      expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: 'mcip-system' }]);
      const ref = binding.roleRef as { kind: string; name: string };
      expect(find(r, ref.kind, ref.name).metadata.name).toBe(ref.name);
    }
  });
});

describe('RBAC covers what the router calls', () => {
  const r = renderChart(REMOTE_VALUES);
  const rules = rulesOf(find(r, 'ClusterRole', 'mcip-router'));
  const leaseRules = rulesOf(find(r, 'Role', '-leader-election'));

  it.each(LOCAL_KINDS)('local: get/list/watch %s', (kind) => {
    const s = RESOURCE_SPECS[kind];
    for (const verb of ['get', 'list', 'watch']) expect(allows(rules, s.group, s.plural, verb), `${verb} ${s.plural}`).toBe(true);
  });

  it('local: list/get GatewayClasses and patch/update GatewayClass, Gateway and HTTPRoute status', () => {
    for (const verb of ['get', 'list']) expect(allows(rules, 'gateway.networking.k8s.io', 'gatewayclasses', verb), verb).toBe(true);
    for (const plural of ['gatewayclasses', 'gateways', 'httproutes']) {
      for (const verb of ['get', 'patch', 'update']) expect(allows(rules, 'gateway.networking.k8s.io', `${plural}/status`, verb), `${verb} ${plural}/status`).toBe(true);
      expect(allows(rules, 'gateway.networking.k8s.io', plural, 'patch'), `no writes to ${plural}`).toBe(false);
    }
  });

  it('local: patch/update InferencePoolImport status, and the leader-election Lease', () => {
    const s = RESOURCE_SPECS.InferencePoolImport;
    for (const verb of ['patch', 'update']) expect(allows(rules, s.group, `${s.plural}/status`, verb)).toBe(true);
    const lease = /leaseName: "([^"]+)"/.exec(routerConfigText(r))![1]!;
    expect(allows(leaseRules, 'coordination.k8s.io', 'leases', 'create')).toBe(true);
    for (const verb of ['get', 'update']) expect(allows(leaseRules, 'coordination.k8s.io', 'leases', verb, lease)).toBe(true);
    expect(allows(leaseRules, 'coordination.k8s.io', 'leases', 'update', 'someone-elses-lease')).toBe(false);
  });

  it('remote reader: deploy/rbac/remote.yaml, read-only, covering every kind read from remote members', () => {
    const remote = deployFile('rbac/remote.yaml');
    const reader = rulesOf(find(r, 'ClusterRole', '-reader'));
    expect(reader).toEqual(rulesOf(ofKind(remote, 'ClusterRole')));
    for (const kind of REMOTE_KINDS) {
      const s = RESOURCE_SPECS[kind];
      for (const verb of ['get', 'list', 'watch']) expect(allows(reader, s.group, s.plural, verb), `${verb} ${s.plural}`).toBe(true);
    }
    expect(reader.flatMap((x) => x.verbs).every((v) => ['get', 'list', 'watch'].includes(v))).toBe(true);
    const token = find(r, 'Secret', '-reader-token');
    expect(token.type).toBe('kubernetes.io/service-account-token');
    expect(token.metadata.annotations!['kubernetes.io/service-account.name']).toBe(find(r, 'ServiceAccount', '-reader').metadata.name);
  });
});

describe('optional objects', () => {
  const kinds = (values: Obj): string[] => renderChart(values).objects.map((o) => o.kind).sort();

  it('renders the Lease Role only for leader election, and nothing off by default', () => {
    expect(kinds({})).not.toContain('ServiceMonitor');
    expect(kinds({}).filter((k) => k === 'Secret')).toEqual([]);
    expect(kinds({ controller: { enabled: false } })).not.toContain('Role');
    // Without a Lease the import controller runs as one replica (the chart refuses more).
    expect(kinds({ replicaCount: 1, controller: { leaderElection: { enabled: false } } })).not.toContain('RoleBinding');
    expect(kinds({ rbac: { create: false }, serviceAccount: { create: false }, podDisruptionBudget: { enabled: false }, gatewayClass: { create: false } })).toEqual(['ConfigMap', 'ConfigMap', 'Deployment', 'Service']);
  });
});

describe('Gateway API status', () => {
  it('installs the GatewayClass (opt-out) whose controllerName is the one the router claims; Gateways name it', () => {
    const r = renderChart({});
    const cls = find(r, 'GatewayClass') as K8sObject & { spec: { controllerName: string } };
    expect(cls.metadata.name).toBe('mcip-envoy');
    expect(cls.spec.controllerName).toBe('mcip-router.dev/gateway-controller');
    expect((cls.spec as { description?: string }).description?.length).toBeLessThanOrEqual(64);
    const config = parse(routerConfigText(r)) as { controller: { gatewayStatus: Record<string, unknown> } };
    expect(config.controller.gatewayStatus).toMatchObject({ enabled: true, controllerName: cls.spec.controllerName });
    const renamed = renderChart({ gatewayClass: { name: 'team-gw' }, controller: { gatewayStatus: { controllerName: 'example.com/gw' } } });
    expect((find(renamed, 'GatewayClass') as typeof cls).spec.controllerName).toBe('example.com/gw');
    expect(renderChart({ gatewayClass: { create: false } }).objects.map((o) => o.kind)).not.toContain('GatewayClass');
  });

  it('reports the release Service as the Gateways\' address and judges listeners against its port and plain HTTP', () => {
    const r = renderChart({ service: { port: 8000 }, controller: { gatewayStatus: { addresses: [{ type: 'Hostname', value: 'llm.example.com' }] } } });
    const config = routerConfigSchema.parse(parse(routerConfigText(r)));
    const svc = find(r, 'Service');
    expect(config.controller.gatewayStatus.addressService).toEqual({ namespace: svc.metadata.namespace, name: svc.metadata.name });
    expect(config.controller.gatewayStatus.addresses).toEqual([{ type: 'Hostname', value: 'llm.example.com' }]);
    expect(config.gatewayListeners).toEqual({ protocols: ['HTTP'], ports: [8000] });
    const tls = routerConfigSchema.parse(parse(routerConfigText(renderChart({ gatewayListeners: { protocols: ['HTTP', 'HTTPS'], ports: [80, 443] } }))));
    expect(tls.gatewayListeners).toEqual({ protocols: ['HTTP', 'HTTPS'], ports: [80, 443] });
  });
});

describe('autoscaling', () => {
  it('is off by default: the Deployment keeps replicaCount and no HorizontalPodAutoscaler is rendered', () => {
    const r = renderChart({ replicaCount: 3 });
    expect(r.objects.map((o) => o.kind)).not.toContain('HorizontalPodAutoscaler');
    expect((find(r, 'Deployment').spec as { replicas?: number }).replicas).toBe(3);
  });

  it('on: an autoscaling/v2 HPA on CPU utilization targets the Deployment, which leaves its replica count to it', () => {
    const r = renderChart({ replicaCount: 3, autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 7, targetCPUUtilizationPercentage: 60 } });
    const hpa = find(r, 'HorizontalPodAutoscaler');
    const deployment = find(r, 'Deployment');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.metadata.namespace).toBe(deployment.metadata.namespace);
    expect(hpa.spec).toEqual({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name },
      minReplicas: 2,
      maxReplicas: 7,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 60 } } }],
    });
    expect((deployment.spec as { replicas?: number }).replicas).toBeUndefined();
    // Utilization is measured against requests: every container must request CPU.
    const containers = (deployment.spec as { template: { spec: { containers: { name: string; resources: { requests?: { cpu?: string } } }[] } } }).template.spec.containers;
    for (const c of containers) expect(c.resources.requests?.cpu, c.name).toBeTruthy();
  });
});

describe('crds/inferencepoolimports.yaml', () => {
  const docs = parseAllDocuments(readFileSync(path.join(CHART_DIR, 'crds/inferencepoolimports.yaml'), 'utf8')).map((d) => d.toJS() as K8sObject);

  it('is one CustomResourceDefinition for the InferencePoolImport the router reads', () => {
    expect(docs).toHaveLength(1);
    const crd = docs[0]!;
    const s = RESOURCE_SPECS.InferencePoolImport;
    expect(crd).toMatchObject({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${s.plural}.${s.group}` } });
    const spec = crd.spec as { group: string; scope: string; names: { kind: string; plural: string }; versions: { name: string; served: boolean; storage: boolean; subresources?: Obj; schema: { openAPIV3Schema: { type: string } } }[] };
    expect(spec).toMatchObject({ group: s.group, scope: 'Namespaced', names: { kind: 'InferencePoolImport', plural: s.plural } });
    const version = spec.versions.find((v) => v.name === s.version)!;
    expect(version).toMatchObject({ served: true, storage: true, subresources: { status: {} } });
    expect(version.schema.openAPIV3Schema.type).toBe('object');
    expect(spec.versions.filter((v) => v.storage)).toHaveLength(1);
  });
});
