/**
 * The chart's Endpoint Picker role (values endpointPicker): the router config block it renders,
 * the picker and relay ports (Service port = container port = the number a pool names), the relay
 * Envoy and its bootstrap, POD_IP, the TLS and relay-key Secrets and where the router reads them,
 * the NetworkPolicy, and what the chart refuses.
 */
import path from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { validateEnvoyYaml, formatError } from '../envoy/validate-envoy-config.js';
import { find, mergeValues, renderChart, type K8sObject, type Obj, type Rendered } from './render-chart.js';
import { envVarsReadBySrc, routerConfig, routerConfigText, SCHEMA_HAS_ENDPOINT_PICKER } from './router-config.js';
import { ENDPOINT_PICKER_VALUES } from './sample-values.js';

type Port = { name: string; containerPort: number };
type Mount = { name: string; mountPath: string; readOnly?: boolean };
type Container = { name: string; image: string; args: string[]; env?: Obj[]; ports?: Port[]; volumeMounts: Mount[] } & Obj;
type Volume = { name: string; secret?: { secretName: string; items: { key: string; path: string }[] } } & Obj;
type ServicePort = { name: string; port: number; targetPort: string; appProtocol?: string };
type EndpointPickerBlock = {
  namespace: string;
  serviceName: string;
  address: string;
  ports: number[];
  defaultAnswer: string;
  tls: { certFile?: string; keyFile?: string; plaintext?: boolean };
  relay?: { port: number; keyFile: string; tokenTtlMs?: number; maxSkewMs?: number };
};

const NETWORK = ENDPOINT_PICKER_VALUES.endpointPicker as { networkPolicy: { gatewayNamespaceSelector: Obj; gatewayPodSelector: Obj } };
/** The smallest values that turn the role on (the gateway's namespace is required). */
const ON: Obj = { endpointPicker: { enabled: true, networkPolicy: { gatewayNamespaceSelector: NETWORK.networkPolicy.gatewayNamespaceSelector } } };
const on = (extra: Obj = {}): Obj => mergeValues(ON, { endpointPicker: extra });

const podSpec = (r: Rendered): { containers: Container[]; volumes: Volume[] } => (find(r, 'Deployment').spec as { template: { spec: { containers: Container[]; volumes: Volume[] } } }).template.spec;
const container = (r: Rendered, name: string): Container | undefined => podSpec(r).containers.find((c) => c.name === name);
const volume = (r: Rendered, name: string): Volume => podSpec(r).volumes.find((v) => v.name === name)!;
const servicePorts = (r: Rendered): ServicePort[] => (find(r, 'Service').spec as { ports: ServicePort[] }).ports;
const rawConfig = (r: Rendered): Obj & { listen: Obj; endpointPicker?: EndpointPickerBlock } => parse(routerConfigText(r)) as Obj & { listen: Obj };
const envoyData = (r: Rendered): Record<string, string> => (find(r, 'ConfigMap', '-envoy') as K8sObject & { data: Record<string, string> }).data;
/** Where the router finds a file of the config: its mount and the Secret item behind it. */
function secretItemOf(r: Rendered, file: string): { secretName: string; key: string } {
  const mount = container(r, 'router')!.volumeMounts.find((m) => m.mountPath === path.dirname(file));
  expect(mount, `a mount at ${path.dirname(file)}`).toBeDefined();
  expect(mount!.readOnly).toBe(true);
  const v = volume(r, mount!.name);
  const item = v.secret!.items.find((i) => i.path === path.basename(file))!;
  expect(item, `an item at ${path.basename(file)}`).toBeDefined();
  return { secretName: v.secret!.secretName, key: item.key };
}

describe('Endpoint Picker role off (the default)', () => {
  const r = renderChart({});

  it('renders nothing of it: no config block, picker or relay port, relay container, POD_IP, Secret or NetworkPolicy', () => {
    const cfg = rawConfig(r);
    expect(cfg.endpointPicker).toBeUndefined();
    expect(cfg.listen.relay).toBeUndefined();
    expect(servicePorts(r).map((p) => p.name)).toEqual(['http']);
    expect(podSpec(r).containers.map((c) => c.name)).toEqual(['envoy', 'router']);
    expect(container(r, 'router')!.env!.map((e) => e.name)).not.toContain('POD_IP');
    expect(r.objects.map((o) => o.kind)).not.toContain('NetworkPolicy');
    expect(r.objects.map((o) => o.kind)).not.toContain('Secret');
    expect(Object.keys(envoyData(r))).toEqual(['envoy.yaml']);
  });
});

describe('Endpoint Picker role on', () => {
  const release = { name: 'mcip', namespace: 'llm' };
  const r = renderChart(ENDPOINT_PICKER_VALUES, release);
  const ep = rawConfig(r).endpointPicker!;

  it('renders the endpointPicker block: the release namespace and Service, the ports, the answer, TLS files and the relay', () => {
    expect(ep).toEqual({
      namespace: 'llm',
      serviceName: find(r, 'Service').metadata.name,
      address: '0.0.0.0',
      ports: [9010, 9011],
      defaultAnswer: 'relay',
      tls: { certFile: '/etc/mcip/picker-tls/tls.crt', keyFile: '/etc/mcip/picker-tls/tls.key' },
      relay: { port: 8443, keyFile: '/etc/mcip/relay/key', tokenTtlMs: 5000, maxSkewMs: 1000 },
    });
    expect(ep.serviceName).toBe('mcip-mcip-router');
  });

  it('the rest of the rendered config loads as the router loads it (with endpointPicker and listen.relay once the schema has them)', () => {
    const cfg = routerConfig(r) as ReturnType<typeof routerConfig> & { endpointPicker?: EndpointPickerBlock; listen: { relay?: string } };
    expect(cfg.clusters[0]!.kubernetes?.inCluster).toBe(true);
    if (SCHEMA_HAS_ENDPOINT_PICKER) {
      expect(cfg.endpointPicker).toMatchObject({ namespace: 'llm', ports: [9010, 9011] });
      expect(cfg.listen.relay).toBe('127.0.0.1:9005');
    }
  });

  it('exposes each picker port on the Service with the container port of the same number, as HTTP/2', () => {
    const router = container(r, 'router')!;
    for (const port of ep.ports) {
      const sp = servicePorts(r).find((p) => p.port === port)!;
      expect(sp, `Service port ${port}`).toBeDefined();
      expect(sp.appProtocol).toBe('http2');
      expect(router.ports!.find((p) => p.name === sp.targetPort)?.containerPort).toBe(port);
    }
  });

  it('gives the router its pod IP for relay answers (downward API)', () => {
    const env = container(r, 'router')!.env!.find((e) => e.name === 'POD_IP');
    expect(env).toEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    // Once the router has the role, it must be the one reading POD_IP.
    if (SCHEMA_HAS_ENDPOINT_PICKER) expect(envVarsReadBySrc()).toContain('POD_IP');
  });

  it('mounts the picker TLS Secret where the config reads the certificate and key', () => {
    expect(secretItemOf(r, ep.tls.certFile!)).toEqual({ secretName: 'mcip-picker-tls', key: 'tls.crt' });
    expect(secretItemOf(r, ep.tls.keyFile!)).toEqual({ secretName: 'mcip-picker-tls', key: 'tls.key' });
  });

  it('mounts the relay key Secret where the config reads it', () => {
    expect(secretItemOf(r, ep.relay!.keyFile)).toEqual({ secretName: 'mcip-mcip-router-relay-key', key: 'key' });
  });

  it('runs the relay Envoy on the relay port, from the chart\'s relay bootstrap, calling the router\'s listen.relay', () => {
    const relay = container(r, 'relay')!;
    expect(relay.image).toBe(container(r, 'envoy')!.image);
    const bootFile = relay.args[relay.args.indexOf('--config-path') + 1]!;
    expect(relay.volumeMounts.find((m) => m.mountPath === path.dirname(bootFile))?.name).toBe('envoy-config');
    const text = envoyData(r)[path.basename(bootFile)]!;
    expect(validateEnvoyYaml(text).map(formatError)).toEqual([]);
    const boot = parse(text) as { admin: { address: { socket_address: { port_value: number } } }; static_resources: { listeners: { address: { socket_address: { port_value: number } } }[]; clusters: Obj[] } };
    const listenerPort = boot.static_resources.listeners[0]!.address.socket_address.port_value;
    expect(listenerPort).toBe(ep.relay!.port);
    expect(relay.ports).toEqual([{ name: 'relay', containerPort: ep.relay!.port, protocol: 'TCP' }]);
    expect(servicePorts(r).find((p) => p.name === 'relay')).toMatchObject({ port: ep.relay!.port, targetPort: 'relay' });
    // Its admin is on loopback, away from the pod's other Envoy (19000).
    expect(boot.admin.address.socket_address.port_value).toBe(19001);
    const verifier = boot.static_resources.clusters.find((c) => c.name === 'mcip_relay_verifier') as { load_assignment: { endpoints: { lb_endpoints: { endpoint: { address: { socket_address: { address: string; port_value: number } } } }[] }[] } };
    const at = verifier.load_assignment.endpoints[0]!.lb_endpoints[0]!.endpoint.address.socket_address;
    expect(`${at.address}:${at.port_value}`).toBe(rawConfig(r).listen.relay);
  });

  it('the relay asks the verifier on request headers only, fails closed, and forwards where the verifier says', () => {
    const boot = parse(envoyData(r)['relay.yaml']!) as Obj;
    const hcm = JSON.stringify(boot);
    const extProc = /"name":"envoy\.filters\.http\.ext_proc","typed_config":(\{.*?"allow_mode_override":false\})/.exec(hcm)![1]!;
    const cfg = JSON.parse(extProc) as { failure_mode_allow: boolean; processing_mode: Obj; grpc_service: { envoy_grpc: { cluster_name: string } } };
    expect(cfg.failure_mode_allow).toBe(false);
    expect(cfg.processing_mode).toEqual({ request_header_mode: 'SEND', response_header_mode: 'SKIP', request_body_mode: 'NONE', response_body_mode: 'NONE', request_trailer_mode: 'SKIP', response_trailer_mode: 'SKIP' });
    expect(cfg.grpc_service.envoy_grpc.cluster_name).toBe('mcip_relay_verifier');
    // A client-sent destination is dropped before the verifier is asked.
    expect(hcm).toMatch(/"request_mutations":\[\{"remove":"x-gateway-destination-endpoint"\},\{"remove":"x-mcip-destination-kind"\}\]/);
    expect(hcm).toContain('"http_header_name":"x-gateway-destination-endpoint"');
  });

  it('moves the relay listener with endpointPicker.relay.port', () => {
    const moved = renderChart(mergeValues(ENDPOINT_PICKER_VALUES, { endpointPicker: { relay: { port: 15443 } } }));
    const boot = parse(envoyData(moved)['relay.yaml']!) as { static_resources: { listeners: { address: { socket_address: { port_value: number } } }[] } };
    expect(boot.static_resources.listeners[0]!.address.socket_address.port_value).toBe(15443);
    expect(rawConfig(moved).endpointPicker!.relay!.port).toBe(15443);
    expect(container(moved, 'relay')!.ports![0]!.containerPort).toBe(15443);
  });

  it('Parent mode: the relay sends parent destinations over TLS, verified with the remote gateway CA it mounts', () => {
    const parent = renderChart(mergeValues(ENDPOINT_PICKER_VALUES, { mode: 'Parent', envoy: { remoteGatewayCASecret: 'remote-gateway-ca' } }));
    const text = envoyData(parent)['relay.yaml']!;
    expect(validateEnvoyYaml(text).map(formatError)).toEqual([]);
    const caFile = /trusted_ca: \{ filename: (\S+) \}/.exec(text)![1]!;
    const mount = container(parent, 'relay')!.volumeMounts.find((m) => m.mountPath === path.dirname(caFile))!;
    expect(mount.name).toBe('remote-gateway-ca');
    expect(volume(parent, mount.name).secret!.items[0]!.path).toBe(path.basename(caFile));
    expect(text).toContain('exact: parent');
    // Endpoint mode has no TLS cluster (its CA file would not exist).
    expect(envoyData(r)['relay.yaml']).not.toContain('trusted_ca');
  });

  it('NOTES name the Service, ports, selector and relay port a pool needs', () => {
    const labels = (find(r, 'Deployment').spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
    expect(r.notes).toContain(`endpointPickerRef: { name: ${ep.serviceName}, port: { number: <one of [9010,9011]> } }`);
    expect(r.notes).toContain(`selector { app.kubernetes.io/name: ${labels['app.kubernetes.io/name']}, app.kubernetes.io/instance: ${labels['app.kubernetes.io/instance']}, app.kubernetes.io/component: ${labels['app.kubernetes.io/component']} }`);
    expect(r.notes).toContain(`targetPorts [{ number: ${ep.relay!.port} }]`);
    expect(renderChart({}).notes).not.toContain('Endpoint Picker');
  });

  it('rolls the pods when the relay bootstrap changes', () => {
    const sum = (x: Rendered): string => (find(x, 'Deployment').spec as { template: { metadata: { annotations: Record<string, string> } } }).template.metadata.annotations['checksum/envoy-config']!;
    expect(sum(renderChart(mergeValues(ENDPOINT_PICKER_VALUES, { endpointPicker: { relay: { port: 15443 } } })))).not.toBe(sum(r));
  });
});

describe('picker TLS', () => {
  it('plaintext: the config says so and nothing is mounted', () => {
    const r = renderChart(on({ tls: { plaintext: true } }));
    expect(rawConfig(r).endpointPicker!.tls).toEqual({ plaintext: true });
    expect(podSpec(r).volumes.map((v) => v.name)).not.toContain('picker-tls');
  });

  it('neither a Secret nor plaintext: TLS with the certificate the router makes at start', () => {
    const r = renderChart(on());
    expect(rawConfig(r).endpointPicker!.tls).toEqual({ plaintext: false });
    expect(podSpec(r).volumes.map((v) => v.name)).not.toContain('picker-tls');
  });
});

describe('relay key Secret', () => {
  const keyOf = (r: Rendered): string => (find(r, 'Secret', '-relay-key').data as { key: string }).key;

  it('is made once with a random key of 32 bytes (base64 in the file), a new one per install', () => {
    const a = renderChart(on());
    const file = Buffer.from(keyOf(a), 'base64').toString('utf8');
    expect(file).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(file, 'base64')).toHaveLength(32);
    expect(keyOf(renderChart(on()))).not.toBe(keyOf(a));
  });

  it('is kept across upgrades: the key in the cluster is rendered again', () => {
    const first = renderChart(on());
    const secret = find(first, 'Secret', '-relay-key');
    const upgrade = renderChart(on({ ports: [9010, 9020] }), undefined, true, [secret]);
    expect(keyOf(upgrade)).toBe(keyOf(first));
  });

  it('a Secret the values name is used as it is, under its key, and none is rendered', () => {
    const r = renderChart(on({ relay: { keySecret: { name: 'team-relay-key', key: 'hmac' } } }));
    expect(r.objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(secretItemOf(r, rawConfig(r).endpointPicker!.relay!.keyFile)).toEqual({ secretName: 'team-relay-key', key: 'hmac' });
  });

  it('relay off (direct answers only): no relay container, Secret, relay port or listen.relay', () => {
    const r = renderChart(on({ defaultAnswer: 'direct', relay: { enabled: false } }));
    expect(container(r, 'relay')).toBeUndefined();
    expect(r.objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(servicePorts(r).map((p) => p.name)).toEqual(['http', 'picker-9010']);
    expect(rawConfig(r).endpointPicker!.relay).toBeUndefined();
    expect(rawConfig(r).listen.relay).toBeUndefined();
    expect(container(r, 'router')!.env!.map((e) => e.name)).not.toContain('POD_IP');
  });
});

describe('NetworkPolicy of the picker and relay ports', () => {
  type Rule = { ports: { port: number | string; protocol: string }[]; from?: Obj[] };
  const policy = (r: Rendered): { podSelector: { matchLabels: Obj }; policyTypes: string[]; ingress: Rule[] } =>
    find(r, 'NetworkPolicy', '-endpoint-picker').spec as { podSelector: { matchLabels: Obj }; policyTypes: string[]; ingress: Rule[] };

  it('admits only the gateway\'s pods (namespace and pod selector) to the picker ports and the relay port', () => {
    const r = renderChart(mergeValues(ENDPOINT_PICKER_VALUES, { exportController: { enabled: true } }));
    const p = policy(r);
    const podLabels = (name: string): Obj =>
      (r.objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(name))!.spec as { template: { metadata: { labels: Obj } } }).template.metadata.labels;
    const selects = (labels: Obj): boolean => Object.entries(p.podSelector.matchLabels).every(([k, v]) => labels[k] === v);
    // The router pods, and not the export controller's, which share the release's selector labels.
    expect(selects(podLabels(find(r, 'Service').metadata.name))).toBe(true);
    expect(selects(podLabels('-export-controller'))).toBe(false);
    expect(p.policyTypes).toEqual(['Ingress']);
    const picker = p.ingress.find((x) => x.ports.some((y) => y.port === 9010))!;
    expect(picker.ports.map((y) => y.port)).toEqual([9010, 9011, 8443]);
    expect(picker.from).toEqual([{ namespaceSelector: NETWORK.networkPolicy.gatewayNamespaceSelector, podSelector: NETWORK.networkPolicy.gatewayPodSelector }]);
    // No other rule opens those ports.
    for (const rule of p.ingress.filter((x) => x !== picker)) expect(rule.ports.map((y) => y.port)).not.toEqual(expect.arrayContaining([9010]));
  });

  it('keeps Envoy\'s listener and the admin port as open as without it, unless networkPolicy governs them', () => {
    const alone = policy(renderChart(ENDPOINT_PICKER_VALUES)).ingress;
    expect(alone).toContainEqual({ ports: [{ port: 'http', protocol: 'TCP' }, { port: 'admin', protocol: 'TCP' }] });
    const both = renderChart(mergeValues(ENDPOINT_PICKER_VALUES, { networkPolicy: { enabled: true } }));
    expect(policy(both).ingress).toHaveLength(1);
    expect(both.objects.filter((o) => o.kind === 'NetworkPolicy')).toHaveLength(2);
  });

  it('is not rendered when switched off', () => {
    expect(renderChart(on({ networkPolicy: { enabled: false } })).objects.map((o) => o.kind)).not.toContain('NetworkPolicy');
  });
});

describe('refused values', () => {
  it.each<[string, Obj, RegExp]>([
    ['a picker port the router\'s ext_proc listener holds', on({ ports: [9002] }), /endpointPicker\.ports: 9002 is taken in the pod by the router's ext_proc listener/],
    ['a picker port Envoy\'s listener holds', on({ ports: [8080] }), /endpointPicker\.ports: 8080 is taken in the pod by Envoy's listener/],
    ['a picker port the admin server holds', on({ ports: [9901] }), /endpointPicker\.ports: 9901 is taken in the pod by router\.adminPort/],
    ['a picker port twice', on({ ports: [9010, 9010] }), /endpointPicker\.ports: 9010 is taken in the pod by another endpointPicker\.ports entry/],
    ['a picker port equal to the relay port', on({ ports: [8443] }), /endpointPicker\.ports: 8443 is taken in the pod by endpointPicker\.relay\.port/],
    ['a relay port the relay verifier holds', on({ relay: { port: 9005 } }), /endpointPicker\.relay\.port 9005 is taken in the pod by the relay verifier/],
    ['no picker port', on({ ports: [] }), /endpointPicker\.ports is empty/],
    ['a TLS Secret and plaintext', on({ tls: { secretName: 's', plaintext: true } }), /secretName and plaintext exclude each other/],
    ['relay answers by default without the relay', on({ relay: { enabled: false } }), /defaultAnswer is relay but endpointPicker\.relay\.enabled is false/],
    ['the NetworkPolicy without the gateway\'s namespace', { endpointPicker: { enabled: true } }, /gatewayNamespaceSelector is empty/],
    ['the relay in Parent mode without the remote gateways\' CA (an Envoy bootstrap of your own lifts the schema\'s need for it)', mergeValues(on(), { mode: 'Parent', envoy: { bootstrap: 'static_resources: {}' } }), /endpointPicker\.relay in mode Parent needs envoy\.remoteGatewayCASecret/],
    ['podLabels setting the component that tells the router pods from the export controller\'s', mergeValues(on(), { podLabels: { 'app.kubernetes.io/component': 'inference' } }), /podLabels may not set app\.kubernetes\.io\/component/],
  ])('%s', (_why, values, message) => {
    expect(() => renderChart(values)).toThrow(message);
  });
});
