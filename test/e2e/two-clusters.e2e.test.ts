/**
 * docs/two-clusters.md end to end: the manifests in examples/two-clusters/ applied to two
 * API-server stand-ins, the router config rendered by the chart from the guide's Helm values
 * and the image install.sh sets, then the export controller (as `--export-controller` runs it)
 * and the router on that config, against EPPs that behave as the guide's stock EPPs do: TLS
 * with a certificate each generates at start, metrics that answer only the token the guide's
 * credential Secret holds. cluster-b exports llm-pool; the export controller creates the
 * InferencePoolImport in both members, the router in cluster-a routes 50/50 between its own
 * pool and the import, with a load signal for both. No status is written by hand anywhere:
 * the router in cluster-a also writes the Gateway API status of step 7 (the chart's
 * GatewayClass, the guide's Gateway at the chart Service's address, llm-route's entry), and a
 * route with a misspelt backend gets the reason the guide's troubleshooting table names.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, parseConfigText } from '../../src/config/load.js';
import { serveExportController, type ExportServer } from '../../src/controller/export-serve.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { exposedSeries, parseQuery, registeredSeries, shippedQueries } from '../charts/promql-queries.js';
import { find, mergeValues, readYaml, renderChart, REPO, type K8sObject, type Obj } from '../charts/render-chart.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import { withTestTransport } from '../harness/extproc-transport.js';
import { KubeApiServer, RESOURCES, writeKubeconfig } from '../harness/kube-apiserver.js';
import { startSimulatedEpp, type SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { selfSignedLeaf } from '../helpers/pki.js';
import { completionBody, stopAll } from './clusterset.js';

const EXAMPLE = join(REPO, 'examples/two-clusters');
const A = '10.1.0.1:8000';
const B = '10.2.0.1:8000';
const EXPORTER = 'mcip-router.dev/export-controller';
const GATEWAY_CONTROLLER = 'mcip-router.dev/gateway-controller';
/** The cluster IP the API server assigns the chart's Service (the stand-in assigns none itself). */
const ENVOY_CLUSTER_IP = '10.96.0.80';
/** What the operator exports before install.sh (step 1). */
const IMAGE = 'registry.example.com/team/mcip-router';
/** The metrics-only token of each member's mcip-metrics-reader: its EPP accepts no other. */
const METRICS_TOKENS = { 'cluster-a': 'metrics-reader-token-of-cluster-a', 'cluster-b': 'metrics-reader-token-of-cluster-b' } as const;
const installScript = readFileSync(join(EXAMPLE, 'install.sh'), 'utf8');
const guideValues = (): Obj => readYaml(join(EXAMPLE, 'helm/cluster-a-values.yaml')) as Obj;

/** The GIE release whose CRDs install.sh installs (step 2). */
const GIE_RELEASE = /gateway-api-inference-extension\/config\/crd\?ref=v(\d+)\.(\d+)\.\d+/.exec(installScript)!;

/**
 * What GIE's InferencePool CRD of that release keeps of a status.parents[] entry: the API
 * server prunes the rest. `controllerName` is in the schema from v1.1.0 on (upstream CRDs).
 */
function prunePoolStatus(status: unknown): unknown {
  const [major, minor] = [Number(GIE_RELEASE[1]), Number(GIE_RELEASE[2])];
  const fields = major > 1 || (major === 1 && minor >= 1) ? ['parentRef', 'controllerName', 'conditions'] : ['parentRef', 'conditions'];
  const s = status as { parents?: Obj[] } & Obj;
  if (!Array.isArray(s.parents)) return s;
  return { ...s, parents: s.parents.map((p) => Object.fromEntries(Object.entries(p).filter(([k]) => fields.includes(k)))) };
}

/** The helm commands of install.sh, continuation lines joined. */
const helmCommands = (): string[] => installScript.replace(/\\\n\s*/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('helm upgrade --install mcip charts/mcip-router '));

/** The `--set k.k2="$VAR"` settings of install.sh's helm command with these values files, with its variables filled in. */
function helmSets(env: Record<string, string>, files = ['examples/two-clusters/helm/cluster-a-values.yaml']): Obj {
  const command = helmCommands().find((c) => [...c.matchAll(/-f (\S+)/g)].map((m) => m[1]).join(' ') === files.join(' '));
  if (!command) throw new Error(`install.sh has no helm command with -f ${files.join(' -f ')}`);
  const out: Obj = {};
  for (const m of command.matchAll(/--set (\w+)\.(\w+)="\$(\w+)"/g)) out[m[1]!] = { ...(out[m[1]!] as Obj), [m[2]!]: env[m[3]!] };
  return out;
}

let servers: Record<'cluster-a' | 'cluster-b', KubeApiServer>;
let epps: Record<string, SimulatedEpp>;
let exporter: ExportServer;
let router: RouterHandle;
let envoy: EnvoyStandin;
let rendered: ReturnType<typeof renderChart>;
/** The bearerTokenFile of each member as the chart rendered it (the mounted Secret). */
const mountedTokenFiles: string[] = [];

function manifests(dir: string): K8sObject[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJSON() as K8sObject));
}

function apply(server: KubeApiServer, objects: readonly K8sObject[]): void {
  for (const o of objects) {
    const def = RESOURCES.find((r) => r.kind === o.kind);
    if (!def) throw new Error(`no resource for ${String(o.kind)}`);
    expect(o.status, `${String(o.kind)} ${o.metadata.name} carries no hand-written status`).toBeUndefined();
    server.create(def.plural, o);
  }
}

const statusOf = (server: KubeApiServer, plural: string, name: string) => server.get(plural, 'inference', name)?.status as Obj | undefined;
type Condition = { type: string; status: string; reason: string; message: string };
type GatewayApiStatus = {
  conditions?: Condition[];
  addresses?: { type: string; value: string }[];
  listeners?: { name: string; attachedRoutes: number; conditions: Condition[] }[];
  parents?: { parentRef: Obj; controllerName: string; conditions: Condition[] }[];
};
/** As `kubectl --context cluster-a get <kind> <name> -o yaml` shows it (namespace '' for the cluster-scoped GatewayClass). */
const gatewayApiStatus = (plural: string, name: string, ns = 'inference') => (servers['cluster-a'].get(plural, ns, name)?.status ?? {}) as GatewayApiStatus;
const brief = (cs: readonly Condition[] | undefined) => (cs ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
const routeEntry = (name: string) => gatewayApiStatus('httproutes', name).parents?.find((p) => p.controllerName === GATEWAY_CONTROLLER);
const controllers = (m: 'cluster-a' | 'cluster-b') => (statusOf(servers[m], 'inferencepoolimports', 'llm-pool')?.controllers ?? []) as { name: string; exportingClusters?: { name: string }[]; parents?: { conditions: { type: string; status: string }[] }[] }[];

let removeCerts: () => void;

beforeAll(async () => {
  // Each EPP makes its own certificate at start, as a stock EPP does: no CA to trust.
  const certs = { a: selfSignedLeaf('Inference Ext a'), b: selfSignedLeaf('Inference Ext b') };
  removeCerts = () => Object.values(certs).forEach((c) => c.remove());
  epps = {};
  for (const [m, endpoint, member] of [['a', A, 'cluster-a'], ['b', B, 'cluster-b']] as const) {
    epps[m] = await startSimulatedEpp({ endpoints: [endpoint], tls: certs[m], stock: { pool: 'llm-pool', metricsTokens: [METRICS_TOKENS[member]] } });
  }
  servers = { 'cluster-a': new KubeApiServer(), 'cluster-b': new KubeApiServer() };
  for (const s of Object.values(servers)) s.pruneStatus('inferencepools', prunePoolStatus);
  await servers['cluster-a'].start();
  await servers['cluster-b'].start();
  apply(servers['cluster-a'], manifests(join(EXAMPLE, 'cluster-a')));
  apply(servers['cluster-b'], manifests(join(EXAMPLE, 'cluster-b')));

  // The router config exactly as the chart renders it from the guide's values ...
  rendered = renderChart({ ...guideValues(), ...helmSets({ IMAGE }) }, { name: 'mcip', namespace: 'mcip-system' }, false);
  // What the same helm command installs in cluster-a beside the routers: the chart's GatewayClass and
  // the Service in front of Envoy (a ClusterIP, whose address the API server assigns).
  const envoyService = find(rendered, 'Service') as K8sObject & { spec: Obj };
  apply(servers['cluster-a'], [find(rendered, 'GatewayClass'), { ...envoyService, spec: { ...envoyService.spec, clusterIP: ENVOY_CLUSTER_IP } }]);
  const cm = find(rendered, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
  const cfg = parse(cm.data['router.yaml']!) as Obj & { clusters: Obj[] };
  // ... with the pod's environment replaced by the stand-ins: API servers, loopback listeners,
  // the EPPs at their loopback addresses (a LoadBalancer has no address here) with their metrics
  // on the port each one got, and the metrics token Secrets' content where the chart mounts them.
  // The EPP TLS settings stay the guide's.
  const dir = await mkdtemp(join(tmpdir(), 'mcip-two-clusters-'));
  const kubeconfigs = [await writeKubeconfig(dir, { server: servers['cluster-a'].url }, 'a'), await writeKubeconfig(dir, { server: servers['cluster-b'].url }, 'b')];
  const eppList = [epps.a!, epps.b!];
  for (const [i, c] of cfg.clusters.entries()) {
    const k = c.kubernetes as Obj;
    delete k.inCluster;
    k.kubeconfig = kubeconfigs[i];
    const metrics = (c.epp as { metrics: Obj }).metrics;
    const tokenFile = join(dir, `metrics-token-${i}`);
    await writeFile(tokenFile, METRICS_TOKENS[c.name as keyof typeof METRICS_TOKENS]);
    mountedTokenFiles.push(String(metrics.bearerTokenFile));
    metrics.bearerTokenFile = tokenFile;
    metrics.port = eppList[i]!.metricsPort;
    c.addressOverrides = { services: [{ namespace: 'inference', name: 'llm-pool-epp', address: eppList[i]!.address }] };
  }
  cfg.listen = { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' };
  cfg.kubernetes = { coalesceMs: 20, coalesceMaxMs: 200, initialSyncTimeoutMs: 3000, backoffInitialMs: 50, backoffMaxMs: 300 };
  const fast = { leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 };
  cfg.controller = { ...(cfg.controller as Obj), leaderElection: { ...((cfg.controller as Obj).leaderElection as Obj), ...fast } };
  cfg.exportController = { ...(cfg.exportController as Obj), leaderElection: { ...((cfg.exportController as Obj).leaderElection as Obj), ...fast } };
  cfg.log = { level: 'silent' };
  const file = join(dir, 'router.yaml');
  await writeFile(file, stringify(withTestTransport(cfg)));
  const config = await loadConfig(file);
  // Process metrics on: the dashboard's resource panels read them (the PromQL check below).
  exporter = await serveExportController(config, createLogger('silent'), true);
  router = await startRouter(config, { logger: createLogger('silent'), processMetrics: true });
  envoy = createEnvoyStandin(router.extProcAddress);
}, 30_000);

afterAll(async () => {
  envoy?.close();
  await router?.shutdown();
  await exporter?.shutdown();
  await Promise.all(Object.values(servers ?? {}).map((s) => s.close()));
  await stopAll(epps ?? {});
  removeCerts?.();
});

describe('docs/two-clusters.md, end to end', () => {
  it('the export controller creates the import in both members; the pool reports Exported True', async () => {
    for (const m of ['cluster-a', 'cluster-b'] as const) {
      await eventually(() => expect(controllers(m).find((c) => c.name === EXPORTER)?.exportingClusters).toEqual([{ name: 'cluster-b' }]), 5000);
    }
    await eventually(() => {
      const parents = (statusOf(servers['cluster-b'], 'inferencepools', 'llm-pool')?.parents ?? []) as { parentRef: Obj; conditions: { type: string; status: string }[] }[];
      expect(parents.map((p) => [p.parentRef.kind, p.conditions[0]?.type, p.conditions[0]?.status])).toEqual([['InferencePoolImport', 'Exported', 'True']]);
    }, 5000);
    // The entry names its controller, so the export controller finds it again on its next pass: the installed
    // CRD must keep controllerName (GIE v1.0.x prunes it; then every pass appends one more entry).
    expect(((statusOf(servers['cluster-b'], 'inferencepools', 'llm-pool')?.parents ?? []) as Obj[]).map((p) => p.controllerName)).toEqual([EXPORTER]);
  });

  it('the router in cluster-a routes 50/50 between its own pool and the import; the import controller accepts it', async () => {
    const seen = new Map<string, number>();
    await eventually(async () => {
      seen.clear();
      for (let i = 0; i < 60; i++) {
        const r = await envoy.run({ authority: 'llm.example', path: '/v1/completions', body: [completionBody()] });
        expect(r.outcome, r.reason).toBe('forwarded');
        seen.set(r.destination!, (seen.get(r.destination!) ?? 0) + 1);
      }
      expect([...seen.keys()].sort()).toEqual([A, B]);
    }, 5000);
    expect(seen.get(A)! / 60).toBeGreaterThan(0.2);
    await eventually(() => {
      const ours = controllers('cluster-a').find((c) => c.name === 'mcip-router.dev/import-controller');
      expect(ours?.parents?.[0]?.conditions.find((c) => c.type === 'Accepted')?.status).toBe('True');
    }, 5000);
    const pick = await fetch(`http://${router.adminAddress}/debug/pick?host=llm.example&path=/v1/completions`);
    expect(pick.status).toBe(200);
    expect(await pick.text()).toContain('cluster-b');
  });

  it('step 7: the chart\'s GatewayClass is Accepted; the guide\'s Gateway is Programmed at the chart Service\'s address with llm-route attached', async () => {
    await eventually(() => expect(brief(gatewayApiStatus('gatewayclasses', 'mcip-envoy', '').conditions)).toEqual(['Accepted=True/Accepted']), 10_000);
    const gw = await eventually(() => {
      const s = gatewayApiStatus('gateways', 'inference-gateway');
      expect(s.listeners?.map((l) => [l.name, l.attachedRoutes])).toEqual([['http', 1]]);
      return s;
    }, 10_000);
    expect(brief(gw.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=True/Programmed']);
    expect(gw.addresses).toEqual([{ type: 'IPAddress', value: ENVOY_CLUSTER_IP }]);
    expect(brief(gw.listeners![0]!.conditions)).toEqual(['Accepted=True/Accepted', 'Conflicted=False/NoConflicts', 'Programmed=True/Programmed', 'ResolvedRefs=True/ResolvedRefs']);
  });

  it('step 7: llm-route carries the router\'s status.parents entry, Accepted and ResolvedRefs True once the import exists', async () => {
    await eventually(() => expect(brief(routeEntry('llm-route')?.conditions)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs']), 10_000);
    expect(routeEntry('llm-route')?.parentRef).toEqual({ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'inference', name: 'inference-gateway' });
    expect(gatewayApiStatus('httproutes', 'llm-route').parents?.map((p) => p.controllerName)).toEqual([GATEWAY_CONTROLLER]);
    // The lines the guide's jsonpath prints ({.type}={.status} {.reason}: {.message}) are the ones step 7 shows.
    const guide = readFileSync(join(REPO, 'docs/two-clusters.md'), 'utf8');
    const shown = /```\n(Accepted=[\s\S]*?)```/.exec(guide)?.[1];
    expect(routeEntry('llm-route')?.conditions.map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}\n`).join('')).toBe(shown);
  });

  it('troubleshooting: a route whose backendRef names no pool is Accepted with ResolvedRefs False, BackendNotFound, naming the backend', async () => {
    const route = parseAllDocuments(readFileSync(join(EXAMPLE, 'cluster-a/httproute.yaml'), 'utf8'))[0]!.toJSON() as K8sObject & { spec: { rules: { backendRefs: Obj[] }[] } & Obj };
    const [local] = route.spec.rules[0]!.backendRefs;
    servers['cluster-a'].create('httproutes', {
      ...route,
      metadata: { name: 'llm-route-typo', namespace: 'inference' },
      spec: { ...route.spec, hostnames: ['typo.example'], rules: [{ ...route.spec.rules[0], backendRefs: [{ ...local, name: 'llm-pol' }] }] },
    });
    await eventually(() => expect(brief(routeEntry('llm-route-typo')?.conditions)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=False/BackendNotFound']), 10_000);
    expect(routeEntry('llm-route-typo')?.conditions[1]?.message).toContain('llm-pol');
    await eventually(() => expect(gatewayApiStatus('gateways', 'inference-gateway').listeners?.[0]?.attachedRoutes).toBe(2), 10_000);
  });

  it('/debug/exports and the mcip_export_* metrics of the export controller show what was done', async () => {
    const debug = (await (await fetch(`http://${exporter.adminAddress}/debug/exports`)).json()) as {
      leader: boolean;
      pools: Record<string, { exporters: string[]; members: Record<string, { import?: { outcome: string } }> }>;
    };
    expect(debug.leader).toBe(true);
    expect(debug.pools['inference/llm-pool']?.exporters).toEqual(['cluster-b']);
    expect(Object.keys(debug.pools['inference/llm-pool']?.members ?? {}).sort()).toEqual(['cluster-a', 'cluster-b']);
    const metrics = await (await fetch(`http://${exporter.adminAddress}/metrics`)).text();
    expect(metrics).toMatch(/^mcip_export_leader 1$/m);
    expect(metrics).toMatch(/^mcip_export_actions_total\{member="cluster-a",action="create",outcome="written"\} 1$/m);
    expect(metrics).toMatch(/^mcip_export_exported_pools 1$/m);
    expect(metrics).toMatch(/^mcip_export_member_reachable\{member="cluster-b"\} 1$/m);
  });

  it('the guide\'s chart values run the export controller as its own Deployment with write credentials for cluster-b', () => {
    const d = find(rendered, 'Deployment', '-export-controller') as K8sObject & { spec: { template: { spec: { containers: { args: string[] }[]; volumes: { secret?: { secretName: string } }[] } } } };
    expect(d.spec.template.spec.containers[0]?.args[0]).toBe('--export-controller');
    expect(d.spec.template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : []))).toEqual(['cluster-b-export']);
  });

  it('step 1: the guide\'s values alone do not render; install.sh\'s --set image.repository="$IMAGE" runs that image in both Deployments', () => {
    expect(() => renderChart(guideValues(), { name: 'mcip', namespace: 'mcip-system' }, false)).toThrow(/image\.repository is not set/);
    const appVersion = (readYaml(join(REPO, 'charts/mcip-router/Chart.yaml')) as { appVersion: string }).appVersion;
    const images = rendered.objects
      .filter((o) => o.kind === 'Deployment')
      .flatMap((d) => (d as unknown as { spec: { template: { spec: { containers: { name: string; image: string }[] } } } }).spec.template.spec.containers)
      .filter((c) => c.name !== 'envoy')
      .map((c) => c.image);
    expect(images).toEqual([`${IMAGE}:${appVersion}`, `${IMAGE}:${appVersion}`]);
    expect(installScript).toMatch(/^IMAGE=\$\{IMAGE:\?set IMAGE to the mcip-router image/m);
  });

  it('step 6: the EPPs\' self-generated certificates are accepted as the values say (insecureSkipVerify), and warned', async () => {
    // The routing test above went through both EPPs over TLS; here: what the router says about it.
    const signals = (await (await fetch(`http://${router.adminAddress}/debug/signals`)).json()) as { warnings: { field?: string; message: string }[] };
    expect(signals.warnings.map((w) => w.field).sort()).toEqual([
      'clusters[0].epp.metrics.allowTokenOverPlainHttp',
      'clusters[0].epp.tls.insecureSkipVerify',
      'clusters[1].epp.metrics.allowTokenOverPlainHttp',
      'clusters[1].epp.tls.insecureSkipVerify',
    ]);
    expect(epps.a!.counters.streamsOpened + epps.b!.counters.streamsOpened).toBeGreaterThan(0);
  });

  it('step 6: both pools have a load signal: each EPP\'s token-protected metrics answer the token of its own cluster\'s Secret', async () => {
    await eventually(async () => {
      const signals = (await (await fetch(`http://${router.adminAddress}/debug/signals`)).json()) as { candidates: Record<string, { readyPods?: number }>; warnings: { message: string }[] };
      expect(signals.candidates['cluster-a/inference/llm-pool']?.readyPods).toBe(1);
      expect(signals.candidates['cluster-b/inference/llm-pool']?.readyPods).toBe(1);
      expect(signals.warnings.filter((w) => w.message.includes('no load signal'))).toEqual([]);
    }, 10_000);
    // The token files the chart rendered are the mounted Secrets the values name.
    const d = find(rendered, 'Deployment', '-mcip-router') as K8sObject & { spec: { template: { spec: { containers: { name: string; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; secret?: { secretName: string } }[] } } } };
    const pod = d.spec.template.spec;
    const routerContainer = pod.containers.find((c) => c.name === 'router')!;
    const secretAt = (file: string) => {
      const mount = routerContainer.volumeMounts.find((m) => m.mountPath === dirname(file));
      return pod.volumes.find((v) => v.name === mount?.name)?.secret?.secretName;
    };
    expect(mountedTokenFiles.map(secretAt)).toEqual(['mcip-metrics-reader-token', 'cluster-b-metrics-token']);
  });

  it('step 3: the EPP serves the pool each cluster\'s InferencePool names, on the ports its Service exposes (9002 ext_proc, 9090 metrics)', () => {
    const epp = parseAllDocuments(readFileSync(join(EXAMPLE, 'epp/epp.yaml'), 'utf8')).map((d) => d.toJSON() as K8sObject & Obj);
    const deployment = epp.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { metadata: { labels: Record<string, string> }; spec: { serviceAccountName: string; containers: { args: string[]; ports: { containerPort: number }[] }[] } } } };
    const container = deployment.spec.template.spec.containers[0]!;
    const flag = (f: string) => container.args[container.args.indexOf(f) + 1];
    expect(epp.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name)).toEqual([deployment.spec.template.spec.serviceAccountName]);
    for (const m of ['cluster-a', 'cluster-b']) {
      const objs = manifests(join(EXAMPLE, m));
      const pool = objs.find((o) => o.kind === 'InferencePool') as K8sObject & { spec: { endpointPickerRef: { name: string; port: { number: number } } } };
      const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === pool.spec.endpointPickerRef.name) as K8sObject & { spec: { selector: Record<string, string>; ports: { port: number; targetPort: number }[] } };
      expect([flag('--pool-name'), flag('--pool-namespace')], m).toEqual([pool.metadata.name, pool.metadata.namespace]);
      expect(deployment.spec.template.metadata.labels, m).toMatchObject(svc.spec.selector);
      expect(svc.spec.ports.map((p) => [p.port, p.targetPort]), m).toEqual([[9002, 9002], [9090, 9090]]);
      expect(pool.spec.endpointPickerRef.port.number).toBe(9002);
    }
    expect(container.ports.map((p) => p.containerPort)).toEqual([9002, 9003, 9090]);
    // The router scrapes the port the Service exposes: the chart leaves the default, 9090.
    const cfg = parse((find(rendered, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> }).data['router.yaml']!) as { clusters: { epp: { metrics: Obj } }[] };
    expect(cfg.clusters.map((c) => c.epp.metrics.port)).toEqual([undefined, undefined]);
    const b = manifests(join(EXAMPLE, 'cluster-b')).find((o) => o.kind === 'Service')!;
    expect((b as unknown as { spec: { type: string } }).spec.type).toBe('LoadBalancer');
    expect(Object.keys(b.metadata.annotations ?? {}).sort()).toEqual([
      'networking.gke.io/load-balancer-type',
      'service.beta.kubernetes.io/aws-load-balancer-internal',
      'service.beta.kubernetes.io/aws-load-balancer-scheme',
      'service.beta.kubernetes.io/azure-load-balancer-internal',
    ]);
  });

  it('verified EPP TLS: the CA Secrets become each member\'s caFile, serverName is the certificate\'s name, and the patch starts epp.yaml\'s EPP with it', () => {
    const verified = mergeValues(guideValues(), readYaml(join(EXAMPLE, 'helm/verified-epp-tls-values.yaml')) as Obj);
    const r = renderChart({ ...verified, ...helmSets({ IMAGE }, ['examples/two-clusters/helm/cluster-a-values.yaml', 'examples/two-clusters/helm/verified-epp-tls-values.yaml']) }, { name: 'mcip', namespace: 'mcip-system' }, false);
    const text = (find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> }).data['router.yaml']!;
    expect(() => parseConfigText(text, 'router.yaml', '/etc/mcip-router')).not.toThrow();
    const cfg = parse(text) as { clusters: { name: string; epp: { tls: Obj } }[] };
    const cert = parseAllDocuments(readFileSync(join(EXAMPLE, 'tls/epp-certificate.yaml'), 'utf8')).map((d) => d.toJSON() as K8sObject & { spec: Obj }).find((o) => o.metadata.name === 'llm-pool-epp-tls')!;
    for (const c of cfg.clusters) {
      expect(c.epp.tls, c.name).toMatchObject({ enabled: true, caFile: `/var/run/secrets/mcip-router/credentials/${c.name}/epp-tls/ca.crt` });
      expect(c.epp.tls.insecureSkipVerify ?? false).toBe(false);
      expect(cert.spec.dnsNames).toContain(c.epp.tls.serverName);
    }
    const d = find(r, 'Deployment', '-mcip-router') as K8sObject & { spec: { template: { spec: { volumes: { secret?: { secretName: string } }[] } } } };
    const secrets = d.spec.template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : []));
    expect(secrets).toEqual(expect.arrayContaining(['cluster-a-epp-ca', 'cluster-b-epp-ca']));
    // The patch keeps epp.yaml's arguments and adds --cert-path where the certificate's Secret is mounted.
    const epp = parseAllDocuments(readFileSync(join(EXAMPLE, 'epp/epp.yaml'), 'utf8')).map((x) => x.toJSON() as Obj).find((o) => o.kind === 'Deployment') as { spec: { template: { spec: { containers: { args: string[] }[] } } } };
    const patch = readYaml(join(EXAMPLE, 'tls/epp-serve-certificate.yaml')) as { spec: { template: { spec: { containers: { args: string[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; secret: { secretName: string } }[] } } } };
    const pc = patch.spec.template.spec.containers[0]!;
    expect(pc.args).toEqual([...epp.spec.template.spec.containers[0]!.args, '--cert-path', pc.volumeMounts[0]!.mountPath]);
    expect(patch.spec.template.spec.volumes.find((v) => v.name === pc.volumeMounts[0]!.name)?.secret.secretName).toBe(cert.spec.secretName);
  });

  it('install.sh and the guide name only files that exist, and every applied file is Kubernetes YAML', () => {
    const script = readFileSync(join(EXAMPLE, 'install.sh'), 'utf8');
    const guide = readFileSync(join(REPO, 'docs/two-clusters.md'), 'utf8');
    const named = guide.replace(/port-forward \S+/g, '');
    const paths = [...new Set([...`${script}\n${named}`.matchAll(/(?:^|[\s(`])((?:deploy|examples|charts)\/[\w./-]+)/gm)].map((m) => m[1]!.replace(/[.)`]+$/, '')))];
    expect(paths.length).toBeGreaterThan(8);
    for (const p of paths) expect(existsSync(join(REPO, p)), p).toBe(true);
    for (const m of script.matchAll(/apply -f (?!https:)(\S+\.yaml)/g)) {
      for (const doc of parseAllDocuments(readFileSync(join(REPO, m[1]!), 'utf8'))) {
        expect((doc.toJSON() as Obj).kind, m[1]).toEqual(expect.any(String));
      }
    }
    // Every command of the guide is a step of install.sh (contexts aside; port-forwards are interactive).
    const norm = (t: string): string => t.replace(/\\\n\s*/g, ' ').replace(/--(kube-)?context \S+/g, '').replace(/[ \t]+/g, ' ');
    const steps = norm(script);
    let commands = 0;
    for (const block of guide.matchAll(/```sh\n([\s\S]*?)```/g)) {
      for (const line of norm(block[1]!).split('\n').filter((l) => /^(kubectl|helm|sh) /.test(l) && !l.includes('port-forward'))) {
        expect(steps, line).toContain(line.split(' | ')[0]!.trim());
        commands++;
      }
    }
    expect(commands).toBeGreaterThan(10);
  });

  it('every PromQL query of the chart\'s dashboard and alerts parses and names only series and labels the router and the export controller expose', async () => {
    const text = async (addr: string) => (await fetch(`http://${addr}/metrics`)).text();
    const exposed = exposedSeries(await text(exporter.adminAddress), exposedSeries(await text(router.adminAddress)));
    // Metrics with no sample yet (no failover happened here, or this test runs alone) still have their labels in the registries.
    registeredSeries(router.metrics.registry.getMetricsAsArray(), exposed);
    registeredSeries(exporter.registry.getMetricsAsArray(), exposed);
    // Prometheus adds the scrape target's own label; the dashboard joins process metrics to the router's on it.
    const TARGET_LABELS = ['instance'];
    const queries = shippedQueries();
    expect(queries.length).toBeGreaterThan(40);
    const problems: string[] = [];
    for (const q of queries) {
      const parsed = parseQuery(q.expr);
      for (const e of parsed.errors) problems.push(`${q.where}: syntax error ${e} in ${q.expr}`);
      const known = new Set<string>(TARGET_LABELS);
      for (const m of parsed.metrics) {
        const labels = exposed.get(m);
        if (labels === undefined) problems.push(`${q.where}: ${m} is not exposed`);
        else for (const l of labels) known.add(l);
      }
      for (const l of [...parsed.labels, ...q.legendLabels]) if (!known.has(l)) problems.push(`${q.where}: label "${l}" is on none of ${parsed.metrics.join(', ')}`);
      // A matcher's label is on its own metric; an aggregation's by/without label on one of the metrics it aggregates.
      for (const s of parsed.scoped) {
        if (TARGET_LABELS.includes(s.label) || s.label === '__name__') continue;
        if (!s.metrics.some((m) => exposed.get(m)?.has(s.label))) problems.push(`${q.where}: label "${s.label}" is not on ${s.metrics.join(', ')}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('mcip_build_info and /debug/build name the running version on both processes', async () => {
    for (const addr of [router.adminAddress, exporter.adminAddress]) {
      const build = (await (await fetch(`http://${addr}/debug/build`)).json()) as { version: string; revision: string; node: string };
      expect(build.version).toBe((JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version);
      expect(build.node).toBe(process.version);
      const metrics = await (await fetch(`http://${addr}/metrics`)).text();
      expect(metrics).toContain(`mcip_build_info{version="${build.version}",revision="${build.revision}",node="${build.node}"} 1`);
    }
  });
});

