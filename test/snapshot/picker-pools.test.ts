import { describe, expect, it } from 'vitest';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import type { GatewayClass, InferencePool, KubeObject } from '../../src/model/types.js';
import { formatRoutingTable } from '../../src/snapshot/describe.js';
import { build, config, gateway, LOCAL, localPool, meta, NS, parentRef, pool, poolImport, service } from './fixtures.js';

function pickerConfig(o: { ports?: number[]; defaultAnswer?: 'direct' | 'relay'; mode?: 'Endpoint' | 'Parent' } = {}): RouterConfig {
  const base = config(o.mode ? { mode: o.mode } : {});
  return namedConfig(routerConfigSchema.parse({
    ...base,
    endpointPicker: { namespace: NS, serviceName: 'mcip-router', ports: o.ports ?? [9100, 9101], defaultAnswer: o.defaultAnswer ?? 'direct' },
  }));
}

/** A multi-cluster pool naming the router's Service on `port`. */
function mcPool(name: string, port: number | null, annotations: Record<string, string>, o: { targetPorts?: number[]; parents?: string[] } = {}): InferencePool {
  const p = pool(name, { epp: 'mcip-router', eppPort: port, ...(o.targetPorts ? { targetPorts: o.targetPorts } : {}), ...(o.parents ? { parents: o.parents.map((g) => parentRef(g)) } : {}) });
  return { ...p, metadata: { ...p.metadata, annotations } };
}

function gatewayClass(name: string, controllerName: string): GatewayClass {
  return { kind: 'GatewayClass', apiVersion: 'gateway.networking.k8s.io/v1', metadata: meta(name, 'default'), spec: { controllerName } };
}

const BACKENDS = 'mcip-router.dev/backends';
const ANSWER = 'mcip-router.dev/answer';
const backing: KubeObject[] = [...localPool('llm'), poolImport('llm', [['cluster-b']])];
const remote: KubeObject[] = [pool('llm', { exported: true }), service('llm-epp')];

function run(cfg: RouterConfig, objects: KubeObject[]) {
  return build(cfg, { [LOCAL]: [...backing, ...objects], 'cluster-b': remote });
}

function gatewayOf(name: string, className: string) {
  const g = gateway(name);
  return { ...g, spec: { ...g.spec, gatewayClassName: className } };
}

describe('multi-cluster pools (the Endpoint Picker role)', () => {
  it('turns a pool into a rule of its backends keyed by its picker port, like an HTTPRoute rule', () => {
    const { snapshot, diagnostics } = run(pickerConfig(), [mcPool('llm-mc', 9100, { [BACKENDS]: 'InferencePool/llm=1, InferencePoolImport/llm=3' })]);
    const p = snapshot.pickerPools?.get(9100);
    expect(p).toMatchObject({ port: 9100, pool: { namespace: NS, name: 'llm-mc' }, answer: 'direct', rule: { kind: 'InferencePool', totalWeight: 4 } });
    expect(p!.rule.backends.map((g) => [g.ref.kind, g.weight, g.candidates.map((c) => c.id)])).toEqual([
      ['InferencePool', 1, [`${LOCAL}/${NS}/llm`]],
      ['InferencePoolImport', 3, [`cluster-b/${NS}/llm`]],
    ]);
    expect([...snapshot.candidates.keys()].sort()).toEqual([`${LOCAL}/${NS}/llm`, `cluster-b/${NS}/llm`]);
    expect(diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(formatRoutingTable(snapshot, diagnostics)).toContain(`InferencePool/${NS}/llm-mc  picker port 9100  answer direct`);
  });

  it('leaves nothing bound when the role is off (no ports), whatever the pools say', () => {
    const { snapshot } = run(pickerConfig({ ports: [] }), [mcPool('llm-mc', 9100, { [BACKENDS]: 'InferencePool/llm' })]);
    expect(snapshot.pickerPools).toBeUndefined();
  });

  it.each<[string, string | undefined, string, string]>([
    ['no backends annotation', undefined, 'BackendsMissing', BACKENDS],
    ['an empty list', ' ', 'BackendsEmpty', 'lists no backend'],
    ['an unparseable entry', 'InferencePool/llm=1, llm', 'BackendInvalid', '"llm"'],
    ['an unknown kind', 'Service/llm', 'BackendKindUnknown', '"Service/llm"'],
    ['a duplicate', 'InferencePool/llm, InferencePool/llm=2', 'BackendDuplicate', 'InferencePool/llm is listed twice'],
    ['a weight out of range', 'InferencePool/llm=1000001', 'BackendWeightInvalid', '"InferencePool/llm=1000001"'],
    ['all weights 0', 'InferencePool/llm=0, InferencePoolImport/llm=0', 'BackendsNoWeight', 'weight 0'],
    ['another namespace', 'InferencePool/other/llm', 'BackendInvalid', '"InferencePool/other/llm"'],
  ])('refuses %s: only that pool is left out, with an error naming pool, annotation and entry', (_what, value, reason, fragment) => {
    const bad = mcPool('bad', 9101, value === undefined ? {} : { [BACKENDS]: value });
    const { snapshot, diagnostics } = run(pickerConfig(), [bad, mcPool('good', 9100, { [BACKENDS]: 'InferencePool/llm' })]);
    expect([...(snapshot.pickerPools?.keys() ?? [])]).toEqual([9100]);
    const d = diagnostics.find((x) => x.subject === `${LOCAL}: InferencePool ${NS}/bad`);
    expect(d).toMatchObject({ severity: 'error', reason, path: `metadata.annotations["${BACKENDS}"]` });
    expect(d!.message).toContain(fragment);
  });

  it('refuses a backend that is itself a multi-cluster pool of this router (a cycle)', () => {
    const { snapshot, diagnostics } = run(pickerConfig(), [
      mcPool('a', 9100, { [BACKENDS]: 'InferencePool/b' }),
      mcPool('b', 9101, { [BACKENDS]: 'InferencePool/llm' }),
    ]);
    expect([...(snapshot.pickerPools?.keys() ?? [])]).toEqual([9101]);
    expect(diagnostics.find((d) => d.reason === 'BackendCycle')).toMatchObject({ subject: `${LOCAL}: InferencePool ${NS}/a` });
  });

  it('leaves out both pools claiming one port, and a pool on a port the router does not serve', () => {
    const { snapshot, diagnostics } = run(pickerConfig(), [
      mcPool('x', 9100, { [BACKENDS]: 'InferencePool/llm' }),
      mcPool('y', 9100, { [BACKENDS]: 'InferencePool/llm' }),
      mcPool('z', 9200, { [BACKENDS]: 'InferencePool/llm' }),
    ]);
    expect(snapshot.pickerPools).toBeUndefined();
    expect(diagnostics.filter((d) => d.reason === 'PickerPortConflict').map((d) => d.subject)).toEqual([`${LOCAL}: InferencePool ${NS}/x`, `${LOCAL}: InferencePool ${NS}/y`]);
    expect(diagnostics.find((d) => d.reason === 'PickerPortUnknown')).toMatchObject({ subject: `${LOCAL}: InferencePool ${NS}/z`, path: 'spec.endpointPickerRef.port.number' });
  });

  it('refuses a pool that names the router without a port (gateways would default to 9002)', () => {
    const { diagnostics } = run(pickerConfig(), [mcPool('noport', null, { [BACKENDS]: 'InferencePool/llm' })]);
    const d = diagnostics.find((x) => x.reason === 'PickerPortMissing')!;
    expect(d).toMatchObject({ severity: 'error', subject: `${LOCAL}: InferencePool ${NS}/noport`, path: 'spec.endpointPickerRef.port' });
    expect(d.message).toContain('9002');
  });

  it('refuses an answer annotation it does not know, and a relay pool whose targetPorts lack the relay port', () => {
    const { snapshot, diagnostics } = run(pickerConfig(), [
      mcPool('odd', 9100, { [BACKENDS]: 'InferencePool/llm', [ANSWER]: 'proxy' }),
      mcPool('relay', 9101, { [BACKENDS]: 'InferencePool/llm', [ANSWER]: 'relay' }, { targetPorts: [8000] }),
    ]);
    expect(snapshot.pickerPools).toBeUndefined();
    expect(diagnostics.find((d) => d.reason === 'AnswerInvalid')).toMatchObject({ path: `metadata.annotations["${ANSWER}"]` });
    expect(diagnostics.find((d) => d.reason === 'RelayPortNotTargeted')!.message).toContain('8443');
  });

  it.each([
    ['istio.io/gateway-controller', 'Istio'],
    ['agentgateway.dev/agentgateway', 'agentgateway'],
    ['kgateway.dev/kgateway', 'kgateway'],
    ['kgateway.dev/agentgateway', 'agentgateway (kgateway)'],
  ])('refuses a direct answer to a gateway of %s (it needs a relay); a relay answer to it serves', (controller, name) => {
    const objects = [gatewayClass('cls', controller), gatewayOf('gw', 'cls')];
    const direct = run(pickerConfig(), [...objects, mcPool('p', 9100, { [BACKENDS]: 'InferencePool/llm' }, { parents: ['gw'] })]);
    expect(direct.snapshot.pickerPools).toBeUndefined();
    const d = direct.diagnostics.find((x) => x.reason === 'DirectAnswerMisroutes')!;
    expect(d).toMatchObject({ severity: 'error', subject: `${LOCAL}: InferencePool ${NS}/p` });
    expect(d.message).toContain(`Gateway ${NS}/gw (GatewayClass cls, controller ${controller}: ${name})`);
    const relay = run(pickerConfig(), [...objects, mcPool('p', 9100, { [BACKENDS]: 'InferencePool/llm', [ANSWER]: 'relay' }, { parents: ['gw'], targetPorts: [8443] })]);
    expect(relay.snapshot.pickerPools?.get(9100)?.gateways).toEqual([{ gateway: `${NS}/gw`, controller }]);
  });

  it('refuses a relay answer to NGINX Gateway Fabric (it drops the token); a direct answer to it serves', () => {
    const controller = 'gateway.nginx.org/nginx-gateway-controller';
    const objects = [gatewayClass('ngf', controller), gatewayOf('gw', 'ngf')];
    const relay = run(pickerConfig(), [...objects, mcPool('p', 9100, { [BACKENDS]: 'InferencePool/llm', [ANSWER]: 'relay' }, { parents: ['gw'], targetPorts: [8443] })]);
    expect(relay.snapshot.pickerPools).toBeUndefined();
    const d = relay.diagnostics.find((x) => x.reason === 'RelayAnswerDropped')!;
    expect(d).toMatchObject({ severity: 'error', subject: `${LOCAL}: InferencePool ${NS}/p`, path: `metadata.annotations["${ANSWER}"]` });
    expect(d.message).toContain(`controller ${controller}: NGINX Gateway Fabric`);
    const direct = run(pickerConfig(), [...objects, mcPool('p', 9100, { [BACKENDS]: 'InferencePool/llm', [ANSWER]: 'direct' }, { parents: ['gw'] })]);
    expect(direct.snapshot.pickerPools?.get(9100)?.gateways).toEqual([{ gateway: `${NS}/gw`, controller }]);
  });

  it('lets direct answers go to gateways that follow any address, and says when it cannot tell', () => {
    const objects = [gatewayClass('aigw', 'gateway.envoyproxy.io/gatewayclass-controller'), gatewayOf('gw', 'aigw')];
    const { snapshot, diagnostics } = run(pickerConfig(), [
      ...objects,
      mcPool('p', 9100, { [BACKENDS]: 'InferencePool/llm' }, { parents: ['gw'] }),
      mcPool('q', 9101, { [BACKENDS]: 'InferencePool/llm' }, { parents: ['elsewhere'] }),
    ]);
    expect([...(snapshot.pickerPools?.keys() ?? [])].sort()).toEqual([9100, 9101]);
    expect(diagnostics.find((d) => d.reason === 'GatewayNotDetected')).toMatchObject({ severity: 'info', subject: `${LOCAL}: InferencePool ${NS}/q` });
  });
});
