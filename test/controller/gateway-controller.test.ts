/**
 * Gateway API status end to end against the API server stand-in:
 * KubernetesSource -> snapshot builder -> controller loop (two replicas,
 * leader election) -> the Gateway status duty's writes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { routerConfigSchema, type RouterConfig } from '../../src/config/schema.js';
import { namedConfig } from '../../src/config/local-name.js';
import { createGatewayStatusDuty, type GatewayStatusDuty } from '../../src/controller/gateway-controller.js';
import { createGatewayStatusClient } from '../../src/controller/gateway-status-client.js';
import type { RawCondition } from '../../src/controller/import-status.js';
import { loadKubeConfig } from '../../src/sources/kubernetes/kubeconfig.js';
import { KubeEnv, gateway, pool, route, service, silent, sleep, waitFor } from '../sources/kubernetes/kube-fixtures.js';
import { Replica } from './controller-replica.js';

const ME = 'mcip-router.dev/gateway-controller';

function config(env: KubeEnv, identity: string): RouterConfig {
  return namedConfig(routerConfigSchema.parse({
    clusterName: 'cluster-a',
    gateways: [{ namespace: 'default', name: 'gw' }],
    gatewayListeners: { ports: [8080] },
    clusters: [{ name: 'cluster-a', kubernetes: { kubeconfig: env.kubeconfig } }],
    controller: {
      gatewayStatus: { addressService: { namespace: 'default', name: 'envoy' } },
      leaderElection: { leaseNamespace: 'mcip', leaseDurationMs: 1000, renewDeadlineMs: 600, retryPeriodMs: 100, identity },
    },
  }));
}

let env: KubeEnv;
const replicas: { replica: Replica; duty: GatewayStatusDuty }[] = [];
beforeEach(async () => {
  env = await new KubeEnv().start();
  env.server.create('gatewayclasses', { metadata: { name: 'mcip' }, spec: { controllerName: ME } });
  env.server.create('gatewayclasses', { metadata: { name: 'theirs' }, spec: { controllerName: 'example.com/other' } });
  env.server.create('gateways', { ...(gateway('gw') as { spec: object }), spec: { gatewayClassName: 'mcip', listeners: [{ name: 'http', protocol: 'HTTP', port: 8080, hostname: 'llm.example' }] } });
  env.server.create('services', service('envoy', 'default', '10.0.0.80'));
  env.server.create('inferencepools', pool('llm'));
  env.server.create('services', service('llm-epp'));
  env.server.create('httproutes', route('r1', 'gw', [{ kind: 'InferencePool', name: 'llm' }]));
});
afterEach(async () => {
  await Promise.all(replicas.splice(0).map((r) => r.replica.stop()));
  await env.close();
});

async function replica(identity: string) {
  const cfg = config(env, identity);
  const duty = createGatewayStatusDuty({ config: cfg, client: createGatewayStatusClient(loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] })), logger: silent });
  const r = { replica: await new Replica(env, cfg, [duty]).start(), duty };
  replicas.push(r);
  return r;
}

type Status = { conditions?: RawCondition[]; addresses?: unknown[]; listeners?: { name: string; attachedRoutes: number; conditions: RawCondition[] }[]; parents?: { controllerName: string; conditions: RawCondition[] }[] };
const status = (plural: string, name: string, ns = 'default'): Status => (env.server.get(plural, ns, name)?.status ?? {}) as unknown as Status;
const brief = (cs: readonly RawCondition[] | undefined) => (cs ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
const ourRouteEntry = () => status('httproutes', 'r1').parents?.find((p) => p.controllerName === ME);
const statusWrites = () => ['gatewayclasses', 'gateways', 'httproutes'].reduce((n, p) => n + env.server.writes(p, 'status').length, 0);

describe('Gateway status duty (end to end)', () => {
  it('writes GatewayClass, Gateway and HTTPRoute status, converges, and follows route changes', async () => {
    await replica('replica-a');
    await waitFor(() => ourRouteEntry(), 3000, 'route entry');
    await waitFor(() => status('gateways', 'gw').listeners?.[0]?.attachedRoutes === 1, 2000, 'attached route counted');
    expect(brief(status('gatewayclasses', 'mcip', '').conditions)).toEqual(['Accepted=True/Accepted']);
    expect(status('gatewayclasses', 'theirs', '').conditions).toBeUndefined();
    const gw = status('gateways', 'gw');
    expect(gw.addresses).toEqual([{ type: 'IPAddress', value: '10.0.0.80' }]);
    expect(brief(gw.conditions)).toEqual(['Accepted=True/Accepted', 'Programmed=True/Programmed']);
    expect(brief(gw.listeners?.[0]?.conditions)).toEqual(['Accepted=True/Accepted', 'Conflicted=False/NoConflicts', 'Programmed=True/Programmed', 'ResolvedRefs=True/ResolvedRefs']);
    expect(brief(ourRouteEntry()?.conditions)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs']);

    // Converged: an unrelated change makes new snapshots but no status write.
    const settled = statusWrites();
    env.server.create('services', service('unrelated'));
    await sleep(400);
    expect(statusWrites()).toBe(settled);

    // The route asks for a hostname the listener does not serve: Accepted False with the upstream reason, no longer counted.
    const r1 = env.server.get('httproutes', 'default', 'r1')!;
    env.server.update('httproutes', { ...r1, spec: { ...(r1.spec as object), hostnames: ['other.example'] } });
    await waitFor(() => ourRouteEntry()?.conditions[0]?.reason === 'NoMatchingListenerHostname', 2000, 'route refused');
    expect(ourRouteEntry()?.conditions[0]).toMatchObject({ status: 'False', observedGeneration: 2 });
    await waitFor(() => status('gateways', 'gw').listeners?.[0]?.attachedRoutes === 0, 2000, 'no longer counted');
  });

  it('two replicas: only the leader writes; when it stops the other takes over', async () => {
    const a = await replica('replica-a');
    await waitFor(() => a.replica.controller?.isLeader(), 2000, 'a leads');
    const b = await replica('replica-b');
    await waitFor(() => ourRouteEntry(), 3000, 'route entry');
    await waitFor(() => a.duty.counts().written >= 3, 2000, 'a wrote class, gateway and route');
    await sleep(300);
    expect(b.replica.controller?.isLeader()).toBe(false);
    expect(b.duty.counts()).toMatchObject({ written: 0, unchanged: 0, errors: 0 });

    await a.replica.stop();
    await waitFor(() => b.replica.controller?.isLeader(), 2000, 'b leads');
    const r1 = env.server.get('httproutes', 'default', 'r1')!;
    env.server.update('httproutes', { ...r1, spec: { ...(r1.spec as object), parentRefs: [{ name: 'gw', sectionName: 'missing' }] } });
    await waitFor(() => ourRouteEntry()?.conditions[0]?.reason === 'NoMatchingParent', 3000, 'b wrote the change');
    expect(b.duty.counts().written).toBeGreaterThan(0);
  });
});
