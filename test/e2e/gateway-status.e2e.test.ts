/**
 * Gateway API status, end to end: the built router (`mcip-router --config`,
 * a child process) in Kubernetes mode against the API server stand-in, read
 * back as `kubectl get gatewayclass,gateway,httproute -o yaml` would show it:
 * our GatewayClass accepted, the Gateway's address and listeners (an HTTPS
 * listener the Envoy cannot terminate reported, not pretended), and every
 * route's status.parents entry with a reason a user can act on, beside
 * another controller's entry.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiServer, writeKubeconfig } from '../harness/kube-apiserver.js';
import { eventually } from '../helpers/eventually.js';
import { pool, route, service } from '../sources/kubernetes/kube-fixtures.js';
import { ensureBuilt, startCli, type ServingRouter } from './cli-process.js';

const ME = 'mcip-router.dev/gateway-controller';
const OTHER = {
  parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'elsewhere' },
  controllerName: 'example.com/other-gateway',
  conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: 'theirs', lastTransitionTime: '2024-01-01T00:00:00Z' }],
};

let api: KubeApiServer;
let router: ServingRouter;

type Condition = { type: string; status: string; reason: string; message: string; observedGeneration?: number; lastTransitionTime: string };
type Status = {
  conditions?: Condition[];
  addresses?: { type: string; value: string }[];
  listeners?: { name: string; attachedRoutes: number; supportedKinds: unknown[]; conditions: Condition[] }[];
  parents?: { parentRef: Record<string, unknown>; controllerName: string; conditions: Condition[] }[];
};
const status = (plural: string, name: string, ns = 'default'): Status => (api.get(plural, ns, name)?.status ?? {}) as unknown as Status;
const brief = (cs: readonly Condition[] | undefined) => (cs ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
const ours = (name: string) => status('httproutes', name).parents?.find((p) => p.controllerName === ME);

function withRoute(name: string, o: { hostnames?: string[]; parentRefs?: object[] }): object {
  const r = route(name, 'gw', [{ kind: 'InferencePool', name: 'llm' }]) as { spec: object };
  return { ...r, spec: { ...r.spec, ...o } };
}

beforeAll(async () => {
  ensureBuilt();
  api = new KubeApiServer();
  await api.start();
  const dir = await mkdtemp(join(tmpdir(), 'mcip-gw-status-'));
  const kubeconfig = await writeKubeconfig(dir, { server: api.url }, 'local.kubeconfig');
  api.create('gatewayclasses', { metadata: { name: 'mcip-envoy' }, spec: { controllerName: ME } });
  api.create('gateways', {
    metadata: { name: 'gw', namespace: 'default' },
    spec: {
      gatewayClassName: 'mcip-envoy',
      listeners: [
        { name: 'http', protocol: 'HTTP', port: 80, hostname: 'llm.example', allowedRoutes: { namespaces: { from: 'Same' } } },
        { name: 'https', protocol: 'HTTPS', port: 443, hostname: 'llm.example', tls: { certificateRefs: [{ name: 'cert' }] } },
      ],
    },
  });
  api.create('services', { ...(service('envoy', 'mcip') as object), spec: { type: 'LoadBalancer', clusterIP: '10.0.0.80', ports: [{ port: 80 }] } });
  api.updateStatus('services', { ...api.get('services', 'mcip', 'envoy')!, status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } });
  api.create('inferencepools', pool('llm'));
  api.create('services', service('llm-epp'));
  api.create('httproutes', withRoute('ok', {}));
  api.create('httproutes', withRoute('wrong-host', { hostnames: ['other.example'] }));
  api.create('httproutes', withRoute('no-section', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }] }));
  api.create('httproutes', withRoute('shared', {}));
  api.updateStatus('httproutes', { ...api.get('httproutes', 'default', 'shared')!, status: { parents: [OTHER] } });
  const configFile = join(dir, 'router.yaml');
  await writeFile(
    configFile,
    stringify({
      clusterName: 'cluster-a',
      listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' },
      gateways: [{ namespace: 'default', name: 'gw' }],
      gatewayListeners: { ports: [80] },
      clusters: [{ name: 'cluster-a', kubernetes: { kubeconfig }, epp: { tls: { enabled: false }, metrics: { enabled: false } } }],
      kubernetes: { coalesceMs: 20, coalesceMaxMs: 200, initialSyncTimeoutMs: 3000 },
      controller: {
        resyncMs: 1000,
        gatewayStatus: { addressService: { namespace: 'mcip', name: 'envoy' } },
        leaderElection: { leaseNamespace: 'default', leaseDurationMs: 1500, renewDeadlineMs: 1000, retryPeriodMs: 200 },
      },
    }),
  );
  router = await startCli(['--config', configFile]);
}, 120_000);

afterAll(async () => {
  router?.child.kill('SIGTERM');
  await router?.exited;
  await api?.close();
});

describe('Gateway API status (router in Kubernetes mode)', () => {
  it('accepts our GatewayClass', async () => {
    await eventually(() => expect(brief(status('gatewayclasses', 'mcip-envoy', '').conditions)).toEqual(['Accepted=True/Accepted']), 10_000);
  });

  it('the Gateway: address of the Envoy Service, accepted with the HTTPS listener reported as not served', async () => {
    const gw = await eventually(() => {
      const s = status('gateways', 'gw');
      expect(s.listeners?.[0]?.attachedRoutes).toBe(2);
      return s;
    }, 10_000);
    expect(gw.addresses).toEqual([{ type: 'IPAddress', value: '203.0.113.7' }]);
    expect(brief(gw.conditions)).toEqual(['Accepted=True/ListenersNotValid', 'Programmed=True/Programmed']);
    expect(gw.conditions?.every((c) => c.observedGeneration === 1 && c.lastTransitionTime !== '')).toBe(true);
    const [http, https] = gw.listeners!;
    expect(brief(http!.conditions)).toEqual(['Accepted=True/Accepted', 'Conflicted=False/NoConflicts', 'Programmed=True/Programmed', 'ResolvedRefs=True/ResolvedRefs']);
    expect(https!.supportedKinds).toEqual([]);
    expect(brief(https!.conditions)).toEqual(['Accepted=False/UnsupportedProtocol', 'Conflicted=False/NoConflicts', 'Programmed=False/Invalid', 'ResolvedRefs=True/ResolvedRefs']);
    expect(https!.conditions[0]!.message).toContain('does not terminate TLS');
  });

  it('every route gets our status.parents entry with a reason a user can act on; another controller\'s entry stays', async () => {
    await eventually(() => expect(['ok', 'wrong-host', 'no-section', 'shared'].filter((r) => ours(r) === undefined)).toEqual([]), 10_000);
    expect(ours('ok')?.parentRef).toEqual({ group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'default', name: 'gw' });
    expect(brief(ours('ok')?.conditions)).toEqual(['Accepted=True/Accepted', 'ResolvedRefs=True/ResolvedRefs']);
    expect(brief(ours('wrong-host')?.conditions)).toEqual(['Accepted=False/NoMatchingListenerHostname', 'ResolvedRefs=True/ResolvedRefs']);
    expect(ours('wrong-host')?.conditions[0]?.message).toContain('other.example');
    expect(brief(ours('no-section')?.conditions)).toEqual(['Accepted=False/NoMatchingParent', 'ResolvedRefs=True/ResolvedRefs']);
    expect(ours('no-section')?.parentRef).toMatchObject({ name: 'gw', sectionName: 'grpc' });
    expect(status('httproutes', 'shared').parents?.map((p) => p.controllerName)).toEqual([OTHER.controllerName, ME]);
    expect(status('httproutes', 'shared').parents?.[0]).toEqual(OTHER);
  });

  it('/debug/sources and /metrics show the Gateway status writer: leader, controller name and write outcomes', async () => {
    const res = await request(`http://${router.admin}/debug/sources`);
    const body = (await res.body.json()) as { gatewayStatus: { leader: boolean; controllerName: string; writes: Record<string, number> } };
    expect(body.gatewayStatus).toMatchObject({ leader: true, controllerName: ME });
    expect(body.gatewayStatus.writes.written).toBeGreaterThanOrEqual(6);
    expect(body.gatewayStatus.writes.errors).toBe(0);
    const metrics = await (await request(`http://${router.admin}/metrics`)).body.text();
    const written = /^mcip_gateway_status_writes_total\{result="written"\} (\d+)$/m.exec(metrics);
    expect(Number(written?.[1])).toBeGreaterThanOrEqual(6);
  });
});
