/** The Gateway API status client against the API server stand-in over real HTTP. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGatewayStatusClient, type GatewayStatusClient } from '../../src/controller/gateway-status-client.js';
import { httpStatusOf } from '../../src/sources/kubernetes/api-errors.js';
import { loadKubeConfig } from '../../src/sources/kubernetes/kubeconfig.js';
import { KubeEnv, gateway } from '../sources/kubernetes/kube-fixtures.js';

let env: KubeEnv;
let client: GatewayStatusClient;
beforeEach(async () => {
  env = await new KubeEnv().start();
  client = createGatewayStatusClient(loadKubeConfig({ kubeconfig: env.kubeconfig, namespaces: [] }));
});
afterEach(async () => {
  await env.close();
});

describe('GatewayStatusClient', () => {
  it('lists every GatewayClass, page by page', async () => {
    for (let i = 0; i < 501; i++) env.server.create('gatewayclasses', { metadata: { name: `c${String(i).padStart(3, '0')}` }, spec: { controllerName: 'example.com/x' } });
    const classes = await client.listClasses();
    expect(classes).toHaveLength(501);
    expect(classes[500]?.metadata?.name).toBe('c500');
    expect(env.server.requests.filter((r) => r.plural === 'gatewayclasses' && r.method === 'GET')).toHaveLength(2);
  });

  it('gets with status (undefined when absent) and merge-patches /status; a stale resourceVersion rejects with 409', async () => {
    expect(await client.get('Gateway', 'default', 'gw')).toBeUndefined();
    const created = env.server.create('gateways', gateway('gw'));
    const got = await client.get('Gateway', 'default', 'gw');
    expect(got?.metadata?.resourceVersion).toBe(created.metadata.resourceVersion);
    await client.patchStatus('Gateway', 'default', 'gw', { metadata: { resourceVersion: created.metadata.resourceVersion }, status: { addresses: [{ type: 'IPAddress', value: '10.0.0.1' }] } });
    expect(env.server.writes('gateways', 'status')[0]?.contentType).toBe('application/merge-patch+json');
    const stale = await client.patchStatus('Gateway', 'default', 'gw', { metadata: { resourceVersion: created.metadata.resourceVersion }, status: {} }).catch((e: unknown) => e);
    expect(httpStatusOf(stale)).toBe(409);
    env.server.create('gatewayclasses', { metadata: { name: 'mcip' }, spec: { controllerName: 'example.com/x' } });
    await client.patchStatus('GatewayClass', '', 'mcip', { status: { conditions: [] } });
    expect(env.server.writes('gatewayclasses', 'status')).toHaveLength(1);
    expect((await client.get('GatewayClass', '', 'mcip'))?.metadata?.name).toBe('mcip');
  });
});
