// "Served by": the router attaches its decision to the answer that carries it to Envoy as
// dynamic metadata in the mcip.router namespace; the Envoy stand-in keeps it only for the
// receiving namespaces of the shipped config, and the shipped access-log format names the
// serving cluster and pool next to the destination.
import { afterEach, describe, expect, it } from 'vitest';
import { renderAccessLog, type JsonFormat } from '../harness/access-log.js';
import type { StandinRequest } from '../harness/standin-types.js';
import { extProc, hcm, loadConfig } from '../envoy/config-fixtures.js';
import { frames, jsonBody, PARENT_B, POOL_A_ENDPOINTS, POOL_B_ENDPOINTS, startScenario, type Scenario, type ScenarioOptions } from './scenario.js';

const SHIPPED = loadConfig('envoy.yaml');
const RECEIVING: string[] = extProc(SHIPPED).metadata_options.receiving_namespaces.untyped;
const FORMAT: JsonFormat = hcm(SHIPPED).access_log[0].typed_config.log_format.json_format;

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

async function start(o: ScenarioOptions = {}): Promise<Scenario> {
  sc = await startScenario(o);
  return sc;
}

function request(authority: string): StandinRequest {
  return { authority, path: '/v1/completions', body: frames(jsonBody(1024)) };
}

async function logLine(authority: string, receivingNamespaces = RECEIVING) {
  const req = request(authority);
  const r = await sc!.envoy.run(req, { receivingNamespaces });
  return { r, line: renderAccessLog(FORMAT, req, r) };
}

describe('served by, in the access log of the shipped Envoy config', () => {
  it('routed: the line names the serving cluster and pool next to the destination', async () => {
    await start();
    const { r, line } = await logLine('local.example');
    expect(r.status).toBe(200);
    expect(POOL_A_ENDPOINTS).toContain(line.destination);
    expect(line).toMatchObject({
      served_cluster: 'cluster-a',
      served_pool: 'example/pool-a',
      route: 'example/local',
      routing_mode: 'Endpoint',
      routing_attempts: 1,
      routing_outcome: 'routed',
      upstream_host: r.destination,
    });
  });

  it('failed over: the cluster that served, two attempts; the EPP\'s own envoy.lb metadata is kept beside it', async () => {
    await start();
    await sc!.eppA.kill();
    const lines = [];
    for (let i = 0; i < 8; i++) lines.push(await logLine('split.example'));
    const over = lines.filter(({ line }) => line.routing_outcome === 'failed_over');
    expect(over.length).toBeGreaterThan(0);
    for (const { r, line } of over) {
      expect(line).toMatchObject({ served_cluster: 'cluster-b', served_pool: 'example/pool-b', routing_attempts: 2, route: 'example/split' });
      expect(POOL_B_ENDPOINTS).toContain(line.destination);
      expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': line.destination });
    }
    for (const { line } of lines.filter((l) => !over.includes(l))) expect(line).toMatchObject({ served_cluster: 'cluster-b', routing_outcome: 'routed', routing_attempts: 1 });
  });

  it('parent: the remote Gateway serves (Parent mode), no EPP attempt', async () => {
    await start({ mode: 'Parent' });
    const { line } = await logLine('remote.example');
    expect(line).toMatchObject({ served_cluster: 'cluster-b', served_pool: 'example/pool-b', routing_mode: 'Parent', routing_attempts: 0, routing_outcome: 'parent', destination: PARENT_B });
  });

  it('fell open: every EPP attempt failed and the router chose an endpoint itself', async () => {
    await start({ failureModeA: 'FailOpen', clusterA: { failOpen: { endpoints: [{ namespace: 'example', pool: 'pool-a', endpoints: ['10.1.0.9:8000'] }] } }, maxAttempts: 1 });
    await sc!.eppA.kill();
    const { line } = await logLine('local.example');
    expect(line).toMatchObject({ served_cluster: 'cluster-a', served_pool: 'example/pool-a', routing_attempts: 1, routing_outcome: 'fell_open', destination: '10.1.0.9:8000' });
  });

  it('no route: the 404 carries the outcome, no cluster or pool', async () => {
    await start();
    const { r, line } = await logLine('nowhere.example');
    expect(r.status).toBe(404);
    expect(line).toMatchObject({ status: 404, routing_outcome: 'no_route', routing_attempts: 0, served_cluster: null, served_pool: null });
  });

  it('Envoy keeps the namespace only when the config lists it: without mcip.router the line has no served-by fields', async () => {
    expect(RECEIVING).toContain('mcip.router');
    await start();
    const { line } = await logLine('local.example', ['envoy.lb']);
    expect(line.served_cluster).toBeNull();
    expect(line.routing_outcome).toBeNull();
    expect(POOL_A_ENDPOINTS).toContain(line.destination);
  });
});
