/**
 * The Helm commands for fleet members and the export agent (docs/fleet.md "6. With the Helm
 * chart", the chart README's "Members from ClusterProfiles" and "Export agent (push/pull)"), run
 * as Helm would: every `-f` file exists, the values pass values.schema.json, the chart renders
 * with them, the router config and the agent config load as the router and the agent load them,
 * the provider files as the router loads them, and every ConfigMap and Secret the values name is
 * one the guide's commands create, under the key the values read.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { loadProviderFile } from '../../src/credentials/provider-file.js';
import { CHART_DIR, defaultValues, find, mergeValues, readYaml, renderChart, REPO, type K8sObject, type Obj, type Rendered } from '../charts/render-chart.js';
import { routerConfig } from '../charts/router-config.js';
import { flagValues, helmInstall, setValues, shellCommands } from './helm-commands.js';

const ENV = { IMAGE: 'registry.example/mcip-router', AZURE_CLIENT_ID: '00000000-0000-0000-0000-000000000001' };
const read = (file: string): string => readFileSync(path.join(REPO, file), 'utf8');
const section = (text: string, heading: string): string => {
  const start = text.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no heading ${heading}`);
  const next = text.indexOf('\n## ', start + heading.length + 2);
  return text.slice(start, next < 0 ? undefined : next);
};
const GUIDE = section(read('docs/fleet.md'), '## 6. With the Helm chart');
const README = read('charts/mcip-router/README.md');
const CHART_SECTIONS = section(README, '## Members from ClusterProfiles') + section(README, '## Export agent (push/pull)');

/** What the release of docs/two-clusters.md holds before these commands (its step 6). */
const TWO_CLUSTERS_RELEASE = mergeValues(readYaml(path.join(REPO, 'examples/two-clusters/helm/cluster-a-values.yaml')) as Obj, { image: { repository: ENV.IMAGE } });

const validate = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true }).compile(readYaml(path.join(CHART_DIR, 'values.schema.json')) as Obj);
const tmp = mkdtempSync(path.join(tmpdir(), 'mcip-fleet-helm-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `kubectl create configmap|secret generic NAME --from-file=[KEY=]FILE` of the commands: NAME -> keys. */
function createdObjects(cmds: string[][], kind: 'configmap' | 'secret'): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const c of cmds) {
    const i = c.indexOf('create');
    if (c[0] !== 'kubectl' || i < 0 || c[i + 1] !== kind) continue;
    const name = c[kind === 'secret' ? i + 3 : i + 2]!;
    const keys = c.filter((a) => a.startsWith('--from-file=')).map((a) => {
      const spec = a.slice('--from-file='.length);
      return spec.includes('=') ? spec.split('=')[0]! : path.basename(spec);
    });
    out.set(name, keys);
  }
  return out;
}

interface Checked { readonly values: Obj; readonly r: Rendered }

/** Renders a guide's helm command as Helm would install it, and checks what it renders. */
function checkHelm(args: string[], cmds: string[][]): Checked {
  // The two-clusters release is in cluster-a (the current context here); in another member the command is a first install.
  const context = flagValues(args, '--kube-context')[0];
  const cmd = helmInstall(args, context === undefined || context === 'cluster-a' ? TWO_CLUSTERS_RELEASE : {});
  expect(cmd.chart).toBe('charts/mcip-router');
  for (const f of cmd.files) expect(existsSync(path.join(REPO, f)), f).toBe(true);
  const values = mergeValues(defaultValues(), cmd.values);
  expect(validate(values) ? [] : validate.errors, args.join(' ')).toEqual([]);
  const r = renderChart(cmd.values, cmd.release, false);
  expect(r.missingValues).toEqual([]);
  const configMaps = createdObjects(cmds, 'configmap');
  const secrets = createdObjects(cmds, 'secret');
  const cp = (values.fleet as { clusterProfiles: Obj & { enabled: boolean; hub: { kubeconfigSecret: { name: string; key: string } }; providers: { configMap: { name: string; key: string }; inline?: Obj } } }).clusterProfiles;
  if (cp.enabled) {
    const config = routerConfig(r).fleet.clusterProfiles!;
    expect(config.providerFile).toBe('/etc/mcip-fleet/providers.json');
    // The chart's ConfigMaps of inline provider files (the routers', the export controller's).
    for (const cm of r.objects.filter((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-fleet-providers')) as (K8sObject & { data: Record<string, string> })[]) {
      const file = path.join(tmp, `${cm.metadata.name}.json`);
      writeFileSync(file, cm.data['providers.json']!);
      expect(loadProviderFile(file).providers.length).toBeGreaterThan(0);
    }
    if (Object.keys(cp.providers.inline ?? {}).length > 0) {
      expect(r.objects.map((o) => o.metadata.name)).toContain(`${cmd.release.name}-mcip-router-fleet-providers`);
    } else {
      expect(configMaps.get(cp.providers.configMap.name), `a command creates ConfigMap ${cp.providers.configMap.name}`).toContain(cp.providers.configMap.key);
    }
    if (cp.hub.kubeconfigSecret.name) {
      expect(secrets.get(cp.hub.kubeconfigSecret.name), `a command creates Secret ${cp.hub.kubeconfigSecret.name}`).toContain(cp.hub.kubeconfigSecret.key);
      expect(config.hub.kubeconfig).toBe('/var/run/secrets/mcip-router/fleet-hub/kubeconfig');
    } else {
      expect(config.hub.inCluster).toBe(true);
    }
  }
  const agent = values.exportAgent as { enabled: boolean; hub: { kubeconfigSecret: { name: string; key: string } } };
  if (agent.enabled) {
    const cm = find(r, 'ConfigMap', '-export-agent') as K8sObject & { data: Record<string, string> };
    const config = parseConfigText(cm.data['agent.yaml']!, '/etc/mcip-router/agent.yaml', '/etc/mcip-router');
    expect(config.exportAgent!.hub.kubeconfig).toBe('/var/run/secrets/mcip-router/export-hub/kubeconfig');
    expect(secrets.get(agent.hub.kubeconfigSecret.name), `a command creates Secret ${agent.hub.kubeconfigSecret.name}`).toContain(agent.hub.kubeconfigSecret.key);
  }
  return { values, r };
}

describe('docs/fleet.md: 6. With the Helm chart', () => {
  const cmds = shellCommands(GUIDE, ENV);
  const helm = cmds.filter((c) => c[0] === 'helm');

  it('every helm command installs values the schema accepts and renders configs the router and the agent load', () => {
    expect(helm).toHaveLength(5);
    const rendered = helm.map((c) => checkHelm(c, cmds));
    // The OCM routers, by file and by --set, render the same fleet block but for the provider file's source.
    const fleetOf = (x: Checked): Obj => { const f = parse((find(x.r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> }).data['router.yaml']!) as { fleet: Obj }; return f.fleet; };
    expect(fleetOf(rendered[1]!)).toEqual(fleetOf(rendered[0]!));
    // The export controller gets its own ConfigMap; the agent command names the member.
    expect(rendered[2]!.r.objects.map((o) => o.metadata.name)).toEqual(expect.arrayContaining(['mcip-mcip-router-export-controller', 'mcip-mcip-router-export-controller-fleet-providers']));
    expect((rendered[4]!.values as { clusterName: string }).clusterName).toBe('cluster1');
  });

  it('names what the chart renders for release mcip', () => {
    const ocm = checkHelm(helm[0]!, cmds).r;
    for (const name of ['mcip-mcip-router-fleet', 'mcip-mcip-router-fleet-providers']) {
      expect(GUIDE).toContain(`\`${name}\``);
      expect(ocm.objects.map((o) => o.metadata.name)).toContain(name);
    }
    expect(find(ocm, 'Role', '-fleet').metadata.namespace).toBe('mcip-system');
    const agent = checkHelm(helm[4]!, cmds).r;
    expect(GUIDE).toContain(`deployment ${find(agent, 'Deployment', '-export-agent').metadata.name}`);
  });

  it('the kubectl commands apply files that exist; the export controller\'s member RBAC is deploy/rbac/export-member.yaml\'s for the ServiceAccount its ManagedServiceAccount makes', () => {
    const kubectl = cmds.flatMap((c) => c.join(' ').split(' | ').map((p) => p.split(' '))).filter((c) => c[0] === 'kubectl');
    for (const f of kubectl.flatMap((c) => flagValues(c, '-f')).filter((f) => f !== '-')) expect(existsSync(path.join(REPO, f)), f).toBe(true);
    const docs = (f: string): K8sObject[] => parseAllDocuments(read(f)).map((d) => d.toJS() as K8sObject);
    const rules = (objs: K8sObject[]): unknown => objs.find((o) => o.kind === 'ClusterRole')!.rules;
    const memberRbac = docs('examples/fleet/export-controller-member-rbac.yaml');
    expect(rules(memberRbac)).toEqual(rules(docs('deploy/rbac/export-member.yaml')));
    const msa = docs('examples/fleet/ocm-export-controller-msa.yaml')[0]!;
    const binding = memberRbac.find((o) => o.kind === 'ClusterRoleBinding') as K8sObject & { subjects: { name: string; namespace: string }[] };
    // The managed-serviceaccount addon makes the ServiceAccount in the member's addon namespace (as docs/fleet.md section 2 binds mcip-router).
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: msa.metadata.name, namespace: 'open-cluster-management-agent-addon' }]);
    const writer = (readYaml(path.join(REPO, 'examples/fleet/ocm-export-controller-values.yaml')) as { exportController: { fleet: { providers: { inline: { providers: { execConfig: { args: string[] } }[] } } } } }).exportController.fleet.providers.inline.providers[0]!;
    expect(writer.execConfig.args).toEqual([`--managed-serviceaccount=${msa.metadata.name}`]);
  });

  it('the hub RBAC the agent\'s token comes from is deploy/rbac/export-agent-hub.yaml for the member the release names', () => {
    const sed = cmds.find((c) => c[0] === 'sed')!;
    const [from, to] = /^s\/(.+)\/(.+)\/g$/.exec(sed[1]!)!.slice(1);
    const hub = read(sed[2]!).replaceAll(from!, to!);
    const namespace = parseAllDocuments(hub).map((d) => d.toJS() as K8sObject).find((o) => o.kind === 'Namespace')!.metadata.name;
    const agent = checkHelm(cmds.filter((c) => c[0] === 'helm')[4]!, cmds);
    const cm = find(agent.r, 'ConfigMap', '-export-agent') as K8sObject & { data: Record<string, string> };
    const config = parseConfigText(cm.data['agent.yaml']!, 'agent.yaml', '/etc/mcip-router');
    expect(`${config.exportAgent!.namespacePrefix}${config.clusterName}`).toBe(namespace);
    const token = cmds.find((c) => c.some((w) => w.includes('create token')))!;
    expect(token.join(' ')).toContain(`-n ${namespace} create token mcip-export-agent`);
  });
});

describe('charts/mcip-router/README.md: fleet members and the export agent', () => {
  const cmds = shellCommands(CHART_SECTIONS, ENV);

  it('every helm install renders and loads', () => {
    const helm = cmds.filter((c) => c[0] === 'helm');
    expect(helm).toHaveLength(3);
    const [routers, withExport, agent] = helm.map((c) => checkHelm(c, cmds));
    expect(routers!.r.objects.filter((o) => o.kind === 'Deployment')).toHaveLength(1);
    expect(withExport!.r.objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual(['gw-mcip-router', 'gw-mcip-router-export-controller']);
    expect(agent!.r.objects.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual(['gw-mcip-router', 'gw-mcip-router-export-agent']);
  });
});

describe('helm --set as Helm parses it', () => {
  it('dotted keys, escaped dots, lists, booleans, numbers', () => {
    expect(setValues('a.b=x,c=true,d=3')).toEqual({ a: { b: 'x' }, c: true, d: 3 });
    expect(setValues('m.members.namespaces={inference,models}')).toEqual({ m: { members: { namespaces: ['inference', 'models'] } } });
    expect(setValues('s.annotations.azure\\.workload\\.identity/client-id=abc')).toEqual({ s: { annotations: { 'azure.workload.identity/client-id': 'abc' } } });
    expect(setValues('l=x-k8s.io/cluster-manager=open-cluster-management')).toEqual({ l: 'x-k8s.io/cluster-manager=open-cluster-management' });
  });
});
