/**
 * docs/bring-your-own-gateway.md and examples/bring-your-own-gateway/: every file parses, every
 * kubectl/helm command of the guide names files that exist, and per gateway the release its helm
 * command installs fits the manifests it applies: the values pass values.schema.json, the router
 * config the chart renders loads as the router loads it, and the multi-cluster pool, the
 * HTTPRoute, the Gateway and (Istio) the DestinationRule name the Service, ports, pods and
 * answer mode that release has.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { CHART_DIR, defaultValues, find, INSTALL_VALUES, mergeValues, renderChart, REPO, type K8sObject, type Obj, type Rendered } from '../charts/render-chart.js';
import { routerConfig, routerConfigText, SCHEMA_HAS_ENDPOINT_PICKER } from '../charts/router-config.js';

const GUIDE = 'docs/bring-your-own-gateway.md';
const EXAMPLES = 'examples/bring-your-own-gateway';
const text = readFileSync(path.join(REPO, GUIDE), 'utf8');

function filesUnder(dir: string): string[] {
  return readdirSync(path.join(REPO, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(`${dir}/${e.name}`) : [`${dir}/${e.name}`]));
}
const objectsOf = (file: string): K8sObject[] =>
  parseAllDocuments(readFileSync(path.join(REPO, file), 'utf8'))
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);

/** The guide's shell commands: ```sh blocks, continuation lines joined, comments dropped. */
function commands(markdown: string): string[] {
  const out: string[] = [];
  for (const m of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const joined = m[1]!.replace(/\\\n\s*/g, '');
    for (const line of joined.split('\n')) {
      const cmd = line.replace(/\s+#.*$/, '').trim();
      if (cmd) out.push(cmd);
    }
  }
  return out;
}
/** The argument after each occurrence of a flag. */
const flagValues = (args: string[], flag: string): string[] => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));

/** The guide's section per gateway: its commands. */
function sections(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of text.matchAll(/^### (.+)\n([\s\S]*?)(?=^##)/gm)) out.set(m[1]!.trim(), commands(m[2]!));
  return out;
}

type GatewayRef = { name: string; namespace: string };
/** The labels each gateway's controller puts on the data-plane pods it runs for a Gateway (read from its source). */
const byGatewayName = (gw: GatewayRef): Record<string, string> => ({ 'gateway.networking.k8s.io/gateway-name': gw.name });

/** What each gateway needs (docs/bring-your-own-gateway.md, section 1). */
const GATEWAYS: Record<string, { dir: string; answer: 'direct' | 'relay'; className?: string; proxyNamespace?: string; proxyPodLabels: (gw: GatewayRef) => Record<string, string> }> = {
  // istio/istio manifests/charts/istio-control/istio-discovery/files/kube-gateway.yaml: in the Gateway's namespace.
  Istio: { dir: 'istio', answer: 'relay', className: 'istio', proxyPodLabels: byGatewayName },
  // agentgateway/agentgateway controller/pkg/helm/agentgateway/templates/_helpers.tpl (selectorLabels), deployed in the Gateway's namespace.
  agentgateway: { dir: 'agentgateway', answer: 'relay', className: 'agentgateway', proxyPodLabels: byGatewayName },
  // kgateway-dev/kgateway's gateway proxy chart (selectorLabels: gateway-name = the Gateway), deployed in the Gateway's namespace.
  kgateway: { dir: 'kgateway', answer: 'relay', className: 'kgateway', proxyPodLabels: byGatewayName },
  // nginx/nginx-gateway-fabric internal/controller/provisioner/objects.go buildLabelsAndAnnotations (names up to 63 characters).
  'NGINX Gateway Fabric': { dir: 'nginx-gateway-fabric', answer: 'direct', className: 'nginx', proxyPodLabels: byGatewayName },
  // envoyproxy/gateway internal/gatewayapi/helpers.go owner labels, on pods in Envoy Gateway's own namespace.
  'Envoy AI Gateway': {
    dir: 'envoy-ai-gateway',
    answer: 'direct',
    proxyNamespace: 'envoy-gateway-system',
    proxyPodLabels: (gw) => ({ 'gateway.envoyproxy.io/owning-gateway-name': gw.name, 'gateway.envoyproxy.io/owning-gateway-namespace': gw.namespace }),
  },
};

/** InferencePool v1 fields of GIE v1.1.0's CRD (spec, endpointPickerRef, port, targetPorts, selector). */
const POOL_FIELDS = {
  spec: ['endpointPickerRef', 'selector', 'targetPorts'],
  endpointPickerRef: ['failureMode', 'group', 'kind', 'name', 'port'],
  port: ['number'],
  targetPort: ['number'],
  selector: ['matchLabels'],
};

type Pool = K8sObject & {
  spec: { selector: { matchLabels: Record<string, string> }; targetPorts: { number: number }[]; endpointPickerRef: { name: string; port: { number: number }; failureMode?: string } };
};

describe('examples/bring-your-own-gateway', () => {
  const files = filesUnder(EXAMPLES);

  it('every file is YAML that parses, one or more objects or a values map', () => {
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      expect(f, f).toMatch(/\.yaml$/);
      const docs = parseAllDocuments(readFileSync(path.join(REPO, f), 'utf8'));
      for (const d of docs) expect(d.errors.map((e) => e.message), f).toEqual([]);
      expect(docs.length, f).toBeGreaterThan(0);
    }
  });

  it('every file is used by the guide', () => {
    const named = new Set(commands(text).flatMap((c) => c.split(/\s+/)).filter((a) => a.startsWith(EXAMPLES)));
    const linked = new Set([...text.matchAll(/\(\.\.\/(examples\/bring-your-own-gateway\/[^)]+)\)/g)].map((m) => m[1]!));
    for (const f of files) expect(named.has(f) || linked.has(f), f).toBe(true);
  });

  it('every InferencePool uses only the fields of GIE v1.1.0\'s InferencePool v1, and always sets the picker port', () => {
    const pools = files.flatMap(objectsOf).filter((o) => o.kind === 'InferencePool') as Pool[];
    expect(pools.length).toBe(2);
    for (const p of pools) {
      expect(p.apiVersion).toBe('inference.networking.k8s.io/v1');
      expect(POOL_FIELDS.spec).toEqual(expect.arrayContaining(Object.keys(p.spec)));
      expect(POOL_FIELDS.endpointPickerRef).toEqual(expect.arrayContaining(Object.keys(p.spec.endpointPickerRef)));
      expect(Object.keys(p.spec.endpointPickerRef.port)).toEqual(POOL_FIELDS.port);
      expect(Object.keys(p.spec.selector)).toEqual(POOL_FIELDS.selector);
      for (const t of p.spec.targetPorts) expect(Object.keys(t)).toEqual(POOL_FIELDS.targetPort);
      expect(p.spec.endpointPickerRef.port.number).toBeGreaterThan(0);
    }
  });

  it('each multi-cluster pool spans cluster-a\'s own pool and the import of the pool cluster-b exports', () => {
    const local = objectsOf('examples/two-clusters/cluster-a/llm-pool.yaml').find((o) => o.kind === 'InferencePool')!;
    const exported = objectsOf('examples/two-clusters/cluster-b/llm-pool.yaml').find((o) => o.kind === 'InferencePool')!;
    expect(exported.metadata.annotations!['inference.networking.x-k8s.io/export']).toBe('ClusterSet');
    for (const f of ['multi-cluster-pool-relay.yaml', 'multi-cluster-pool-direct.yaml']) {
      const pool = objectsOf(`${EXAMPLES}/${f}`)[0]!;
      const backends = pool.metadata.annotations!['mcip-router.dev/backends']!.split(',').map((e) => e.trim());
      expect(backends).toEqual([`InferencePool/${local.metadata.name}=1`, `InferencePoolImport/${exported.metadata.name}=1`]);
      expect(pool.metadata.namespace).toBe(local.metadata.namespace);
      expect(pool.metadata.namespace).toBe(exported.metadata.namespace);
      expect(pool.metadata.annotations!['mcip-router.dev/answer']).toBe(f.includes('relay') ? 'relay' : 'direct');
    }
  });

  it('the direct pool\'s pods are cluster-a\'s model servers (where NGINX Gateway Fabric fails open to)', () => {
    const local = objectsOf('examples/two-clusters/cluster-a/llm-pool.yaml').find((o) => o.kind === 'InferencePool') as Pool;
    const direct = objectsOf(`${EXAMPLES}/multi-cluster-pool-direct.yaml`)[0] as Pool;
    expect(direct.spec.selector).toEqual(local.spec.selector);
    expect(direct.spec.targetPorts).toEqual(local.spec.targetPorts);
  });
});

describe('the guide\'s commands', () => {
  const all = commands(text);

  it('name files and charts that exist', () => {
    const paths = all.flatMap((c) => {
      const args = c.split(/\s+/);
      const out = [...flagValues(args, '-f')];
      if (args[0] === 'helm') out.push(args[args.indexOf('--install') + 2]!);
      if (args.includes('sh')) out.push(args[args.indexOf('sh') + 1]!);
      return out;
    });
    expect(paths.length).toBeGreaterThan(20);
    // Upstream files and charts (a gateway's own install) are pinned to a release; ours exist here.
    for (const p of paths.filter((x) => /^(https|oci):\/\//.test(x))) {
      if (p.startsWith('https://')) expect(p, p).toMatch(/^https:\/\/raw\.githubusercontent\.com\/[^/]+\/[^/]+\/v\d+\.\d+\.\d+\//);
      else expect(all.find((c) => c.includes(p)), p).toMatch(/ --version v\d+\.\d+\.\d+ /);
    }
    for (const p of paths.filter((x) => !/^(https|oci):\/\//.test(x))) expect(existsSync(path.join(REPO, p)), p).toBe(true);
  });

  it('name InferencePools with their group (GIE\'s CRDs install inferencepools of two groups)', () => {
    const gets = all.filter((c) => c.startsWith('kubectl ') && / get inferencepool(s\.|s? )/.test(c));
    expect(gets.length).toBeGreaterThan(0);
    for (const c of gets) expect(c, c).toMatch(/ get inferencepools\.inference\.networking\.k8s\.io /);
  });

  it('name every cluster with --context / --kube-context', () => {
    for (const c of all.filter((x) => /^(kubectl|helm) /.test(x))) expect(c, c).toMatch(/--(kube-)?context cluster-a/);
  });

  it('has one section per gateway, each installing the router and applying its Gateway, pool and route', () => {
    const s = sections();
    for (const name of Object.keys(GATEWAYS)) {
      const cmds = s.get(name);
      expect(cmds, name).toBeDefined();
      expect(cmds!.filter((c) => c.startsWith('helm '))).toHaveLength(1);
      expect(cmds!.some((c) => c.includes('/gateway.yaml'))).toBe(true);
      expect(cmds!.some((c) => c.includes('multi-cluster-pool-'))).toBe(true);
      expect(cmds!.some((c) => c.endsWith('httproute.yaml'))).toBe(true);
    }
  });
});

describe.each(Object.entries(GATEWAYS))('%s', (name, expected) => {
  const cmds = sections().get(name)!;
  const helm = cmds.find((c) => c.startsWith('helm '))!.split(/\s+/);
  const release = { name: helm[helm.indexOf('--install') + 1]!, namespace: flagValues(helm, '-n')[0]! };
  const valueFiles = flagValues(helm, '-f');
  const values = valueFiles.reduce<Obj>((acc, f) => mergeValues(acc, parse(readFileSync(path.join(REPO, f), 'utf8')) as Obj), {});
  const applied = cmds.filter((c) => c.startsWith('kubectl ') && c.includes(' apply ')).flatMap((c) => flagValues(c.split(/\s+/), '-f')).flatMap(objectsOf);
  const r: Rendered = renderChart(values, release);
  const pool = applied.find((o) => o.kind === 'InferencePool') as Pool;
  /** The routers' Deployment (the export controller has its own). */
  const routers = (): K8sObject => r.objects.find((o) => o.kind === 'Deployment' && o.metadata.name === find(r, 'Service').metadata.name)!;
  const ep = (parse(routerConfigText(r)) as { endpointPicker: { namespace: string; serviceName: string; ports: number[]; defaultAnswer: string; relay?: { port: number } } }).endpointPicker;

  it('installs with --set image.repository and values the chart\'s values.schema.json accepts', () => {
    expect(flagValues(helm, '--set')).toEqual(['image.repository="$IMAGE"']);
    const schema = JSON.parse(readFileSync(path.join(CHART_DIR, 'values.schema.json'), 'utf8')) as object;
    const validate = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true }).compile(schema);
    expect(validate(mergeValues(mergeValues(defaultValues(), values), INSTALL_VALUES)), JSON.stringify(validate.errors)).toBe(true);
  });

  it(`renders a router config that loads as the router loads it${SCHEMA_HAS_ENDPOINT_PICKER ? '' : ' (endpointPicker checked here until the router schema has it)'}`, () => {
    const cfg = routerConfig(r);
    expect(cfg.clusterName).toBe('cluster-a');
    expect(cfg.clusters.map((c) => c.name)).toEqual(['cluster-a', 'cluster-b']);
    expect(ep.namespace).toBe(release.namespace);
    expect(ep.defaultAnswer).toBe(expected.answer);
  });

  it(`applies the ${expected.answer} pool, naming the release's Service and one of its picker ports`, () => {
    expect(pool.metadata.annotations!['mcip-router.dev/answer']).toBe(expected.answer);
    expect(pool.metadata.namespace).toBe(release.namespace);
    expect(pool.spec.endpointPickerRef.name).toBe(ep.serviceName);
    expect(find(r, 'Service').metadata.name).toBe(ep.serviceName);
    expect(ep.ports).toContain(pool.spec.endpointPickerRef.port.number);
    const svcPorts = (find(r, 'Service').spec as { ports: { port: number }[] }).ports.map((p) => p.port);
    expect(svcPorts).toContain(pool.spec.endpointPickerRef.port.number);
    expect(pool.spec.endpointPickerRef.failureMode ?? 'FailClose').toBe('FailClose');
  });

  if (expected.answer === 'relay') {
    it('relay: the pool\'s pods are the router pods (not the export controller\'s) and its target port the relay\'s', () => {
      const podLabels = (routers().spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
      expect(podLabels).toMatchObject(pool.spec.selector.matchLabels);
      // The release's other pods share its selector labels; a pool that selected them would send
      // requests to a pod with no relay (Istio's and kgateway's fallback pick any pool pod).
      const others = r.objects.filter((o) => o.kind === 'Deployment' && o !== routers());
      expect(others.length).toBeGreaterThan(0);
      for (const d of others) {
        const labels = (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
        expect(Object.entries(pool.spec.selector.matchLabels).every(([k, v]) => labels[k] === v), d.metadata.name).toBe(false);
      }
      expect(pool.spec.targetPorts.map((t) => t.number)).toEqual([ep.relay!.port]);
      const relay = (routers().spec as { template: { spec: { containers: { name: string; ports: { containerPort: number }[] }[] } } }).template.spec.containers.find((c) => c.name === 'relay')!;
      expect(relay.ports[0]!.containerPort).toBe(ep.relay!.port);
    });
  } else {
    it('direct: no relay, and the pool\'s pods are not the router pods', () => {
      expect(ep.relay).toBeUndefined();
      const podLabels = (routers().spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
      expect(Object.entries(pool.spec.selector.matchLabels).every(([k, v]) => podLabels[k] === v)).toBe(false);
    });
  }

  it('the route sends to the pool through the Gateway of the gateway\'s class', () => {
    const gateway = applied.find((o) => o.kind === 'Gateway')!;
    const route = applied.find((o) => o.kind === 'HTTPRoute')!;
    const spec = route.spec as { parentRefs: { name: string }[]; rules: { backendRefs: { group: string; kind: string; name: string }[] }[] };
    expect(spec.parentRefs[0]!.name).toBe(gateway.metadata.name);
    expect(route.metadata.namespace).toBe(gateway.metadata.namespace);
    expect(spec.rules[0]!.backendRefs).toEqual([{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: pool.metadata.name }]);
    const className = (gateway.spec as { gatewayClassName: string }).gatewayClassName;
    if (expected.className) expect(className).toBe(expected.className);
    else expect(applied.find((o) => o.kind === 'GatewayClass')?.metadata.name).toBe(className);
  });

  it('the NetworkPolicy admits the namespace where the gateway runs its proxies, to the pool\'s picker port', () => {
    const gateway = applied.find((o) => o.kind === 'Gateway')!;
    const policy = find(r, 'NetworkPolicy', '-endpoint-picker').spec as { ingress: { ports: { port: number }[]; from?: { namespaceSelector: { matchLabels: Record<string, string> } }[] }[] };
    const rule = policy.ingress.find((x) => x.ports.some((p) => p.port === pool.spec.endpointPickerRef.port.number))!;
    expect(rule.from![0]!.namespaceSelector.matchLabels['kubernetes.io/metadata.name']).toBe(expected.proxyNamespace ?? gateway.metadata.namespace);
    if (expected.answer === 'relay') expect(rule.ports.map((p) => p.port)).toContain(ep.relay!.port);
  });

  it('the NetworkPolicy\'s pod selector matches the labels the gateway puts on its proxy pods for this Gateway', () => {
    const gateway = applied.find((o) => o.kind === 'Gateway')!;
    const policy = find(r, 'NetworkPolicy', '-endpoint-picker').spec as { ingress: { from?: { podSelector: { matchLabels?: Record<string, string> } }[] }[] };
    const selector = policy.ingress[0]!.from![0]!.podSelector.matchLabels ?? {};
    expect(Object.keys(selector).length).toBeGreaterThan(0);
    expect(expected.proxyPodLabels({ name: gateway.metadata.name, namespace: gateway.metadata.namespace! })).toMatchObject(selector);
  });

  if (name === 'Istio') {
    it('the DestinationRule originates TLS, unverified, to the picker port of the release Service', () => {
      const dr = applied.find((o) => o.kind === 'DestinationRule')!;
      expect(dr.apiVersion).toBe('networking.istio.io/v1');
      const spec = dr.spec as { host: string; trafficPolicy: { portLevelSettings: { port: { number: number }; tls: Obj }[] } };
      expect(spec.host).toBe(`${ep.serviceName}.${release.namespace}.svc.cluster.local`);
      const setting = spec.trafficPolicy.portLevelSettings.find((s) => s.port.number === pool.spec.endpointPickerRef.port.number)!;
      expect(setting.tls).toEqual({ mode: 'SIMPLE', insecureSkipVerify: true });
      expect((parse(routerConfigText(r)) as { endpointPicker: { tls: Obj } }).endpointPicker.tls).toEqual({ plaintext: false });
    });
  }

  it('port-forwards to a router pod, chosen by labels that only the router pods carry', () => {
    const forwards = commands(text).filter((c) => c.includes(' port-forward '));
    expect(forwards.length).toBeGreaterThan(0);
    const lookups = commands(text).filter((c) => /^[A-Z_]+=\$\(kubectl .* get pod /.test(c));
    const podLabels = (d: K8sObject): Record<string, string> => (d.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    const deployments = r.objects.filter((o) => o.kind === 'Deployment');
    for (const f of forwards) {
      // Not deployment/...: its selector also matches the export controller's pods.
      const target = f.split(/\s+/)[f.split(/\s+/).indexOf('port-forward') + 1]!;
      const variable = /^"?\$([A-Z_]+)"?$/.exec(target)?.[1];
      expect(variable, f).toBeDefined();
      const lookup = lookups.find((l) => l.startsWith(`${variable}=`))!;
      expect(lookup, variable).toBeDefined();
      const selector = Object.fromEntries(flagValues(lookup.split(/\s+/), '-l')[0]!.split(',').map((kv) => kv.split('=') as [string, string]));
      const selected = deployments.filter((d) => Object.entries(selector).every(([k, v]) => podLabels(d)[k] === v));
      expect(selected.map((d) => d.metadata.name)).toEqual([routers().metadata.name]);
    }
  });

  it('the objects the guide checks are the ones the release renders', () => {
    // The release's objects: those the guide looks up in the release namespace (not the gateway's own).
    const inRelease = commands(text).filter((c) => c.includes(` -n ${release.namespace} `));
    const refs = inRelease.flatMap((c) => [...c.matchAll(/\b(deployment|service|networkpolicy)\/([a-z0-9-]+)/g)].map((m) => [m[1]!, m[2]!] as const));
    expect(refs.length).toBeGreaterThan(3);
    const kinds: Record<string, string> = { deployment: 'Deployment', service: 'Service', networkpolicy: 'NetworkPolicy' };
    for (const [kind, objName] of refs) expect(r.objects.some((o) => o.kind === kinds[kind] && o.metadata.name === objName && o.metadata.namespace === release.namespace), `${kind}/${objName}`).toBe(true);
    const getSecret = commands(text).find((c) => c.includes(' get secret '))!.split(/\s+/);
    const secrets = getSecret.slice(getSecret.indexOf('secret') + 1);
    expect(secrets.length).toBeGreaterThan(0);
    const mounted = (routers().spec as { template: { spec: { volumes: { secret?: { secretName: string } }[] } } }).template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : []));
    const exportMounted = (find(r, 'Deployment', '-export-controller').spec as { template: { spec: { volumes: { secret?: { secretName: string } }[] } } }).template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : []));
    for (const s of secrets) expect([...mounted, ...exportMounted], s).toContain(s);
  });
});

describe('README', () => {
  it('its first screen (before Quick start) names both deployment shapes and links the guide of each', () => {
    const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
    const first = readme.slice(0, readme.indexOf('## Quick start'));
    expect(first).toMatch(/\*\*with its own Envoy\*\*[^\n]*\(docs\/two-clusters\.md\)/);
    expect(first).toMatch(/\*\*behind the gateway you run\*\*[^\n]*\(docs\/bring-your-own-gateway\.md\)/);
    for (const gw of ['Istio', 'agentgateway', 'NGINX Gateway Fabric', 'Envoy AI Gateway', 'kgateway']) expect(first).toContain(gw);
    expect(existsSync(path.join(REPO, GUIDE))).toBe(true);
  });
});
