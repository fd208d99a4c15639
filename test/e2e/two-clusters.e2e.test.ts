/**
 * docs/two-clusters.md end to end: the manifests in examples/two-clusters/ applied to two
 * API-server stand-ins, the router config rendered by the chart from the guide's Helm values,
 * then the export controller (as `--export-controller` runs it) and the router on that config.
 * cluster-b exports llm-pool; the export controller creates the InferencePoolImport in both
 * members, the router in cluster-a routes 50/50 between its own pool and the import. No
 * status is written by hand anywhere.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { serveExportController, type ExportServer } from '../../src/controller/export-serve.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { exposedSeries, parseQuery, registeredSeries, shippedQueries } from '../charts/promql-queries.js';
import { find, readYaml, renderChart, REPO, type K8sObject, type Obj } from '../charts/render-chart.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import { withTestTransport } from '../harness/extproc-transport.js';
import { KubeApiServer, RESOURCES, writeKubeconfig } from '../harness/kube-apiserver.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { completionBody, startEpps, stopAll } from './clusterset.js';

const EXAMPLE = join(REPO, 'examples/two-clusters');
const A = '10.1.0.1:8000';
const B = '10.2.0.1:8000';
const EXPORTER = 'mcip-router.dev/export-controller';

let servers: Record<'cluster-a' | 'cluster-b', KubeApiServer>;
let epps: Record<string, SimulatedEpp>;
let exporter: ExportServer;
let router: RouterHandle;
let envoy: EnvoyStandin;
let rendered: ReturnType<typeof renderChart>;

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
const controllers = (m: 'cluster-a' | 'cluster-b') => (statusOf(servers[m], 'inferencepoolimports', 'llm-pool')?.controllers ?? []) as { name: string; exportingClusters?: { name: string }[]; parents?: { conditions: { type: string; status: string }[] }[] }[];

beforeAll(async () => {
  epps = await startEpps({ a: A, b: B });
  servers = { 'cluster-a': new KubeApiServer(), 'cluster-b': new KubeApiServer() };
  await servers['cluster-a'].start();
  await servers['cluster-b'].start();
  apply(servers['cluster-a'], manifests(join(EXAMPLE, 'cluster-a')));
  apply(servers['cluster-b'], manifests(join(EXAMPLE, 'cluster-b')));

  // The router config exactly as the chart renders it from the guide's values ...
  rendered = renderChart(readYaml(join(EXAMPLE, 'helm/cluster-a-values.yaml')) as Obj, { name: 'mcip', namespace: 'mcip-system' });
  const cm = find(rendered, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
  const cfg = parse(cm.data['router.yaml']!) as Obj & { clusters: Obj[] };
  // ... with the pod's environment replaced by the stand-ins: API servers, loopback listeners,
  // plain-text simulated EPPs at their loopback addresses (a LoadBalancer has no address here).
  const dir = await mkdtemp(join(tmpdir(), 'mcip-two-clusters-'));
  const kubeconfigs = [await writeKubeconfig(dir, { server: servers['cluster-a'].url }, 'a'), await writeKubeconfig(dir, { server: servers['cluster-b'].url }, 'b')];
  const eppAddresses = [epps.a!.address, epps.b!.address];
  cfg.clusters.forEach((c, i) => {
    const k = c.kubernetes as Obj;
    delete k.inCluster;
    k.kubeconfig = kubeconfigs[i];
    c.epp = { ...(c.epp as Obj), tls: { enabled: false }, metrics: { enabled: false } };
    c.addressOverrides = { services: [{ namespace: 'inference', name: 'llm-pool-epp', address: eppAddresses[i] }] };
  });
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

  it('kubeconfig-secrets.sh builds each Secret the Helm values name from a token Secret the cluster-b RBAC creates', () => {
    const script = readFileSync(join(EXAMPLE, 'kubeconfig-secrets.sh'), 'utf8');
    const calls = [...script.matchAll(/^make_secret (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!] as const);
    const tokens = ['deploy/rbac/remote.yaml', 'deploy/rbac/export-member.yaml'].flatMap((f) =>
      parseAllDocuments(readFileSync(join(REPO, f), 'utf8'))
        .map((d) => d.toJSON() as K8sObject & { type?: string })
        .filter((o) => o.kind === 'Secret' && o.type === 'kubernetes.io/service-account-token' && o.metadata.namespace === 'mcip-system')
        .map((o) => o.metadata.name),
    );
    const values = readYaml(join(EXAMPLE, 'helm/cluster-a-values.yaml')) as { remoteClusters: { kubeconfigSecret: Obj; exportKubeconfigSecret: Obj }[] };
    const named = values.remoteClusters.flatMap((c) => [c.kubeconfigSecret, c.exportKubeconfigSecret]);
    expect(named.every((ref) => ref.key === 'kubeconfig')).toBe(true);
    expect(script).toContain('--from-file=kubeconfig=');
    expect(calls.map(([, secret]) => secret).sort()).toEqual(named.map((ref) => String(ref.name)).sort());
    for (const [token] of calls) expect(tokens, token).toContain(token);
  });

  it('install.sh and the guide name only files that exist, and every applied file is Kubernetes YAML', () => {
    const script = readFileSync(join(EXAMPLE, 'install.sh'), 'utf8');
    const guide = readFileSync(join(REPO, 'docs/two-clusters.md'), 'utf8');
    const named = guide.replace(/port-forward \S+/g, '');
    const paths = [...new Set([...`${script}\n${named}`.matchAll(/(?:^|[\s(`])((?:deploy|examples|charts)\/[\w./-]+)/gm)].map((m) => m[1]!.replace(/[.)`]+$/, '')))];
    expect(paths.length).toBeGreaterThan(8);
    for (const p of paths) expect(existsSync(join(REPO, p)), p).toBe(true);
    for (const m of script.matchAll(/apply -f (\S+\.yaml)/g)) {
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
    // Metrics with no sample yet (no failover happened here) still have their labels in the router's registry.
    registeredSeries(router.metrics.registry.getMetricsAsArray(), exposed);
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

