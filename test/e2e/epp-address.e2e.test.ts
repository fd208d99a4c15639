/**
 * Where the router dials an EPP is partly the member's to say (its Service's addresses),
 * so the member's destination rules hold it, over real YAML, sockets and the admin API:
 * a Service pointing at the cloud metadata address leaves only its pool out (shown in
 * /debug/routes, the excluded-objects gauge and --check) while the other pools serve;
 * a load-balancer hostname that resolves to loopback is refused when the router connects
 * on the http2 transport although an EPP listens there, and is used once the member's
 * rules allow loopback.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { ensureBuilt, runCli } from './cli-process.js';
import { completionBody, gatewayYaml, poolYaml, routeYaml, startEpps, stopAll, writeClusterSet, type ClusterSetDir } from './clusterset.js';

const GOOD = '10.4.0.1:8000';
const NAMED = '10.4.0.2:8000';

let epps: Record<string, SimulatedEpp>;
let router: RouterHandle | undefined;
let envoy: EnvoyStandin | undefined;

beforeAll(async () => {
  epps = await startEpps({ good: GOOD, named: NAMED });
  await ensureBuilt();
}, 120_000);
afterAll(() => stopAll(epps));
afterEach(async () => {
  envoy?.close();
  envoy = undefined;
  await router?.shutdown();
  router = undefined;
});

/** A pool's Service with these fields, the pool's EPP port `port`. */
function poolWithService(name: string, port: number, spec: Record<string, unknown>, status?: Record<string, unknown>): string {
  const pool = poolYaml(name).split('---\n')[0]!.replace('number: 9002', `number: ${port}`);
  const service = stringify({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `${name}-epp`, namespace: 'default' },
    spec: { type: 'ClusterIP', ports: [{ name: 'grpc', port }], ...spec },
    ...(status ? { status } : {}),
  });
  return `${pool}---\n${service}`;
}

/** cluster-a: pool `good` (override to a real EPP), pool `bad` (Service at the metadata address), pool `named` (LB hostname localhost). */
function clusterSet(eppAnswers?: Record<string, unknown>, namedHost = 'localhost', transport: 'http2' | 'grpc-js' = 'http2'): ClusterSetDir {
  const set = writeClusterSet([
    {
      name: 'cluster-a',
      files: {
        'gateway.yaml': gatewayYaml(),
        'good.yaml': poolYaml('good'),
        'bad.yaml': poolWithService('bad', 9002, { clusterIP: '169.254.169.254' }),
        'named.yaml': poolWithService('named', epps.named!.port, { clusterIP: '10.96.0.44' }, { loadBalancer: { ingress: [{ hostname: namedHost }] } }),
        'routes.yaml': [
          routeYaml('good', 'good.example', [{ kind: 'InferencePool', name: 'good' }]),
          routeYaml('bad', 'bad.example', [{ kind: 'InferencePool', name: 'bad' }]),
          routeYaml('named', 'named.example', [{ kind: 'InferencePool', name: 'named' }]),
        ].join('---\n'),
      },
      epps: { 'good-epp': epps.good!.address },
    },
  ]);
  const raw = parse(readFileSync(set.configFile, 'utf8')) as { extProc: Record<string, unknown>; clusters: Record<string, unknown>[] };
  raw.extProc.transport = transport;
  if (eppAnswers) raw.clusters[0]!['eppAnswers'] = eppAnswers;
  writeFileSync(set.configFile, stringify(raw));
  return set;
}

async function start(set: ClusterSetDir): Promise<RouterHandle> {
  router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('silent'), processMetrics: false });
  envoy = createEnvoyStandin(router.extProcAddress);
  return router;
}

const send = (authority: string) => envoy!.run({ authority, path: '/v1/completions', body: [completionBody()] });

describe("EPP addresses from a member's Service", () => {
  it('a Service at the metadata address leaves its pool out, visibly, and the other pools serve', async () => {
    const r = await start(clusterSet());
    const routes = (await (await request(`http://${r.adminAddress}/debug/routes`)).body.json()) as {
      excludedObjects: Record<string, unknown>[];
      candidates: Record<string, unknown>;
    };
    expect(routes.excludedObjects).toEqual([
      expect.objectContaining({ cluster: 'cluster-a', kind: 'Service', namespace: 'default', name: 'bad-epp', field: 'spec.clusterIP', reason: 'EppAddressDenied' }),
    ]);
    expect(routes.excludedObjects[0]!['message']).toContain('169.254.169.254:9002 is inside destinations.deny');
    expect(Object.keys(routes.candidates)).not.toContain('cluster-a/default/bad');
    const metrics = await (await request(`http://${r.adminAddress}/metrics`)).body.text();
    expect(metrics).toContain('mcip_excluded_objects{cluster="cluster-a",reason="EppAddressDenied"} 1');

    const good = await send('good.example');
    expect(good.outcome, good.reason).toBe('forwarded');
    expect(good.destination).toBe(GOOD);
    expect((await send('bad.example')).status).toBe(500);
  });

  it.each(['http2', 'grpc-js'] as const)(
    'a load-balancer hostname resolving to loopback is refused on connect, also by health probes (the EPP there sees nothing); allowed when the member allows loopback (extProc.transport %s)',
    async (transport) => {
      await start(clusterSet(undefined, 'localhost', transport));
      const before = epps.named!.counters.streamsOpened;
      const checksBefore = epps.named!.counters.healthChecks;
      const refused = await send('named.example');
      expect(refused.status).toBe(503);
      // The health prober has run (its first probe starts at once) and failed without a connection.
      await eventually(async () => expect(await (await request(`http://${router!.adminAddress}/metrics`)).body.text()).toMatch(/mcip_signal_probe_failures_total\{[^}]*reason="destination-refused"[^}]*\} [1-9]/), 5000);
      expect(epps.named!.counters.streamsOpened).toBe(before);
      expect(epps.named!.counters.healthChecks).toBe(checksBefore);
      await router!.shutdown();
      envoy!.close();

      // A lab member: only link-local denied, so loopback passes (its EPP's answers are held to the same rules).
      await start(clusterSet({ destinations: { deny: ['169.254.0.0/16'] } }, 'localhost', transport));
      const allowed = await send('named.example');
      expect(allowed.outcome, allowed.reason).toBe('forwarded');
      expect(allowed.destination).toBe(NAMED);
      expect(epps.named!.counters.streamsOpened).toBe(before + 1);
      await eventually(() => expect(epps.named!.counters.healthChecks).toBeGreaterThan(checksBefore), 5000);
    },
  );

  it('a load-balancer hostname that spells a loopback IP (trailing dot, one number) is refused: Node would dial it without resolving it', async () => {
    for (const host of ['127.0.0.1.', '2130706433']) {
      const r = await start(clusterSet(undefined, host));
      const before = epps.named!.counters.streamsOpened;
      const routes = (await (await request(`http://${r.adminAddress}/debug/routes`)).body.json()) as { excludedObjects: Record<string, unknown>[] };
      expect(routes.excludedObjects, host).toContainEqual(
        expect.objectContaining({ kind: 'Service', name: 'named-epp', field: 'status.loadBalancer.ingress[0].hostname', reason: 'EppAddressDenied' }),
      );
      expect((await send('named.example')).status, host).toBe(500);
      expect(epps.named!.counters.streamsOpened, host).toBe(before);
      await router!.shutdown();
      router = undefined;
      envoy!.close();
      envoy = undefined;
    }
  });

  it('--check names the Service, its field and the fixes, and exits 1', async () => {
    const run = await runCli(['--check', '--config', clusterSet().configFile]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/cluster-a: Service default\/bad-epp \[spec\.clusterIP\]: EppAddressDenied: .*169\.254\.169\.254:9002 is inside destinations\.deny/);
    expect(run.stdout).toContain('clusters[cluster-a].addressOverrides.services');
    expect(run.stdout).toContain('clusters[cluster-a].eppAnswers.destinations');
    expect(run.stdout).toContain('Diagnostics: 2 error(s)');
    expect(run.stdout).toMatch(/HTTPRoute default\/\S+ \[spec\.rules\[0\]\.backendRefs\[0\]\]: BackendNotFound: .*EppAddressDenied/);
  });
});
