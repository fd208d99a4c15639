/** GatewayStatusWriter against the API server stand-in over real HTTP. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGatewayStatusClient } from '../../src/controller/gateway-status-client.js';
import type { ClassPlan, GatewayPlan } from '../../src/controller/gateway-status.js';
import { GatewayStatusWriter } from '../../src/controller/gateway-status-writer.js';
import type { RawCondition } from '../../src/controller/import-status.js';
import type { RawRouteParentStatus, RoutePlan } from '../../src/controller/route-status.js';
import { decodeObject } from '../../src/model/decode.js';
import type { HTTPRoute } from '../../src/model/types.js';
import { loadKubeConfig } from '../../src/sources/kubernetes/kubeconfig.js';
import { KubeEnv, gateway, route, silent } from '../sources/kubernetes/kube-fixtures.js';

const ME = 'mcip-router.dev/gateway-controller';
const GW_REF = { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' };
const THEIRS = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' },
  controllerName: 'example.com/other-gateway',
  conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'theirs', lastTransitionTime: '2024-01-01T00:00:00Z' }],
};
/** Ours, but for a Gateway this router does not serve: not ours to touch. */
const OURS_ELSEWHERE = { ...THEIRS, parentRef: { ...THEIRS.parentRef, name: 'other-gw' }, controllerName: ME };

const cond = (type: string, ok: boolean, reason: string, message = reason): RawCondition => ({
  type,
  status: ok ? 'True' : 'False',
  reason,
  message,
  observedGeneration: 1,
  lastTransitionTime: '',
});

function routePlan(parents: RawRouteParentStatus[]): RoutePlan {
  return { namespace: 'default', name: 'r', generation: 1, parents, owned: new Set(['default/gw']) };
}
const entry = (accepted = true, reason = accepted ? 'Accepted' : 'NoMatchingListenerHostname'): RawRouteParentStatus => ({
  parentRef: GW_REF,
  controllerName: ME,
  conditions: [cond('Accepted', accepted, reason), cond('ResolvedRefs', true, 'ResolvedRefs')],
});

function gatewayPlan(programmed = true): GatewayPlan {
  return {
    namespace: 'default',
    name: 'gw',
    generation: 1,
    status: {
      addresses: [{ type: 'IPAddress', value: '10.0.0.9' }],
      conditions: [cond('Accepted', true, 'Accepted'), cond('Programmed', programmed, programmed ? 'Programmed' : 'AddressNotAssigned')],
      listeners: [
        {
          name: 'http',
          supportedKinds: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }],
          attachedRoutes: 1,
          conditions: [cond('Accepted', true, 'Accepted'), cond('Programmed', true, 'Programmed')],
        },
      ],
    },
  };
}

let env: KubeEnv;
let writer: GatewayStatusWriter;
let clock = '2025-01-01T00:00:00Z';
beforeEach(async () => {
  env = await new KubeEnv().start();
  const kc = loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] });
  clock = '2025-01-01T00:00:00Z';
  writer = new GatewayStatusWriter({ client: createGatewayStatusClient(kc), controllerName: ME, logger: silent, now: () => clock });
  env.server.create('gateways', gateway('gw'));
  env.server.create('httproutes', route('r', 'gw', [{ kind: 'InferencePool', name: 'llm' }]));
  env.server.updateStatus('httproutes', { ...env.server.get('httproutes', 'default', 'r')!, status: { parents: [THEIRS, OURS_ELSEWHERE] } });
  env.server.updateStatus('gateways', {
    ...env.server.get('gateways', 'default', 'gw')!,
    status: { conditions: [{ type: 'example.com/Policy', status: 'True', reason: 'Set', message: 'x', lastTransitionTime: '2024-01-01T00:00:00Z' }] },
  });
});
afterEach(async () => {
  await env.close();
});

const live = (plural: string, name: string) => env.server.get(plural, plural === 'gatewayclasses' ? '' : 'default', name)!;
const parents = () => (live('httproutes', 'r').status as { parents: Record<string, unknown>[] }).parents;
const writes = (plural: string) => env.server.writes(plural, 'status').length;
/** The route as the router's cache would hold it (decoded from the live object). */
function cached(): HTTPRoute {
  const d = decodeObject(live('httproutes', 'r'));
  if (d.type !== 'ok' || d.object.kind !== 'HTTPRoute') throw new Error('route does not decode');
  return d.object;
}

describe('GatewayStatusWriter: HTTPRoute', () => {
  it('adds our entry with a merge-patch of /status; other controllers\' entries and ours for unserved Gateways stay as read', async () => {
    const r = await writer.applyRoute(routePlan([entry()]), undefined);
    expect(r.outcome).toBe('written');
    expect(parents()).toEqual([THEIRS, OURS_ELSEWHERE, { ...entry(), conditions: entry().conditions.map((c) => ({ ...c, lastTransitionTime: clock })) }]);
    expect(env.server.writes('httproutes', 'status')[0]?.contentType).toBe('application/merge-patch+json');
    expect(live('httproutes', 'r').metadata.generation).toBe(1);
  });

  it('no request at all when the cached route shows the plan; no write when only the live one does', async () => {
    await writer.applyRoute(routePlan([entry()]), undefined);
    const before = env.server.requests.length;
    const fromCache = await writer.applyRoute(routePlan([entry()]), cached());
    expect(fromCache).toMatchObject({ outcome: 'unchanged', requests: 0 });
    expect(env.server.requests.length).toBe(before);
    const fromLive = await writer.applyRoute(routePlan([entry()]), undefined);
    expect(fromLive).toMatchObject({ outcome: 'unchanged', requests: 1 });
    expect(writes('httproutes')).toBe(1);
  });

  it('keeps lastTransitionTime while a condition holds, moves it when the status flips', async () => {
    await writer.applyRoute(routePlan([entry()]), undefined);
    clock = '2025-01-02T00:00:00Z';
    await writer.applyRoute(routePlan([{ ...entry(), conditions: [cond('Accepted', true, 'Accepted', 'new message'), cond('ResolvedRefs', true, 'ResolvedRefs')] }]), undefined);
    const mine = () => parents().find((p) => p.controllerName === ME && (p.parentRef as { name: string }).name === 'gw') as { conditions: RawCondition[] };
    expect(mine().conditions.map((c) => [c.message, c.lastTransitionTime])).toEqual([['new message', '2025-01-01T00:00:00Z'], ['ResolvedRefs', '2025-01-01T00:00:00Z']]);
    clock = '2025-01-03T00:00:00Z';
    await writer.applyRoute(routePlan([entry(false)]), undefined);
    expect(mine().conditions.map((c) => [c.status, c.reason, c.lastTransitionTime])).toEqual([['False', 'NoMatchingListenerHostname', '2025-01-03T00:00:00Z'], ['True', 'ResolvedRefs', '2025-01-01T00:00:00Z']]);
  });

  it('removes our entry when the plan has none; the others stay', async () => {
    await writer.applyRoute(routePlan([entry()]), undefined);
    const r = await writer.applyRoute(routePlan([]), cached());
    expect(r.outcome).toBe('written');
    expect(parents()).toEqual([THEIRS, OURS_ELSEWHERE]);
  });

  it('a 409 (another controller wrote in between) is retried on the current resourceVersion, keeping their change', async () => {
    let raced = false;
    env.server.onWrite((ctx) => {
      if (raced || ctx.plural !== 'httproutes') return;
      raced = true;
      const now = live('httproutes', 'r');
      env.server.updateStatus('httproutes', { ...now, status: { parents: [THEIRS, OURS_ELSEWHERE, { ...THEIRS, controllerName: 'example.com/third' }] } });
    });
    const r = await writer.applyRoute(routePlan([entry()]), undefined);
    expect(r).toMatchObject({ outcome: 'written', requests: 4 });
    expect(parents().map((p) => p.controllerName)).toEqual(['example.com/other-gateway', ME, 'example.com/third', ME]);
  });

  it('leaves a route whose live generation is newer than the plan for the next reconcile', async () => {
    env.server.update('httproutes', { ...live('httproutes', 'r'), spec: { parentRefs: [{ name: 'gw' }], hostnames: ['new.example.com'] } });
    const r = await writer.applyRoute(routePlan([entry()]), undefined);
    expect(r.outcome).toBe('stale');
    expect(writes('httproutes')).toBe(0);
  });
});

describe('GatewayStatusWriter: Gateway and GatewayClass', () => {
  it('writes addresses, our conditions and listeners; condition types of others stay in place', async () => {
    const r = await writer.applyGateway(gatewayPlan(), undefined);
    expect(r.outcome).toBe('written');
    const status = live('gateways', 'gw').status as unknown as { addresses: unknown; conditions: RawCondition[]; listeners: { name: string; attachedRoutes: number; conditions: RawCondition[] }[] };
    expect(status.addresses).toEqual([{ type: 'IPAddress', value: '10.0.0.9' }]);
    expect(status.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration ?? null, c.lastTransitionTime])).toEqual([
      ['example.com/Policy', 'True', 'Set', null, '2024-01-01T00:00:00Z'],
      ['Accepted', 'True', 'Accepted', 1, clock],
      ['Programmed', 'True', 'Programmed', 1, clock],
    ]);
    expect(status.listeners.map((l) => [l.name, l.attachedRoutes, l.conditions.length])).toEqual([['http', 1, 2]]);
  });

  it('no request when neither the plan nor the Gateway changed since the last write; a change is written with times carried', async () => {
    await writer.applyGateway(gatewayPlan(), undefined);
    const rv = String(live('gateways', 'gw').metadata.resourceVersion);
    const before = env.server.requests.length;
    expect(await writer.applyGateway(gatewayPlan(), rv)).toMatchObject({ outcome: 'unchanged', requests: 0 });
    expect(env.server.requests.length).toBe(before);
    // The cached object moved on (someone else wrote): one GET, no write.
    expect(await writer.applyGateway(gatewayPlan(), 'other')).toMatchObject({ outcome: 'unchanged', requests: 1 });
    clock = '2025-02-01T00:00:00Z';
    expect((await writer.applyGateway(gatewayPlan(false), rv)).outcome).toBe('written');
    const conditions = (live('gateways', 'gw').status as unknown as { conditions: RawCondition[] }).conditions;
    expect(conditions.map((c) => [c.type, c.status, c.lastTransitionTime])).toEqual([
      ['example.com/Policy', 'True', '2024-01-01T00:00:00Z'],
      ['Accepted', 'True', '2025-01-01T00:00:00Z'],
      ['Programmed', 'False', '2025-02-01T00:00:00Z'],
    ]);
    expect(writes('gateways')).toBe(2);
  });

  it('GatewayClass: Accepted merged into the listed object\'s conditions (the CRD default Pending replaced), once', async () => {
    env.server.create('gatewayclasses', {
      metadata: { name: 'mcip' },
      spec: { controllerName: ME },
      status: {},
    });
    env.server.updateStatus('gatewayclasses', {
      ...live('gatewayclasses', 'mcip'),
      status: { conditions: [{ type: 'Accepted', status: 'Unknown', reason: 'Pending', message: 'Waiting for controller', lastTransitionTime: '1970-01-01T00:00:00Z' }] },
    });
    const plan: ClassPlan = { name: 'mcip', conditions: [cond('Accepted', true, 'Accepted', `handled by ${ME}`)] };
    expect(await writer.applyClass(plan, live('gatewayclasses', 'mcip'))).toMatchObject({ outcome: 'written', requests: 1 });
    expect((live('gatewayclasses', 'mcip').status as unknown as { conditions: RawCondition[] }).conditions).toEqual([{ ...plan.conditions[0], lastTransitionTime: clock }]);
    expect(await writer.applyClass(plan, live('gatewayclasses', 'mcip'))).toMatchObject({ outcome: 'unchanged', requests: 0 });
  });
});
