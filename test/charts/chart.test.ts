/**
 * Holds charts/mcip-router to the code: the flags, env vars, config, ports, paths and
 * files its templates use are the ones the router (src/) and Envoy bootstraps (envoy/) have.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { RouterMetrics } from '../../src/admin/metrics.js';
import { startAdminServer, type AdminServer } from '../../src/admin/server.js';
import { parseCli } from '../../src/cli/args.js';
import { parseListenAddress } from '../../src/config/listen-address.js';
import { clusterSchema, kubernetesSourceSchema, routerConfigSchema } from '../../src/config/schema.js';
import { createLogger } from '../../src/log.js';
import { CHART_DIR, find, mergeValues, readYaml, renderChart, REPO, type K8sObject, type Obj, type Rendered } from './render-chart.js';
import { envVarsReadBySrc, routerConfig } from './router-config.js';
import { ENDPOINT_PICKER_VALUES, FLEET_VALUES, REMOTE_VALUES } from './sample-values.js';

type Container = { name: string; args?: string[]; command?: string[]; env?: { name: string }[]; ports?: { name: string; containerPort: number }[] } & Obj;
type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Probe = { httpGet?: { path: string; port: string } };

const podSpec = (r: Rendered): Obj => (find(r, 'Deployment').spec as Obj & { template: { spec: Obj } }).template.spec;
const container = (r: Rendered, name: string): Container => {
  const c = (podSpec(r).containers as Container[]).find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
};
const mounts = (c: Container): Mount[] => c.volumeMounts as Mount[];
type Volume = { name: string; secret?: { items: { key: string; path: string }[] } } & Obj;
const volumes = (r: Rendered): Volume[] => podSpec(r).volumes as Volume[];
const portOf = (c: Container, name: string): number => c.ports!.find((p) => p.name === name)!.containerPort;

function envoyBootstrap(r: Rendered): Obj {
  return parse((find(r, 'ConfigMap', '-envoy') as K8sObject & { data: Record<string, string> }).data['envoy.yaml']!) as Obj;
}
/** The socket address or pipe of the Envoy cluster that carries ext_proc to the router. */
function envoyRouterAddress(bootstrap: Obj): { port?: number; pipe?: string } {
  const clusters = (bootstrap.static_resources as { clusters: Obj[] }).clusters;
  const c = clusters.find((x) => x.name === 'mcip_router') as { load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: Obj } }[] }[] } };
  const address = c.load_assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address as { socket_address?: { port_value: number }; pipe?: { path: string } };
  return address.pipe ? { pipe: address.pipe.path } : { port: address.socket_address!.port_value };
}


/** `values` with `extra` merged in (one level deep per key, as these tests need). */
function mergeValuesForTest(values: Obj, extra: Obj): Obj {
  const out: Obj = { ...values };
  for (const [k, v] of Object.entries(extra)) out[k] = { ...((values[k] as Obj | undefined) ?? {}), ...(v as Obj) };
  return out;
}

/** Values variant -> the envoy/ bootstrap the chart must embed for it. */
const VARIANTS: [string, Obj, string][] = [
  ['defaults', {}, 'envoy.yaml'],
  ['three members', REMOTE_VALUES, 'envoy.yaml'],
  ['unix socket', { router: { transport: 'unix' } }, 'envoy-unix-socket.yaml'],
  ['Parent mode', { mode: 'Parent', envoy: { remoteGatewayCASecret: 'remote-gateway-ca' } }, 'envoy-parent-tls.yaml'],
];

describe('router.extraEnv', () => {
  it('adds the operator\'s variables to the router container only, after the chart\'s own', () => {
    const extraEnv = [
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=8' },
      { name: 'MALLOC_ARENA_MAX', value: '2' },
      { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
    ];
    const r = renderChart({ router: { extraEnv } });
    expect(r.missingValues).toEqual([]);
    const env = container(r, 'router').env as Obj[];
    expect(env.map((e) => e.name)).toEqual(['POD_NAMESPACE', 'NODE_OPTIONS', 'MALLOC_ARENA_MAX', 'NODE_NAME']);
    expect(env.slice(1)).toEqual(extraEnv);
    expect((container(r, 'envoy').env as Obj[]).map((e) => e.name)).not.toContain('NODE_OPTIONS');
  });

  it('renders nothing extra by default', () => {
    expect((container(renderChart({}), 'router').env as Obj[]).map((e) => e.name)).toEqual(['POD_NAMESPACE']);
  });
});

describe.each(VARIANTS)('chart rendered with %s', (_name, values, envoyFile) => {
  const r = renderChart(values);

  it('reads no value that values.yaml lacks', () => {
    expect(r.missingValues).toEqual([]);
  });

  it('renders a router config that the router loads', () => {
    const cfg = routerConfig(r);
    expect(cfg.clusterName).toBe(values.clusterName ?? 'local');
    expect(cfg.clusters[0]!.kubernetes?.inCluster).toBe(true);
    expect(cfg.controller.name).toMatch(/\//);
  });

  it('starts the router with flags its CLI accepts, pointing at the mounted config', () => {
    const router = container(r, 'router');
    expect(router.command).toBeUndefined(); // the image's ENTRYPOINT: node dist/src/main.js
    const cmd = parseCli(router.args!, {});
    expect(cmd).toMatchObject({ type: 'run' });
    const file = (cmd as { configFile: string }).configFile;
    const mount = mounts(router).find((m) => file.startsWith(`${m.mountPath}/`))!;
    expect(mount.name).toBe('router-config');
    const cm = find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
    expect(Object.keys(cm.data)).toEqual([path.basename(file)]);
  });

  it('sets only env vars the router reads', () => {
    const read = envVarsReadBySrc();
    for (const e of container(r, 'router').env ?? []) expect(read, `router env ${e.name}`).toContain(e.name);
  });

  it('probes the router admin server where the router config puts it, on all pod addresses; /debug/* on loopback only', () => {
    const router = container(r, 'router');
    const cfg = routerConfig(r);
    const admin = parseListenAddress(cfg.listen.admin);
    expect(admin).toMatchObject({ type: 'tcp', host: '0.0.0.0' }); // kubelet and Prometheus come from outside the pod
    expect(parseListenAddress(cfg.listen.debug!)).toMatchObject({ type: 'tcp', host: '127.0.0.1' });
    expect(cfg.admin.exposeDebug).toBe(false);
    expect(router.ports!.map((p) => p.name)).toEqual(['admin']); // the debug port is not a container port
    expect(portOf(router, 'admin')).toBe((admin as { port: number }).port);
    const probes = ['startupProbe', 'livenessProbe', 'readinessProbe'].map((k) => router[k] as Probe);
    expect(probes.map((p) => [p.httpGet?.path, p.httpGet?.port])).toEqual([['/healthz', 'admin'], ['/healthz', 'admin'], ['/readyz', 'admin']]);
  });

  it("points Envoy's ext_proc cluster at the router's listen.extProc", () => {
    const listen = parseListenAddress(routerConfig(r).listen.extProc);
    const envoyTarget = envoyRouterAddress(envoyBootstrap(r));
    if (listen.type === 'unix') {
      expect(envoyTarget).toEqual({ pipe: listen.path });
      const dir = path.dirname(listen.path);
      for (const c of ['router', 'envoy']) expect(mounts(container(r, c)).find((m) => m.mountPath === dir)?.name).toBe('extproc-socket');
    } else {
      expect(listen.host).toBe('127.0.0.1');
      expect(envoyTarget).toEqual({ port: listen.port });
    }
  });

  it(`embeds envoy/${envoyFile} unchanged`, () => {
    const cm = find(r, 'ConfigMap', '-envoy') as K8sObject & { data: Record<string, string> };
    expect(cm.data['envoy.yaml']).toBe(readFileSync(path.join(REPO, 'envoy', envoyFile), 'utf8'));
  });

  it("caps Envoy's router cluster (circuit breaker max_requests) at the router's extProc.maxStreams, also when set", () => {
    const maxRequests = (x: Rendered): number => {
      const clusters = (envoyBootstrap(x).static_resources as { clusters: Obj[] }).clusters;
      const c = clusters.find((y) => y.name === 'mcip_router') as { circuit_breakers: { thresholds: { max_requests: number }[] } };
      return c.circuit_breakers.thresholds[0]!.max_requests;
    };
    expect(maxRequests(r)).toBe(routerConfig(r).extProc.maxStreams);
    const set = renderChart(mergeValuesForTest(values, { extProc: { maxStreams: 2500 } }));
    expect(routerConfig(set).extProc.maxStreams).toBe(2500);
    expect(maxRequests(set)).toBe(2500);
  });

  it("lets Envoy receive the router's largest ext_proc message", () => {
    const limit = /max_receive_message_length: (\d+)/.exec(readFileSync(path.join(REPO, 'envoy', envoyFile), 'utf8'))![1]!;
    expect(Number(limit)).toBeGreaterThanOrEqual(routerConfig(r).extProc.maxMessageBytes);
  });

  it('gives Envoy its bootstrap and probes what that bootstrap serves', () => {
    const envoy = container(r, 'envoy');
    const file = envoy.args![envoy.args!.indexOf('--config-path') + 1]!;
    expect(mounts(envoy).find((m) => m.mountPath === path.dirname(file))?.name).toBe('envoy-config');
    const boot = envoyBootstrap(r) as { admin: { address: { socket_address: { address: string; port_value: number } } }; static_resources: { listeners: Obj[] } };
    const listener = boot.static_resources.listeners[0] as { address: { socket_address: { port_value: number } } };
    expect(portOf(envoy, 'http')).toBe(listener.address.socket_address.port_value);
    // Envoy's admin stays on loopback, on a port the router's admin does not use.
    expect(boot.admin.address.socket_address.address).toBe('127.0.0.1');
    expect(boot.admin.address.socket_address.port_value).not.toBe(portOf(container(r, 'router'), 'admin'));
    expect((envoy.readinessProbe as Probe).httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(JSON.stringify(boot)).toContain('"exact":"/healthz"'); // the health_check filter answers it
    for (const flag of envoy.args!.filter((a) => a.startsWith('-'))) expect(ENVOY_FLAGS).toContain(flag);
  });

  it('drains in order: router after its preStop sleep, Envoy after the router, the pod after both', () => {
    const sleep = (c: Container): number => {
      const preStop = (c.lifecycle as { preStop: { exec?: { command: string[] }; sleep?: { seconds: number } } }).preStop;
      return preStop.sleep?.seconds ?? Number(preStop.exec!.command[1]);
    };
    const drainSeconds = routerConfig(r).extProc.drainTimeoutMs / 1000;
    const router = sleep(container(r, 'router'));
    const envoy = sleep(container(r, 'envoy'));
    expect(envoy).toBeGreaterThan(router + drainSeconds);
    expect(podSpec(r).terminationGracePeriodSeconds as number).toBeGreaterThan(envoy);
  });

  it('mounts each member kubeconfig Secret read-only where the router config looks for it', () => {
    const router = container(r, 'router');
    for (const member of routerConfig(r).clusters.slice(1)) {
      const file = member.kubernetes!.kubeconfig!;
      const mount = mounts(router).find((m) => m.mountPath === path.dirname(file))!;
      expect(mount.readOnly).toBe(true);
      const volume = volumes(r).find((v) => v.name === mount.name)!;
      expect(volume.secret!.items.map((i) => i.path)).toEqual([path.basename(file)]);
    }
  });
});

/** Router config keys the chart does not set, and why. */
const NOT_FROM_CHART: Record<string, string> = {
  manifests: 'file sources only: the chart reads every cluster from its Kubernetes API',
  'clusters[].manifests': 'same',
  'clusters[].kubernetes.inCluster': 'set for the local cluster only (remote members use kubeconfig)',
  admin: '/debug/* stays on loopback (listen.debug): the chart never exposes it',
  credentials: 'the file poll interval: its default suits Secret rotation',
  'clusters[].kubernetes.allowExecPlugins': 'kubeconfig Secrets must be self-contained: the image has no credential plugins',
  exportAgent: 'the push/pull member agent (exportAgent.enabled) has its own config (configmap-export-agent.yaml), never the routers\'',
};

describe('router config coverage', () => {
  it('every router config key is one the chart can set from values, or is listed as left out', () => {
    const r = renderChart(mergeValues(mergeValues(REMOTE_VALUES, ENDPOINT_PICKER_VALUES), { fleet: FLEET_VALUES.fleet }));
    const cm = find(r, 'ConfigMap', '-router') as K8sObject & { data: Record<string, string> };
    const raw = parse(cm.data['router.yaml']!) as { clusters: { kubernetes: Obj }[] } & Obj;
    const keys = (o: Obj, prefix: string): string[] => Object.keys(o).map((k) => `${prefix}${k}`);
    const rendered = new Set([
      ...keys(raw, ''),
      ...raw.clusters.flatMap((c) => keys(c, 'clusters[].')),
      ...raw.clusters.slice(1).flatMap((c) => keys(c.kubernetes, 'clusters[].kubernetes.')),
    ]);
    const schemaKeys = [
      ...keys(routerConfigSchema.shape, ''),
      ...keys(clusterSchema.shape, 'clusters[].'),
      ...keys(kubernetesSourceSchema.shape, 'clusters[].kubernetes.'),
    ];
    expect(schemaKeys.filter((k) => !rendered.has(k) && !(k in NOT_FROM_CHART))).toEqual([]);
  });
});

describe('image', () => {
  const images = (r: Rendered): string[] =>
    r.objects.filter((o) => o.kind === 'Deployment').flatMap((d) => ((d.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers).filter((c) => c.name !== 'envoy').map((c) => String(c.image)));

  it('refuses to render as shipped (image.repository at its placeholder or empty), saying how to build, push and set it', () => {
    expect((readYaml(path.join(CHART_DIR, 'values.yaml')) as { image: { repository: string } }).image.repository).toBe('REGISTRY/mcip-router');
    for (const values of [{}, { exportController: { enabled: true } }, { image: { repository: '' } }]) {
      expect(() => renderChart(values, undefined, false)).toThrow(
        /image\.repository is not set: build the mcip-router image from the repository's Dockerfile, push it .*npm run image.*--set image\.repository=/,
      );
    }
  });

  it('runs the image the install names in the routers and the export controller, tagged with the appVersion unless image.tag', () => {
    const chart = readYaml(path.join(CHART_DIR, 'Chart.yaml')) as { appVersion: string };
    const set = { image: { repository: 'registry.example.com/ml/mcip-router' }, exportController: { enabled: true } };
    expect(images(renderChart(set, undefined, false))).toEqual([`registry.example.com/ml/mcip-router:${chart.appVersion}`, `registry.example.com/ml/mcip-router:${chart.appVersion}`]);
    expect(images(renderChart({ ...set, image: { repository: 'r.example/m', tag: 'v9' } }, undefined, false))).toEqual(['r.example/m:v9', 'r.example/m:v9']);
  });
});

describe('chart files', () => {
  it.each(['envoy.yaml', 'envoy-unix-socket.yaml', 'envoy-parent-tls.yaml', 'relay.yaml', 'relay-parent-tls.yaml'])('files/%s is a verbatim copy of the one in envoy/', (file) => {
    expect(readFileSync(path.join(CHART_DIR, 'files', file), 'utf8')).toBe(readFileSync(path.join(REPO, 'envoy', file), 'utf8'));
  });

  it.each(['inferencepoolimports.yaml', 'memberexportrecords.yaml'])('crds/%s is a verbatim copy of deploy/crds/', (file) => {
    expect(readFileSync(path.join(CHART_DIR, 'crds', file), 'utf8')).toBe(readFileSync(path.join(REPO, 'deploy/crds', file), 'utf8'));
  });

  it('Chart.yaml is apiVersion v2 and its appVersion is the package version', () => {
    const chart = readYaml(path.join(CHART_DIR, 'Chart.yaml')) as Obj;
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    expect(chart).toMatchObject({ apiVersion: 'v2', name: 'mcip-router', type: 'application', appVersion: pkg.version });
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(find(renderChart(), 'Deployment').metadata.labels!['app.kubernetes.io/version']).toBe(pkg.version);
  });

  it('mounts the remote gateway CA where files/envoy-parent-tls.yaml reads it', () => {
    const r = renderChart({ mode: 'Parent', envoy: { remoteGatewayCASecret: 'remote-gateway-ca' } });
    const caFile = /trusted_ca: \{ filename: (\S+) \}/.exec(readFileSync(path.join(CHART_DIR, 'files/envoy-parent-tls.yaml'), 'utf8'))![1]!;
    const mount = mounts(container(r, 'envoy')).find((m) => m.mountPath === path.dirname(caFile))!;
    expect(mount.name).toBe('remote-gateway-ca');
    expect(volumes(r).find((v) => v.name === mount.name)!.secret!.items[0]!.path).toBe(path.basename(caFile));
  });

  it('rolls the pods when the router or Envoy config changes', () => {
    const annotations = (values: Obj): Record<string, string> =>
      (find(renderChart(values), 'Deployment').spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations;
    const base = annotations({});
    expect(annotations({ log: { level: 'debug' } })['checksum/router-config']).not.toBe(base['checksum/router-config']);
    expect(annotations({ router: { transport: 'unix' } })['checksum/envoy-config']).not.toBe(base['checksum/envoy-config']);
    expect(annotations({ replicaCount: 3 })).toEqual(base);
  });
});

describe('router admin endpoints the chart uses', () => {
  let server: AdminServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answer the probe and scrape paths', async () => {
    let ready = false;
    server = await startAdminServer('127.0.0.1:0', {
      registry: new RouterMetrics({ defaultMetrics: false }).registry,
      logger: createLogger('silent'),
      ready: () => ({ ready }),
      routes: {},
    });
    const status = async (p: string): Promise<number> => (await fetch(`http://${server!.address}${p}`)).status;
    const r = renderChart({ serviceMonitor: { enabled: true } });
    const router = container(r, 'router');
    const probePaths = ['startupProbe', 'livenessProbe', 'readinessProbe'].map((k) => (router[k] as Probe).httpGet!.path);
    const scrape = ((find(r, 'ServiceMonitor').spec as { endpoints: { path: string }[] }).endpoints[0]!).path;
    expect(await status('/readyz')).toBe(503);
    ready = true;
    for (const p of [...probePaths, scrape]) expect(await status(p), p).toBe(200);
  });
});

/** Envoy command-line options the chart passes (all in `envoy --help` since 1.x). */
const ENVOY_FLAGS = ['--config-path', '--service-node', '--service-cluster', '--log-level', '--disable-hot-restart'];
