/**
 * docs/fleet.md: every YAML and JSON block parses; the `fleet` blocks, appended to the router
 * config the chart renders as the guide's commands do, load as the router loads its config;
 * the provider files load as the router loads them; and the names the guide's commands and
 * manifests use are the ones the chart renders (Deployment, ServiceAccount, router ConfigMap,
 * the router's config volume and path) and the router prints (the static-member warning).
 * The upstream facts the guide states are pinned where they can be checked here: the provider
 * files against profiles shaped as Open Cluster Management (cluster-proxy) and KubeFleet write
 * them, the request the reference plugins accept, OCM's binding rule, and the Helm values.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadProviderFile, planPluginCall, type ProviderFile } from '../../src/credentials/provider-file.js';
import { decodeClusterProfile, planMembers } from '../../src/sources/fleet/cluster-profile.js';
import { find, renderChart, REPO, type K8sObject } from '../charts/render-chart.js';
import { loadRouterConfigText, routerConfigText } from '../charts/router-config.js';
import { clusterProfile, HEALTHY } from '../sources/fleet/profile-fixtures.js';

const GUIDE = 'docs/fleet.md';
const text = readFileSync(path.join(REPO, GUIDE), 'utf8');
const blocks = (lang: string): string[] => [...text.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
const yamlDocs = (block: string): unknown[] => parseAllDocuments(block).map((d) => {
  if (d.errors.length > 0) throw new Error(`${GUIDE}: invalid YAML: ${d.errors[0]!.message}\n${block}`);
  return d.toJS() as unknown;
});
const fleetBlocks = blocks('yaml').filter((b) => b.startsWith('fleet:'));
const manifests = blocks('yaml').filter((b) => !b.startsWith('fleet:')).flatMap(yamlDocs) as K8sObject[];
/** The shell blocks with their continuation lines joined. */
const commands = blocks('sh').flatMap((b) => b.replace(/\\\n\s*/g, ' ').split('\n'));
/** The --set / --set-string values of the `helm upgrade --install RELEASE CHART` command, as dotted keys. */
const helmSets = (chart: string): Record<string, string> => {
  const line = commands.find((c) => c.startsWith('helm upgrade --install') && c.split(' ')[4] === chart);
  if (!line) throw new Error(`${GUIDE}: no helm upgrade --install of ${chart}`);
  return Object.fromEntries([...line.matchAll(/--set(?:-string)? '?([^=\s']+)=([^\s']*)'?/g)].map((m) => [m[1]!, m[2]!]));
};

/** The chart as docs/two-clusters.md installs it: release mcip in mcip-system. */
const release = renderChart({}, { name: 'mcip', namespace: 'mcip-system' });

const tmp = mkdtempSync(path.join(tmpdir(), 'mcip-fleet-doc-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
/** The guide's provider files (OCM, KubeFleet), loaded as the router loads them. */
const providerFiles = (): ProviderFile[] =>
  blocks('json').map((b, i) => {
    const file = path.join(tmp, `providers-${i}.json`);
    writeFileSync(file, b);
    return loadProviderFile(file);
  });
/** The application ID of the AKS Microsoft Entra server (Azure/kubelogin docs/book/src/concepts/aks.md). */
const AKS_ENTRA_SERVER_ID = '6dae42f8-4368-4678-94ff-3960e28e3630';

describe(GUIDE, () => {
  it('every YAML block parses, and every manifest names its kind and object', () => {
    expect(blocks('yaml')).toHaveLength(6);
    expect(fleetBlocks).toHaveLength(2);
    for (const m of manifests) {
      expect(typeof m.apiVersion, JSON.stringify(m)).toBe('string');
      expect(typeof m.kind, JSON.stringify(m)).toBe('string');
      expect(m.metadata.name, JSON.stringify(m)).toMatch(/^[a-z0-9.-]+$/);
    }
    expect(manifests.map((m) => m.kind)).toEqual(
      expect.arrayContaining(['ManagedClusterSet', 'ManagedClusterSetBinding', 'ManagedServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']),
    );
  });

  it('each fleet block, appended to the router config the chart renders, loads as the router config', () => {
    for (const block of fleetBlocks) {
      const config = loadRouterConfigText(`${routerConfigText(release)}\n${block}`);
      const cp = config.fleet.clusterProfiles!;
      expect(cp.providerFile).toBe('/etc/mcip-fleet/providers.json');
      expect(cp.members.namespaces).toEqual(['inference']);
      // The chart's own members are still there: the block adds to the config, it replaces nothing.
      expect(config.clusters.map((c) => c.name)).toEqual(['local']);
    }
    const [ocm, kubefleet] = fleetBlocks.map((b) => loadRouterConfigText(`${routerConfigText(release)}\n${b}`).fleet.clusterProfiles!);
    expect([ocm!.namespace, ocm!.labelSelector, ocm!.hub.inCluster]).toEqual(['mcip-system', 'x-k8s.io/cluster-manager=open-cluster-management', true]);
    expect([kubefleet!.namespace, kubefleet!.labelSelector, kubefleet!.hub.kubeconfig]).toEqual(['fleet-system', 'x-k8s.io/cluster-manager=KubeFleet', '/etc/mcip-fleet-hub/kubeconfig']);
    expect(kubefleet!.plugins.inheritEnv).toEqual(expect.arrayContaining(['AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_FEDERATED_TOKEN_FILE', 'AZURE_AUTHORITY_HOST']));
  });

  it('sets the router up through the chart (section 6), never by patching what the chart renders', () => {
    // helm upgrade would put a patched Deployment or ConfigMap back: the guide renders fleet with the chart's values.
    expect(text).not.toMatch(/kubectl[^\n]* patch deployment/);
    expect(text.match(/section 6/g)?.length).toBeGreaterThanOrEqual(2);
    expect(text).toMatch(/^## 6\. With the Helm chart$/m);
  });

  it('the provider files load as the router loads them, and the OCM one serves the profiles OCM publishes', () => {
    const files = providerFiles();
    expect(files.map((f) => f.providers.map((p) => p.name))).toEqual([['open-cluster-management'], ['KubeFleet']]);
    const ocm = files[0]!.providers[0]!;
    expect([ocm.execConfig.command, ocm.execConfig.args, ocm.execConfig.provideClusterInfo]).toEqual(['/usr/local/bin/cp-creds', ['--managed-serviceaccount=mcip-router'], true]);
    // The managed service account the provider names is the one the guide creates.
    expect(manifests.find((m) => m.kind === 'ManagedServiceAccount')!.metadata.name).toBe('mcip-router');
  });

  it('runs cp-creds for a profile as cluster-proxy writes it, with the request cp-creds accepts', () => {
    // cluster-proxy writes server https://cluster-proxy-addon-user.<namespace it runs in>:9092/<profile name>
    // and the clusterName in the client.authentication.k8s.io/exec extension; the guide quotes that
    // server, for the namespace its helm command installs cluster-proxy into.
    const userServer = /`(https:\/\/cluster-proxy-addon-user\.([a-z-]+):9092)\/<cluster>`/.exec(text)!;
    const proxyInstall = commands.find((c) => c.startsWith('helm upgrade --install cluster-proxy '))!;
    expect(/ -n (\S+) /.exec(proxyInstall)![1]).toBe(userServer[2]);
    const profiles = ['cluster1', 'cluster2'].map((c) =>
      decodeClusterProfile(clusterProfile(c, { namespace: 'mcip-system', provider: 'open-cluster-management', server: `${userServer[1]}/${c}` }) as Record<string, unknown>),
    );
    // One user server for every member: its per-cluster paths are distinct API servers, not a double claim.
    expect([...planMembers(profiles, new Set()).members.keys()]).toEqual(['cluster1', 'cluster2']);
    const p = profiles[0]!;
    if (!p.ok) throw new Error(p.message);
    const plan = planPluginCall(providerFiles()[0]!, p.profile.ref, p.profile.accessProviders);
    if (!plan.ok) throw new Error(plan.message);
    // cp-creds (cluster-inventory-api's credentialplugin) reads only a v1 request with spec.cluster.server and config.clusterName.
    const request = JSON.parse(plan.call.execInfo) as { apiVersion: string; kind: string; spec: { cluster: { server: string; config: { clusterName: string } } } };
    expect([request.apiVersion, request.kind, request.spec.cluster.server, request.spec.cluster.config.clusterName]).toEqual(['client.authentication.k8s.io/v1', 'ExecCredential', `${userServer[1]}/cluster1`, 'cluster1']);
    // It then reads the Secret <clusterName>-<managed service account>: the name the guide gives.
    const msa = plan.call.args.find((a) => a.startsWith('--managed-serviceaccount='))!.split('=')[1];
    expect(text).toContain(`\`cluster1-${msa}\``);
  });

  it('runs kubelogin for a KubeFleet profile with a server, and leaves out one without, naming it', () => {
    // As KubeFleet's hub agent writes a profile: one access provider named after the cluster manager, no exec extension.
    const kubefleet = (server?: string) => ({
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name: 'member-1', namespace: 'fleet-system', labels: { 'x-k8s.io/cluster-manager': 'KubeFleet' } },
      spec: { displayName: 'member-1', clusterManager: { name: 'KubeFleet' } },
      status: { conditions: [HEALTHY], accessProviders: [{ name: 'KubeFleet', cluster: { ...(server ? { server } : {}), 'certificate-authority-data': 'Q0E=' } }] },
    });
    const file = providerFiles()[1]!;
    const served = decodeClusterProfile(kubefleet('https://member-1.hcp.example:443'));
    if (!served.ok) throw new Error(served.message);
    const plan = planPluginCall(file, served.profile.ref, served.profile.accessProviders);
    if (!plan.ok) throw new Error(plan.message);
    expect(plan.call.args).toEqual(['get-token', '--login', 'workloadidentity', '--server-id', AKS_ENTRA_SERVER_ID]);
    expect(JSON.parse(plan.call.execInfo)).toEqual({ kind: 'ExecCredential', apiVersion: 'client.authentication.k8s.io/v1beta1', spec: { interactive: false } });
    const serverless = decodeClusterProfile(kubefleet());
    if (!serverless.ok) throw new Error(serverless.message);
    expect(serverless.profile.problems).toEqual(['status.accessProviders[0]: access provider KubeFleet: cluster.server is not an http(s) URL']);
    const none = planPluginCall(file, serverless.profile.ref, serverless.profile.accessProviders);
    expect(none.ok ? '' : none.message).toContain('ClusterProfile fleet-system/member-1: none of its access providers (none)');
  });

  it('follows Open Cluster Management\'s rules: the binding carries its set\'s name, in the namespace the fleet block reads', () => {
    const set = manifests.find((m) => m.kind === 'ManagedClusterSet') as K8sObject & { spec: { clusterSelector: { labelSelector: { matchLabels: Record<string, string> } } } };
    const binding = manifests.find((m) => m.kind === 'ManagedClusterSetBinding') as K8sObject & { spec: { clusterSet: string } };
    expect([binding.metadata.name, binding.spec.clusterSet]).toEqual([set.metadata.name, set.metadata.name]);
    const ocm = loadRouterConfigText(`${routerConfigText(release)}\n${fleetBlocks[0]!}`).fleet.clusterProfiles!;
    expect(binding.metadata.namespace).toBe(ocm.namespace);
    // The clusters the guide labels are the ones the set selects.
    const [key, value] = Object.entries(set.spec.clusterSelector.labelSelector.matchLabels)[0]!;
    expect(commands).toContain(`kubectl label managedcluster cluster1 cluster2 ${key}=${value}`);
    // managed-serviceaccount copies a token next to the profiles only for accounts with this label.
    expect(manifests.find((m) => m.kind === 'ManagedServiceAccount')!.metadata.labels).toEqual({ 'authentication.open-cluster-management.io/sync-to-clusterprofile': 'true' });
  });

  it('sets the Helm values the OCM addons read, and the chart values workload identity needs', () => {
    expect(helmSets('ocm/cluster-proxy')).toEqual({ 'userServer.enabled': 'true', enableServiceProxy: 'true', 'featureGates.clusterProfile': 'true' });
    expect(helmSets('ocm/managed-serviceaccount')).toEqual({ 'featureGates.clusterProfile': 'true' });
    // The router's chart renders the pod label and ServiceAccount annotation the webhook acts on.
    expect(text).toContain("--set-string 'podLabels.azure\\.workload\\.identity/use=true' --set 'serviceAccount.annotations.azure\\.workload\\.identity/client-id=<client ID>'");
    const wi = renderChart({ podLabels: { 'azure.workload.identity/use': 'true' }, serviceAccount: { annotations: { 'azure.workload.identity/client-id': 'id' } } }, { name: 'mcip', namespace: 'mcip-system' });
    const pod = (find(wi, 'Deployment', 'mcip-router') as K8sObject & { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata;
    expect(pod.labels['azure.workload.identity/use']).toBe('true');
    const sa = find(wi, 'ServiceAccount');
    expect(sa.metadata.annotations).toEqual({ 'azure.workload.identity/client-id': 'id' });
    expect(text).toContain(`\`system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}\``);
  });

  it('names what the chart renders for release mcip: Deployment, ServiceAccount, router ConfigMap, config volume and path', () => {
    const deployment = find(release, 'Deployment', 'mcip-router') as K8sObject & {
      spec: { template: { spec: { volumes: { name: string; configMap?: { name: string } }[]; containers: { name: string; args: string[]; volumeMounts: { name: string; mountPath: string }[] }[] } } };
    };
    expect(deployment.metadata.name).toBe('mcip-mcip-router');
    expect(text).toContain('exec deploy/mcip-mcip-router -c router');
    expect(text).toContain('port-forward deploy/mcip-mcip-router 9902:9902');
    expect(find(release, 'ServiceAccount').metadata.name).toBe('mcip-mcip-router');
    const binding = manifests.find((m) => m.kind === 'RoleBinding') as K8sObject & { subjects: { name: string; namespace: string }[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'mcip-mcip-router', namespace: 'mcip-system' }]);
    const configMap = find(release, 'ConfigMap', '-router');
    expect(configMap.metadata.name).toBe('mcip-mcip-router-router');
    const pod = deployment.spec.template.spec;
    const router = pod.containers.find((c) => c.name === 'router')!;
    // The patch swaps the ConfigMap of the volume "router-config"; --check reads the file the router reads.
    expect(pod.volumes.find((v) => v.name === 'router-config')!.configMap!.name).toBe('mcip-mcip-router-router');
    const mount = router.volumeMounts.find((v) => v.name === 'router-config')!.mountPath;
    expect(router.args).toEqual(['--config', `${mount}/router.yaml`]);
    expect(text).toContain(`--config ${mount}/router.yaml --check`);
    // The debug port the guide forwards is the chart's listen.debug.
    expect(routerConfigText(release)).toContain('debug: "127.0.0.1:9902"');
  });

  it('quotes the warning --check prints for a profile naming a static member', () => {
    const decoded = decodeClusterProfile(clusterProfile('cluster1', { namespace: 'mcip-system' }) as Record<string, unknown>);
    const plan = planMembers([decoded], new Set(['cluster1']));
    expect(plan.refused).toHaveLength(1);
    expect(text).toContain(`warning: ${plan.refused[0]!.message}`);
  });

  it('links the push/pull set-up by its section in docs/kubernetes.md and is linked from the README', () => {
    expect(text).toContain('](kubernetes.md#pushpull-topology)');
    expect(text).toContain('](kubernetes.md#members-from-clusterprofiles)');
    expect(readFileSync(path.join(REPO, 'docs/kubernetes.md'), 'utf8')).toMatch(/^## Members from ClusterProfiles$/m);
    expect(readFileSync(path.join(REPO, 'README.md'), 'utf8')).toContain('](docs/fleet.md)');
  });
});
