/**
 * The chart's export agent (push/pull topology, exportAgent.enabled): its Deployment, config,
 * ServiceAccount and member RBAC. The rendered config is loaded as the agent loads it and run,
 * as rendered, against API-server stand-ins: the member enforcing the chart's RBAC for the
 * chart's ServiceAccount, the hub deploy/rbac/export-agent-hub.yaml.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCli } from '../../src/cli/args.js';
import { parseListenAddress } from '../../src/config/listen-address.js';
import { parseConfigText } from '../../src/config/load.js';
import { exportAgentSchema, kubernetesSourceSchema, type LoadedRouterConfig } from '../../src/config/schema.js';
import type { ExportAgentHandle } from '../../src/controller/export-agent.js';
import { startExportAgentFromConfig } from '../../src/controller/export-agent-runtime.js';
import { writeKubeconfig, type RequestRecord } from '../harness/kube-apiserver.js';
import { hubToken, PushPullEnv, rbacAuthorizer } from '../controller/export-agent-fixtures.js';
import { silent, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { CHART_DIR, defaultValues, find, mergeValues, readYaml, renderChart, REPO, type K8sObject, type Obj, type Rendered } from './render-chart.js';
import { AGENT_VALUES } from './sample-values.js';

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] };
type Container = { name: string; args: string[]; ports: { name: string; containerPort: number }[]; volumeMounts: { name: string; mountPath: string }[]; livenessProbe: Probe; readinessProbe: Probe };
type Probe = { httpGet: { path: string; port: string } };
type Pod = { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: Container[]; volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string; items: { key: string; path: string }[] } }[] } };

const rulesOf = (o: K8sObject): Rule[] => (o as unknown as { rules: Rule[] }).rules;
const deployFile = (file: string): K8sObject[] => parseAllDocuments(readFileSync(path.join(REPO, 'deploy', file), 'utf8')).map((d) => d.toJS() as K8sObject);
const agentPod = (r: Rendered): Pod => (find(r, 'Deployment', '-export-agent').spec as { template: Pod }).template;
const agentObjects = (r: Rendered): K8sObject[] => r.objects.filter((o) => o.metadata.name.includes('export-agent'));

/** The agent's config as the agent loads it (the file its container's --config names, from the ConfigMap mounted there). */
function agentConfig(r: Rendered): { config: LoadedRouterConfig; text: string } {
  const pod = agentPod(r);
  const c = pod.spec.containers[0]!;
  const cmd = parseCli(c.args, {});
  expect(cmd.type).toBe('export-agent');
  const file = (cmd as { configFile: string }).configFile;
  const mount = c.volumeMounts.find((m) => m.mountPath === path.dirname(file))!;
  const cmName = pod.spec.volumes.find((v) => v.name === mount.name)!.configMap!.name;
  const data = (find(r, 'ConfigMap', cmName) as K8sObject & { data: Record<string, string> }).data;
  expect(Object.keys(data)).toEqual([path.basename(file)]);
  const text = data[path.basename(file)]!;
  return { config: parseConfigText(text, file, path.dirname(file)), text };
}

describe('chart: export agent', () => {
  it('is off by default: no Deployment, config, ServiceAccount or RBAC', () => {
    expect(agentObjects(renderChart({}))).toEqual([]);
    expect(agentObjects(renderChart({ exportController: { enabled: true } }))).toEqual([]);
  });

  it('runs --export-agent on its own config, which the agent loads: this member in-cluster, the hub from the Secret mounted where exportAgent.hub.kubeconfig points', () => {
    const r = renderChart(AGENT_VALUES);
    expect(r.missingValues).toEqual([]);
    const { config } = agentConfig(r);
    expect(config.clusterName).toBe('cluster-a');
    expect(config.clusters).toHaveLength(1);
    expect(config.clusters[0]).toMatchObject({ name: 'cluster-a', kubernetes: { inCluster: true } });
    const agent = config.exportAgent!;
    // Unset values are the agent's own defaults (the config schema's).
    expect(agent).toMatchObject({ namespacePrefix: 'mcip-member-', name: 'mcip-router.dev/export-agent', heartbeatMs: 10_000, staleAfterMs: 45_000, hub: { requestTimeoutMs: 2000 } });
    const pod = agentPod(r);
    const c = pod.spec.containers[0]!;
    const mount = c.volumeMounts.find((m) => m.mountPath === path.dirname(agent.hub.kubeconfig!))!;
    const secret = pod.spec.volumes.find((v) => v.name === mount.name)!.secret!;
    expect([secret.secretName, secret.items]).toEqual(['mcip-hub', [{ key: 'config', path: path.basename(agent.hub.kubeconfig!) }]]);
    // Its record's hub namespace is the one deploy/rbac/export-agent-hub.yaml makes for cluster-a.
    expect(`${agent.namespacePrefix}${config.clusterName}`).toBe(deployFile('rbac/export-agent-hub.yaml').find((o) => o.kind === 'Namespace')!.metadata.name);
  });

  it('passes its settings through, and leader election on a Lease its Role names', () => {
    const r = renderChart(mergeValues(AGENT_VALUES, {
      exportAgent: { namespacePrefix: 'fleet-', name: 'example.com/agent', heartbeatMs: 5000, staleAfterMs: 20000, resyncMs: 30000, withdrawalGraceMs: 0, leaderElection: { leaseName: 'agent-lease', leaseNamespace: 'kube-system' } },
      localCluster: { namespaces: ['inference'], qps: 30 },
    }));
    const { config } = agentConfig(r);
    // withdrawalGraceMs 0 is unset for the chart (Helm's `with`): the agent's default applies.
    expect(config.exportAgent).toMatchObject({ namespacePrefix: 'fleet-', name: 'example.com/agent', heartbeatMs: 5000, staleAfterMs: 20000, resyncMs: 30000, withdrawalGraceMs: 30_000 });
    expect(config.clusters[0]!.kubernetes).toMatchObject({ namespaces: ['inference'], qps: 30 });
    expect(config.exportAgent!.leaderElection).toMatchObject({ enabled: true, leaseName: 'agent-lease', leaseNamespace: 'kube-system' });
    const role = find(r, 'Role', '-export-agent-leader-election');
    expect(role.metadata.namespace).toBe('kube-system');
    expect(rulesOf(role)[1]!.resourceNames).toEqual(['agent-lease']);
    const off = renderChart(mergeValues(AGENT_VALUES, { exportAgent: { replicaCount: 1, leaderElection: { enabled: false } } }));
    expect(agentConfig(off).config.exportAgent!.leaderElection.enabled).toBe(false);
    expect(off.objects.filter((o) => o.metadata.name.endsWith('-export-agent-leader-election'))).toEqual([]);
  });

  it('every exportAgent key and hub setting can be set from values', () => {
    const hub = { kubeconfigSecret: { name: 'h' }, context: 'c', allowExecPlugins: true, qps: 1, burst: 2, requestTimeoutMs: 1000, watchIdleTimeoutMs: 5000, maxResponseBytes: 8 * 1024 * 1024 };
    const set = { hub, namespacePrefix: 'm-', name: 'example.com/a', heartbeatMs: 1000, staleAfterMs: 5000, resyncMs: 2000, withdrawalGraceMs: 100 };
    const r = renderChart(mergeValues(AGENT_VALUES, { exportAgent: set }));
    const { config, text } = agentConfig(r);
    const raw = parse(text) as { exportAgent: Obj & { hub: Obj } };
    expect(Object.keys(exportAgentSchema.shape).filter((k) => !(k in raw.exportAgent))).toEqual([]);
    expect(Object.keys(kubernetesSourceSchema.shape).filter((k) => k !== 'namespaces' && k !== 'inCluster' && !(k in raw.exportAgent.hub))).toEqual([]);
    expect(config.exportAgent).toMatchObject({ namespacePrefix: 'm-', name: 'example.com/a', heartbeatMs: 1000, staleAfterMs: 5000, resyncMs: 2000, withdrawalGraceMs: 100, hub: { context: 'c', allowExecPlugins: true, qps: 1, burst: 2 } });
  });

  it('its member RBAC is deploy/rbac/export-agent-member.yaml, bound to its own ServiceAccount; nothing of the hub side', () => {
    const r = renderChart(AGENT_VALUES);
    const member = deployFile('rbac/export-agent-member.yaml');
    const sa = agentPod(r).spec.serviceAccountName;
    expect(find(r, 'ServiceAccount', '-export-agent').metadata.name).toBe(sa);
    expect(rulesOf(find(r, 'ClusterRole', '-export-agent'))).toEqual(rulesOf(member.find((o) => o.kind === 'ClusterRole')!));
    const lease = agentConfig(r).config.exportAgent!.leaderElection.leaseName;
    const expected = rulesOf(member.find((o) => o.kind === 'Role')!).map((x) => (x.resourceNames ? { ...x, resourceNames: [lease] } : x));
    expect(rulesOf(find(r, 'Role', '-export-agent-leader-election'))).toEqual(expected);
    for (const b of [find(r, 'ClusterRoleBinding', '-export-agent'), find(r, 'RoleBinding', '-export-agent-leader-election')]) {
      expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: sa, namespace: 'mcip-system' }]);
    }
    // The records live on the hub: the agent needs no right on them here, and the chart makes no hub object.
    expect(agentObjects(r).flatMap((o) => (o.rules as Rule[] | undefined) ?? []).flatMap((x) => x.resources)).not.toContain('memberexportrecords');
    expect(r.objects.map((o) => o.kind)).not.toContain('Namespace');
  });

  it('probes and serves /metrics on the admin port its config listens on, /debug/* on loopback; its pods are not router pods', () => {
    const r = renderChart(mergeValues(AGENT_VALUES, { serviceMonitor: { enabled: true } }));
    const { config } = agentConfig(r);
    const pod = agentPod(r);
    const c = pod.spec.containers[0]!;
    const admin = parseListenAddress(config.listen.admin) as { host: string; port: number };
    expect(admin.host).toBe('0.0.0.0');
    expect(c.ports).toEqual([{ name: 'admin', containerPort: admin.port, protocol: 'TCP' }]);
    expect([c.livenessProbe.httpGet, c.readinessProbe.httpGet]).toEqual([{ path: '/healthz', port: 'admin' }, { path: '/readyz', port: 'admin' }]);
    expect(parseListenAddress(config.listen.debug!)).toMatchObject({ host: '127.0.0.1' });
    const labels = pod.metadata.labels;
    const metrics = find(r, 'Service', '-metrics').spec as { selector: Record<string, string> };
    expect(Object.entries(metrics.selector).every(([k, v]) => labels[k] === v)).toBe(true);
    expect(labels['app.kubernetes.io/component']).toBe('export-agent');
  });

  it('NOTES name the hub namespace of its record and how to reach its /debug/exports', () => {
    const r = renderChart(AGENT_VALUES);
    const { config } = agentConfig(r);
    const debugPort = (parseListenAddress(config.listen.debug!) as { port: number }).port;
    expect(r.notes).toContain(`hub namespace\n${config.exportAgent!.namespacePrefix}${config.clusterName} with the kubeconfig of Secret mcip-hub`);
    expect(r.notes).toContain(`port-forward deploy/${find(r, 'Deployment', '-export-agent').metadata.name} ${debugPort}`);
    expect(r.notes).toContain(`localhost:${debugPort}/debug/exports`);
    expect(renderChart({}).notes).not.toContain('Export agent');
  });

  it('refuses to render without the hub kubeconfig Secret, and values.schema.json rejects it too', () => {
    expect(() => renderChart({ exportAgent: { enabled: true } })).toThrow(/exportAgent\.hub\.kubeconfigSecret\.name is empty/);
    const validate = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true }).compile(readYaml(path.join(CHART_DIR, 'values.schema.json')) as Obj);
    const errors = (v: Obj): string[] => (validate(mergeValues(defaultValues(), v)) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`));
    expect(errors(AGENT_VALUES)).toEqual([]);
    expect(errors({ exportAgent: { enabled: true } })).toContainEqual(expect.stringContaining('/exportAgent/hub/kubeconfigSecret/name '));
    expect(errors(mergeValues(AGENT_VALUES, { exportAgent: { heartbeatMs: 10 } }))).toContainEqual(expect.stringContaining('/exportAgent/heartbeatMs '));
    expect(errors(mergeValues(AGENT_VALUES, { exportAgent: { namespacePrefix: 'Member-' } }))).toContainEqual(expect.stringContaining('/exportAgent/namespacePrefix '));
    expect(errors(mergeValues(AGENT_VALUES, { exportAgent: { hub: { namespaces: ['x'] } } }))).toContainEqual(expect.stringContaining('/exportAgent/hub '));
  });
});

describe('chart: one writer per Lease', () => {
  it.each<[string, Obj]>([
    ['the export agent', mergeValues(AGENT_VALUES, { exportAgent: { replicaCount: 2, leaderElection: { enabled: false } } })],
    ['the export controller', { exportController: { enabled: true, replicaCount: 2, leaderElection: { enabled: false } } }],
    ['the routers\' import controller', { replicaCount: 2, controller: { leaderElection: { enabled: false } } }],
    ['the routers\' import controller under an autoscaler', { replicaCount: 1, autoscaling: { enabled: true }, controller: { leaderElection: { enabled: false } } }],
  ])('refuses %s as several replicas without leader election', (_what, values) => {
    expect(() => renderChart(values)).toThrow(/leaderElection\.enabled is false with more than one replica/);
  });

  it('without leader election, replaces its one pod by Recreate (no rollout overlap); with it, rolls', () => {
    const strategy = (values: Obj, suffix: string): unknown => (find(renderChart(values), 'Deployment', suffix) as K8sObject & { spec: { strategy?: unknown } }).spec.strategy;
    expect(strategy(mergeValues(AGENT_VALUES, { exportAgent: { replicaCount: 1, leaderElection: { enabled: false } } }), '-export-agent')).toEqual({ type: 'Recreate' });
    expect(strategy({ exportController: { enabled: true, replicaCount: 1, leaderElection: { enabled: false } } }, '-export-controller')).toEqual({ type: 'Recreate' });
    expect(strategy(AGENT_VALUES, '-export-agent')).toBeUndefined();
    expect(strategy({ exportController: { enabled: true } }, '-export-controller')).toBeUndefined();
  });

  it('renders one replica without leader election, and several with it', () => {
    expect(() => renderChart(mergeValues(AGENT_VALUES, { exportAgent: { replicaCount: 1, leaderElection: { enabled: false } } }))).not.toThrow();
    expect(() => renderChart({ replicaCount: 1, controller: { leaderElection: { enabled: false } } })).not.toThrow();
    expect(() => renderChart({ exportController: { enabled: true, replicaCount: 3 } })).not.toThrow();
  });
});

describe('chart: export agent as rendered, against a hub and a second member', () => {
  let env: PushPullEnv | undefined;
  let agent: ExportAgentHandle | undefined;
  afterEach(async () => {
    await agent?.stop();
    await env?.close();
    agent = undefined;
    env = undefined;
  });

  it('publishes cluster-a\'s exports and keeps its imports with only the chart\'s RBAC in cluster-a and the hub RBAC of deploy/rbac', async () => {
    env = await new PushPullEnv(['cluster-a', 'cluster-b']).start();
    const r = renderChart(mergeValues(AGENT_VALUES, {
      exportAgent: { heartbeatMs: 500, staleAfterMs: 5000, withdrawalGraceMs: 1000 },
      kubernetesTuning: { coalesceMs: 10, coalesceMaxMs: 100, initialSyncTimeoutMs: 1000, backoffInitialMs: 50, backoffMaxMs: 200 },
    }));
    const { config } = agentConfig(r);
    // cluster-a allows what the chart's RBAC objects grant its ServiceAccount, and nothing else.
    const rbac = r.objects.filter((o) => ['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind) && o.metadata.name.includes('export-agent'));
    const allowed = rbacAuthorizer(rbac.map((o) => stringify(o)).join('---\n'));
    const denied: RequestRecord[] = [];
    env.server('cluster-a').authorize((token, req) => allowed(token, req) || (denied.push(req), false));
    const sa = `system:serviceaccount:mcip-system:${agentPod(r).spec.serviceAccountName}`;
    // The pod's view: its service account in cluster-a (in-cluster), the Secret's kubeconfig at the path the config names.
    const root = path.join(env.dir, 'pod');
    const hubFile = path.join(root, config.exportAgent!.hub.kubeconfig!);
    mkdirSync(path.dirname(hubFile), { recursive: true });
    await writeKubeconfig(path.dirname(hubFile), { server: env.hub.url, token: hubToken('cluster-a') }, path.basename(hubFile));
    const { inCluster: _inCluster, ...local } = config.clusters[0]!.kubernetes!;
    const member = await writeKubeconfig(env.dir, { server: env.server('cluster-a').url, token: sa }, 'cluster-a-in-cluster.kubeconfig');
    agent = await startExportAgentFromConfig(
      { ...config, clusters: [{ ...config.clusters[0]!, kubernetes: { ...local, kubeconfig: member } }], exportAgent: { ...config.exportAgent!, hub: { ...config.exportAgent!.hub, kubeconfig: hubFile } } },
      { logger: silent },
    );
    await env.agent('cluster-b');

    env.exportPool('cluster-a', 'llm');
    env.exportPool('cluster-b', 'chat');
    await waitFor(() => env!.importedFrom('cluster-b', 'llm')?.join() === 'cluster-a', 15_000, 'cluster-a\'s export imported in cluster-b');
    await waitFor(() => env!.importedFrom('cluster-a', 'chat')?.join() === 'cluster-b', 15_000, 'cluster-b\'s export imported in cluster-a');
    await waitFor(() => env!.exported('cluster-a', 'llm')?.status === 'True', 15_000, 'Exported True on cluster-a\'s pool');
    expect(env.hub.get('memberexportrecords', 'mcip-member-cluster-a', 'cluster-a')).toBeDefined();
    expect(denied).toEqual([]);
    // One writer, on the Lease the chart's Role names.
    const lease = env.server('cluster-a').get('leases', config.exportAgent!.leaderElection.leaseNamespace!, config.exportAgent!.leaderElection.leaseName);
    expect(rulesOf(find(r, 'Role', '-export-agent-leader-election'))[1]!.resourceNames).toEqual([lease?.metadata.name]);
  }, 40_000);
});
