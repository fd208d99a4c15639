/**
 * The chart's fleet.clusterProfiles: members from a fleet manager's ClusterProfiles for the
 * routers and the export controller. The rendered router config is loaded as the router loads
 * it, the provider file as the router loads it, and every path the config names is mounted
 * from the object the values name.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CHECK_LOAD_ERRORS, runCheck } from '../../src/cli/check.js';
import { parseConfigText } from '../../src/config/load.js';
import { clusterProfilesSchema, kubernetesSourceSchema } from '../../src/config/schema.js';
import { loadProviderFile } from '../../src/credentials/provider-file.js';
import { CHART_DIR, defaultValues, find, mergeValues, readYaml, renderChart, type K8sObject, type Obj, type Rendered } from './render-chart.js';
import { rbacAuthorizer } from '../controller/export-agent-fixtures.js';
import { writeKubeconfig, type RequestRecord } from '../harness/kube-apiserver.js';
import { createTestCa } from '../helpers/pki.js';
import { FleetEnv } from '../sources/fleet/fleet-env.js';
import { silent } from '../sources/kubernetes/kube-fixtures.js';
import { routerConfig, routerConfigText } from './router-config.js';
import { FLEET_VALUES, OCM_PROVIDERS } from './sample-values.js';

type Mount = { name: string; mountPath: string };
type Volume = { name: string; configMap?: { name: string; items: { key: string; path: string }[] }; secret?: { secretName: string; items: { key: string; path: string }[] } };
type Pod = { serviceAccountName: string; containers: { name: string; volumeMounts: Mount[] }[]; volumes: Volume[] };
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

const pod = (r: Rendered, nameSuffix: string): Pod => (find(r, 'Deployment', nameSuffix).spec as { template: { spec: Pod } }).template.spec;
const annotations = (r: Rendered, nameSuffix: string): Record<string, string> =>
  (find(r, 'Deployment', nameSuffix).spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations;

/** The volume mounted (in container `container`) at the directory holding `file`, and the file's item in it. */
function mountedFile(p: Pod, container: string, file: string): { volume: Volume; key: string } {
  const mount = p.containers.find((c) => c.name === container)!.volumeMounts.find((m) => m.mountPath === path.dirname(file));
  if (!mount) throw new Error(`${container}: nothing mounted at ${path.dirname(file)}`);
  const volume = p.volumes.find((v) => v.name === mount.name)!;
  const item = (volume.configMap ?? volume.secret)!.items.find((i) => i.path === path.basename(file));
  if (!item) throw new Error(`${container}: volume ${volume.name} has no ${path.basename(file)}`);
  return { volume, key: item.key };
}

const tmp = mkdtempSync(path.join(tmpdir(), 'mcip-fleet-chart-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Loads the provider file a pod reads, from the chart's ConfigMap, as the router loads it. */
function loadMountedProviders(r: Rendered, volume: Volume, key: string): ReturnType<typeof loadProviderFile> {
  const cm = find(r, 'ConfigMap', volume.configMap!.name) as K8sObject & { data: Record<string, string> };
  const file = path.join(tmp, `${volume.configMap!.name}.json`);
  writeFileSync(file, cm.data[key]!);
  return loadProviderFile(file);
}

const withFleet = (over: Obj): Obj => mergeValues(FLEET_VALUES, { fleet: { clusterProfiles: over } });

describe('chart: fleet.clusterProfiles', () => {
  it('is off by default: no fleet block, no provider file, no hub access', () => {
    const r = renderChart({});
    expect(routerConfig(r).fleet.clusterProfiles).toBeUndefined();
    expect(r.objects.filter((o) => o.metadata.name.includes('fleet'))).toEqual([]);
    expect(pod(r, 'gw-mcip-router').volumes.map((v) => v.name)).not.toContain('fleet-providers');
  });

  it('renders a fleet block the router loads, with its provider file (inline values) mounted where the block names it', () => {
    const r = renderChart(FLEET_VALUES);
    expect(r.missingValues).toEqual([]);
    const cp = routerConfig(r).fleet.clusterProfiles!;
    expect(cp).toMatchObject({ namespace: 'fleet-members', labelSelector: 'x-k8s.io/cluster-manager=open-cluster-management', apiVersion: 'v1alpha1', hub: { inCluster: true } });
    // plugins and members are the router's own blocks: the schema's defaults fill what the values leave out.
    expect(cp.plugins).toMatchObject({ timeoutMs: 5000, inheritEnv: expect.arrayContaining(['NAMESPACE']), maxOutputBytes: 64 * 1024 });
    expect(cp.members).toMatchObject({ namespaces: ['inference'], qps: 20, epp: { tls: { insecureSkipVerify: true } } });
    const { volume, key } = mountedFile(pod(r, 'gw-mcip-router'), 'router', cp.providerFile);
    expect(volume.configMap!.name).toBe('gw-mcip-router-fleet-providers');
    const file = loadMountedProviders(r, volume, key);
    expect(file.providers.map((p) => [p.name, p.execConfig.command, p.execConfig.args])).toEqual([['open-cluster-management', '/usr/local/bin/cp-creds', ['--managed-serviceaccount=mcip-router']]]);
  });

  it('in-cluster hub: a Role in the profiles\' namespace lets the pods read ClusterProfiles (and Secrets only with readSecrets), nothing more', () => {
    const r = renderChart(mergeValues(FLEET_VALUES, { exportController: { enabled: true } }));
    const role = find(r, 'Role', '-fleet');
    expect(role.metadata.namespace).toBe('fleet-members');
    expect((role as unknown as { rules: Rule[] }).rules).toEqual([
      { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    ]);
    const binding = find(r, 'RoleBinding', '-fleet') as K8sObject & { subjects: { name: string; namespace: string }[]; roleRef: { name: string } };
    expect(binding.metadata.namespace).toBe('fleet-members');
    expect(binding.roleRef.name).toBe(role.metadata.name);
    // The routers' and the export controller's service accounts: the plugins run as the pod.
    expect(binding.subjects.map((s) => `${s.namespace}/${s.name}`)).toEqual([
      `mcip-system/${pod(r, 'gw-mcip-router').serviceAccountName}`,
      `mcip-system/${pod(r, '-export-controller').serviceAccountName}`,
    ]);
    const noSecrets = (find(renderChart(withFleet({ readSecrets: false })), 'Role', '-fleet') as unknown as { rules: Rule[] }).rules;
    expect(noSecrets.flatMap((x) => x.resources)).toEqual(['clusterprofiles']);
    expect(renderChart(mergeValues(FLEET_VALUES, { rbac: { create: false } })).objects.filter((o) => o.kind === 'Role' && o.metadata.name.endsWith('-fleet'))).toEqual([]);
  });

  it('hub from a Secret: the kubeconfig is mounted where hub.kubeconfig points, with its settings; the chart grants nothing (the hub is another cluster)', () => {
    const hub = { kubeconfigSecret: { name: 'fleet-hub', key: 'hub.kubeconfig' }, context: 'reader@hub', allowExecPlugins: true, qps: 5, requestTimeoutMs: 3000 };
    const r = renderChart(withFleet({ hub, readSecrets: false }));
    const cp = routerConfig(r).fleet.clusterProfiles!;
    expect(cp.hub).toMatchObject({ context: 'reader@hub', allowExecPlugins: true, qps: 5, requestTimeoutMs: 3000 });
    expect(cp.hub.inCluster).toBeUndefined();
    const { volume, key } = mountedFile(pod(r, 'gw-mcip-router'), 'router', cp.hub.kubeconfig!);
    expect([volume.secret!.secretName, key]).toEqual(['fleet-hub', 'hub.kubeconfig']);
    expect(r.objects.filter((o) => o.metadata.name.endsWith('-fleet'))).toEqual([]);
  });

  it('the operator\'s own ConfigMap: mounted under the name the config reads, whatever its key; the chart makes none', () => {
    const r = renderChart(withFleet({ providers: { inline: null, configMap: { name: 'mcip-fleet-providers', key: 'ocm.json' } } }));
    const cp = routerConfig(r).fleet.clusterProfiles!;
    const { volume, key } = mountedFile(pod(r, 'gw-mcip-router'), 'router', cp.providerFile);
    expect([volume.configMap!.name, key]).toEqual(['mcip-fleet-providers', 'ocm.json']);
    expect(r.objects.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).not.toContain('gw-mcip-router-fleet-providers');
  });

  it('export controller: mounts the shared config\'s provider file and hub kubeconfig; its own write plugins when exportController.fleet.providers is set', () => {
    const hub = { kubeconfigSecret: { name: 'fleet-hub' } };
    const shared = renderChart(mergeValues(withFleet({ hub }), { exportController: { enabled: true } }));
    const cp = routerConfig(shared).fleet.clusterProfiles!;
    const controller = pod(shared, '-export-controller');
    expect(mountedFile(controller, 'export-controller', cp.providerFile).volume.configMap!.name).toBe('gw-mcip-router-fleet-providers');
    expect(mountedFile(controller, 'export-controller', cp.hub.kubeconfig!).volume.secret!.secretName).toBe('fleet-hub');

    const writer = { providers: [{ ...(OCM_PROVIDERS.providers as Obj[])[0], execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: '/usr/local/bin/cp-creds', args: ['--managed-serviceaccount=mcip-export-controller'], provideClusterInfo: true } }] };
    const own = renderChart(mergeValues(withFleet({ hub }), { exportController: { enabled: true, fleet: { providers: { inline: writer } } } }));
    const { volume, key } = mountedFile(pod(own, '-export-controller'), 'export-controller', routerConfig(own).fleet.clusterProfiles!.providerFile);
    expect(volume.configMap!.name).toBe('gw-mcip-router-export-controller-fleet-providers');
    expect(loadMountedProviders(own, volume, key).providers[0]!.execConfig.args).toEqual(['--managed-serviceaccount=mcip-export-controller']);
    // The routers keep reading with theirs.
    const routers = mountedFile(pod(own, 'gw-mcip-router'), 'router', routerConfig(own).fleet.clusterProfiles!.providerFile);
    expect(loadMountedProviders(own, routers.volume, routers.key).providers[0]!.execConfig.args).toEqual(['--managed-serviceaccount=mcip-router']);

    const named = renderChart(mergeValues(withFleet({}), { exportController: { enabled: true, fleet: { providers: { configMap: { name: 'export-writer' } } } } }));
    const n = mountedFile(pod(named, '-export-controller'), 'export-controller', routerConfig(named).fleet.clusterProfiles!.providerFile);
    expect([n.volume.configMap!.name, n.key]).toEqual(['export-writer', 'providers.json']);
  });

  it('rolls the pods when the inline provider file changes', () => {
    const before = renderChart(mergeValues(FLEET_VALUES, { exportController: { enabled: true } }));
    const changed = { providers: [{ ...(OCM_PROVIDERS.providers as Obj[])[0], execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: '/usr/local/bin/cp-creds', args: ['--managed-serviceaccount=other'] } }] };
    const after = renderChart(mergeValues(withFleet({ providers: { inline: changed } }), { exportController: { enabled: true } }));
    for (const d of ['gw-mcip-router', '-export-controller']) {
      expect(annotations(after, d)['checksum/fleet-providers']).toBeDefined();
      expect(annotations(after, d)['checksum/fleet-providers']).not.toBe(annotations(before, d)['checksum/fleet-providers']);
    }
  });

  it('NOTES name the profiles\' namespace and hub, and the --check command on the routers\' config', () => {
    const r = renderChart(FLEET_VALUES);
    const router = (find(r, 'Deployment', 'gw-mcip-router').spec as { template: { spec: { containers: { name: string; args: string[] }[] } } }).template.spec.containers.find((c) => c.name === 'router')!;
    expect(r.notes).toContain('Members from ClusterProfiles: fleet-members on this cluster, plugins of /etc/mcip-fleet/providers.json');
    expect(r.notes).toContain(`exec deploy/gw-mcip-router -c router -- node dist/src/main.js ${router.args.join(' ')} --check`);
    expect(renderChart(withFleet({ hub: { kubeconfigSecret: { name: 'fleet-hub' } } })).notes).toContain('on the hub of Secret fleet-hub');
    expect(renderChart({}).notes).not.toContain('ClusterProfiles');
  });

  it('every key of fleet.clusterProfiles and of its hub can be set from values', () => {
    const hub = { kubeconfigSecret: { name: 'h' }, context: 'c', allowExecPlugins: true, qps: 1, burst: 2, requestTimeoutMs: 1000, watchIdleTimeoutMs: 5000, maxResponseBytes: 8 * 1024 * 1024 };
    const raw = parse(routerConfigText(renderChart(withFleet({ hub, localProfile: 'this-cluster' })))) as { fleet: { clusterProfiles: Obj & { hub: Obj } } };
    const rendered = raw.fleet.clusterProfiles;
    expect(rendered.localProfile).toBe('this-cluster');
    expect(Object.keys(clusterProfilesSchema.shape).filter((k) => !(k in rendered))).toEqual([]);
    // namespaces does not apply to a hub; inCluster is what an empty kubeconfigSecret renders.
    const hubKeys = Object.keys(kubernetesSourceSchema.shape).filter((k) => k !== 'namespaces' && k !== 'inCluster');
    expect(hubKeys.filter((k) => !(k in rendered.hub))).toEqual([]);
  });

  it.each<[string, Obj, RegExp]>([
    ['no namespace', { namespace: '' }, /fleet\.clusterProfiles\.namespace is empty/],
    ['no provider file', { providers: { inline: null } }, /fleet\.clusterProfiles\.providers: name the ConfigMap/],
    ['a ConfigMap and an inline file', { providers: { configMap: { name: 'x' } } }, /configMap\.name and inline exclude each other/],
  ])('refuses to render with %s', (_why, over, message) => {
    expect(() => renderChart(withFleet(over))).toThrow(message);
  });
});

describe('values.schema.json: fleet', () => {
  const validate = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true }).compile(readYaml(path.join(CHART_DIR, 'values.schema.json')) as Obj);
  const errors = (values: Obj): string[] => (validate(mergeValues(defaultValues(), values)) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`));

  it('accepts the fleet values, the operator\'s ConfigMap, a hub Secret and the export controller\'s own plugins', () => {
    expect(errors(FLEET_VALUES)).toEqual([]);
    expect(errors(withFleet({ providers: { inline: {}, configMap: { name: 'p', key: 'ocm.json' } }, hub: { kubeconfigSecret: { name: 'hub' }, qps: 5 } }))).toEqual([]);
    expect(errors(mergeValues(FLEET_VALUES, { exportController: { enabled: true, fleet: { providers: { configMap: { name: 'w' } } } } }))).toEqual([]);
  });

  it.each<[string, Obj, string]>([
    ['enabled without a namespace', { fleet: { clusterProfiles: { enabled: true } } }, '/fleet/clusterProfiles '],
    ['an API version that is not one', withFleet({ apiVersion: 'alpha' }), '/fleet/clusterProfiles/apiVersion '],
    ['a misspelt members key', withFleet({ members: { namespace: ['a'] } }), '/fleet/clusterProfiles/members '],
    ['a plugin timeout below the router\'s minimum', withFleet({ plugins: { timeoutMs: 10 } }), '/fleet/clusterProfiles/plugins/timeoutMs '],
    ['a misspelt hub key', withFleet({ hub: { kubeconfig: '/x' } }), '/fleet/clusterProfiles/hub '],
    ['a provider without execConfig', withFleet({ providers: { inline: { providers: [{ name: 'x' }] } } }), '/fleet/clusterProfiles/providers/inline/providers/0 '],
  ])('rejects %s', (_why, values, expected) => {
    expect(errors(values)).toContainEqual(expect.stringContaining(expected));
  });
});

describe('chart: fleet.clusterProfiles as rendered, through --check', () => {
  const ca = createTestCa('chart fleet CA');
  afterAll(() => ca.remove());
  let fleet: FleetEnv | undefined;
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });

  it('the routers\' config, its mounted provider file and the chart\'s hub Role give --check the profiles\' members', async () => {
    fleet = await new FleetEnv(ca).start();
    const member = await fleet.member('cluster-a');
    fleet.hub.create('clusterprofiles', fleet.profile('cluster-a'));
    // The test plugin (secretreader's behaviour) as the operator's inline provider file.
    const inline = JSON.parse(readFileSync(((await fleet.clusterProfiles()) as { providerFile: string }).providerFile, 'utf8')) as Obj;
    const r = renderChart(mergeValues(withFleet({ namespace: 'fleet-system', labelSelector: null, providers: { inline }, readSecrets: false, members: { namespaces: ['default'] } }), {
      kubernetesTuning: { initialSyncTimeoutMs: 3000, backoffInitialMs: 50, backoffMaxMs: 200 },
    }));
    const router = pod(r, 'gw-mcip-router');
    // The hub allows what the chart's Role and RoleBinding grant, and nothing else.
    const rbac = r.objects.filter((o) => (o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata.name.endsWith('-fleet'));
    const allowed = rbacAuthorizer(rbac.map((o) => stringify(o)).join('---\n'));
    const denied: RequestRecord[] = [];
    fleet.hub.authorize((token, req) => allowed(token, req) || (denied.push(req), false));

    // The pod's view: the provider file where the ConfigMap is mounted, the hub in-cluster as the router's ServiceAccount.
    const raw = parse(routerConfigText(r)) as Obj & { clusters: Obj[]; controller: Obj; fleet: { clusterProfiles: Obj & { providerFile: string; hub: Obj } } };
    const cp = raw.fleet.clusterProfiles;
    expect(cp.hub).toEqual({ inCluster: true });
    const { volume, key } = mountedFile(router, 'router', cp.providerFile);
    const providerFile = path.join(fleet.dir, 'pod', cp.providerFile);
    mkdirSync(path.dirname(providerFile), { recursive: true });
    writeFileSync(providerFile, (find(r, 'ConfigMap', volume.configMap!.name) as K8sObject & { data: Record<string, string> }).data[key]!);
    cp.providerFile = providerFile;
    cp.hub = { kubeconfig: await writeKubeconfig(fleet.dir, { server: fleet.hub.url, token: `system:serviceaccount:mcip-system:${router.serviceAccountName}` }, 'in-cluster') };
    // The local cluster from files, so that only the hub and the member are API servers here.
    const local = path.join(fleet.dir, 'local');
    mkdirSync(local);
    raw.clusters = [{ name: raw.clusterName, manifests: { paths: [local] } }];
    raw.controller = { enabled: false };

    const result = await runCheck(parseConfigText(stringify(raw), 'router.yaml', '/etc/mcip-router'), silent);
    expect(result.code).not.toBe(CHECK_LOAD_ERRORS);
    expect(result.output).toContain(`cluster-a (ClusterProfile fleet-system/cluster-a, provider secretreader, ${member.url}): serving`);
    expect(result.output).toMatch(/cluster-a \(1 objects/);
    // The members block reached the member: FLEET_VALUES' unverified EPP TLS is warned about for it.
    expect(result.output).toContain('warning: cluster cluster-a: clusters[1].epp.tls.insecureSkipVerify');
    expect(denied).toEqual([]);
  }, 30_000);
});
