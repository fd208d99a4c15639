/**
 * values.schema.json: draft-07, strict, accepts values.yaml, mirrors the router config
 * schema (src/config/schema.ts) where values feed the router config, and rejects typos.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { CHART_DIR, defaultValues, mergeValues, readYaml, REPO, type Obj } from './render-chart.js';
import { routerDefinitions } from './router-schema-defs.js';
import { ENDPOINT_PICKER_VALUES, REMOTE_VALUES } from './sample-values.js';

const SCHEMA_FILE = path.join(CHART_DIR, 'values.schema.json');
const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as { definitions: Record<string, unknown> };

if (process.env.UPDATE_CHART_SCHEMA) {
  schema.definitions = { ...schema.definitions, ...routerDefinitions() };
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(schema, null, 2)}\n`);
}

const ajv = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true });
const validate = ajv.compile(schema);

function errorsFor(values: Obj): string[] {
  return validate(values) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

describe('values.schema.json', () => {
  it('is a strict draft-07 schema and values.yaml satisfies it', () => {
    expect((schema as Obj).$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(errorsFor(defaultValues())).toEqual([]);
  });

  it('mirrors the router config schema for every value passed into router.yaml', () => {
    const generated = routerDefinitions();
    for (const [name, def] of Object.entries(generated)) {
      expect(schema.definitions[name], `definitions.${name} is stale: UPDATE_CHART_SCHEMA=1 npx vitest run test/charts`).toEqual(def);
    }
  });

  it('accepts members, per-cluster EPP settings and the unix transport', () => {
    expect(errorsFor(mergeValues(defaultValues(), REMOTE_VALUES))).toEqual([]);
    expect(errorsFor(mergeValues(defaultValues(), { router: { transport: 'unix' } }))).toEqual([]);
    const credentials = { eppTls: { secretName: 'b-epp', ca: true, clientCert: true }, metricsTls: { secretName: 'b-metrics' }, metricsToken: { secretName: 'b-token', key: 'token' } };
    expect(errorsFor(mergeValues(defaultValues(), { localCluster: { credentials }, networkPolicy: { enabled: true, metricsFrom: [{ namespaceSelector: {} }] } }))).toEqual([]);
    expect(errorsFor(mergeValues(defaultValues(), { router: { extraEnv: [{ name: 'NODE_OPTIONS', value: '--max-semi-space-size=8' }] } }))).toEqual([]);
    expect(errorsFor(mergeValues(defaultValues(), { mode: 'Parent', envoy: { remoteGatewayCASecret: 'gw-ca' } }))).toEqual([]);
    expect(errorsFor(mergeValues(defaultValues(), { extProc: { maxMessageBytes: 32 * 1024 * 1024 }, envoy: { bootstrap: 'static_resources: {}' } }))).toEqual([]);
  });

  it('accepts the Endpoint Picker role: relay, direct without the relay, plaintext, a named relay key Secret', () => {
    expect(errorsFor(mergeValues(defaultValues(), ENDPOINT_PICKER_VALUES))).toEqual([]);
    const ns = { gatewayNamespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'nginx-gateway' } } };
    expect(errorsFor(mergeValues(defaultValues(), { endpointPicker: { enabled: true, defaultAnswer: 'direct', relay: { enabled: false }, tls: { plaintext: true }, networkPolicy: ns } }))).toEqual([]);
    expect(errorsFor(mergeValues(defaultValues(), { endpointPicker: { enabled: true, relay: { keySecret: { name: 'k', key: 'hmac' } }, networkPolicy: ns } }))).toEqual([]);
  });

  it('accepts the two-cluster guide\'s values files, alone and layered, with the image install.sh sets', () => {
    const dir = path.join(REPO, 'examples/two-clusters/helm');
    const guide = readYaml(path.join(dir, 'cluster-a-values.yaml')) as Obj;
    const image = { image: { repository: 'registry.example.com/team/mcip-router' } };
    expect(errorsFor(mergeValues(mergeValues(defaultValues(), guide), image))).toEqual([]);
    const verified = mergeValues(guide, readYaml(path.join(dir, 'verified-epp-tls-values.yaml')) as Obj);
    expect(errorsFor(mergeValues(mergeValues(defaultValues(), verified), image))).toEqual([]);
  });

  it.each<[string, Obj, string]>([
    ['a misspelt top-level key', { clustername: 'a' }, ' must NOT have additional properties'],
    ['an unknown mode', { mode: 'Edge' }, '/mode '],
    ['a cluster name that is not an RFC 1123 name', { clusterName: 'Cluster_A' }, '/clusterName '],
    ['no gateways', { gateways: [] }, '/gateways '],
    ['an unknown ext_proc transport', { router: { transport: 'grpc' } }, '/router/transport '],
    ['an admin port taken by Envoy', { router: { adminPort: 19000 } }, '/router/adminPort '],
    ['an extra env var without a name', { router: { extraEnv: [{ value: '2' }] } }, "/router/extraEnv/0 must have required property 'name'"],
    ['an extra env var with a misspelt key', { router: { extraEnv: [{ name: 'A', vaule: '2' }] } }, '/router/extraEnv/0 must NOT have additional properties'],
    ['an extra env var replacing the chart\'s POD_NAMESPACE', { router: { extraEnv: [{ name: 'POD_NAMESPACE', value: 'x' }] } }, '/router/extraEnv/0/name '],
    ['a member without its kubeconfig Secret', { remoteClusters: [{ name: 'cluster-b' }] }, "/remoteClusters/0 must have required property 'kubeconfigSecret'"],
    ['a typo inside a member EPP block', { remoteClusters: [{ name: 'b', kubeconfigSecret: { name: 's' }, epp: { tls: { enable: false } } }] }, '/remoteClusters/0/epp/tls '],
    ['a misspelt credential Secret key', { localCluster: { credentials: { eppTls: { secret: 'x' } } } }, '/localCluster/credentials/eppTls '],
    ['a debug port taken by Envoy', { router: { debugPort: 8080 } }, '/router/debugPort '],
    ['a NetworkPolicy peer list that is not a list', { networkPolicy: { enabled: true, trafficFrom: {} } }, '/networkPolicy/trafficFrom '],
    ['a controller name without a path', { controller: { name: 'mcip-router.dev' } }, '/controller/name '],
    ['a lease name with capitals', { controller: { leaderElection: { leaseName: 'Lease' } } }, '/controller/leaderElection/leaseName '],
    ['an unknown log level', { log: { level: 'verbose' } }, '/log/level '],
    ['a drain timeout that is not an integer', { extProc: { drainTimeoutMs: '15s' } }, '/extProc/drainTimeoutMs '],
    ['Parent mode without the remote gateway CA', { mode: 'Parent' }, '/envoy/remoteGatewayCASecret '],
    ['Parent mode over the unix socket', { mode: 'Parent', envoy: { remoteGatewayCASecret: 'ca' }, router: { transport: 'unix' } }, '/router/transport '],
    ['ext_proc messages larger than the bundled Envoy accepts', { extProc: { maxMessageBytes: 32 * 1024 * 1024 } }, '/extProc/maxMessageBytes '],
    ['a Service type the chart does not render', { service: { type: 'ExternalName' } }, '/service/type '],
    ['an autoscaling CPU target over 100%', { autoscaling: { targetCPUUtilizationPercentage: 150 } }, '/autoscaling/targetCPUUtilizationPercentage '],
    ['an autoscaler that may scale to zero', { autoscaling: { enabled: true, minReplicas: 0 } }, '/autoscaling/minReplicas '],
    ['a misspelt autoscaling key', { autoscaling: { maxReplica: 3 } }, '/autoscaling must NOT have additional properties'],
    ['an unknown Endpoint Picker answer', { endpointPicker: { defaultAnswer: 'proxy' } }, '/endpointPicker/defaultAnswer '],
    ['a picker port out of range', { endpointPicker: { ports: [70000] } }, '/endpointPicker/ports/0 '],
    ['a picker port twice', { endpointPicker: { ports: [9010, 9010] } }, '/endpointPicker/ports '],
    ['a misspelt Endpoint Picker key', { endpointPicker: { port: [9010] } }, '/endpointPicker must NOT have additional properties'],
    ['a picker TLS Secret and plaintext', { endpointPicker: { enabled: true, tls: { secretName: 's', plaintext: true }, networkPolicy: { gatewayNamespaceSelector: { matchLabels: { a: 'b' } } } } }, '/endpointPicker/tls '],
    ['the picker NetworkPolicy without the gateway\'s namespace', { endpointPicker: { enabled: true } }, '/endpointPicker/networkPolicy/gatewayNamespaceSelector '],
    ['relay answers by default without the relay', { endpointPicker: { enabled: true, relay: { enabled: false }, networkPolicy: { enabled: false } } }, '/endpointPicker/relay/enabled '],
    ['a misspelt selector key', { endpointPicker: { networkPolicy: { gatewayPodSelector: { matchLabel: {} } } } }, '/endpointPicker/networkPolicy/gatewayPodSelector '],
  ])('rejects %s', (_why, override, expected) => {
    expect(errorsFor(mergeValues(defaultValues(), override))).toContainEqual(expect.stringContaining(expected));
  });
});
