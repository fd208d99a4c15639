/**
 * The CLI serving as a container runtime starts it: ready, on the ext_proc transport under test
 * (CI runs this file on both), and on SIGTERM a graceful shutdown with a stream in flight.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyStandin } from '../harness/envoy-standin.js';
import { testExtProcTransport } from '../harness/extproc-transport.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { completionBody, gatewayYaml, poolYaml, routeYaml, startEpps, stopAll, writeClusterSet } from './clusterset.js';
import { ensureBuilt, startCli } from './cli-process.js';

beforeAll(() => ensureBuilt(), 120_000);

describe('serving and graceful shutdown', () => {
  let epps: Record<string, SimulatedEpp>;
  beforeAll(async () => {
    epps = await startEpps({ slow: '10.9.0.1:8000' }, 600);
  });
  afterAll(async () => stopAll(epps));

  it('serves, reports ready, and on SIGTERM finishes the in-flight stream before exiting 0', async () => {
    const set = writeClusterSet([
      {
        name: 'cluster-a',
        files: {
          'gw.yaml': gatewayYaml(),
          'pool.yaml': poolYaml('slow'),
          'route.yaml': routeYaml('r', 'slow.example', [{ kind: 'InferencePool', name: 'slow' }]),
          // Neither an upstream pool without endpointPickerRef nor an invalid route stops the member from serving.
          'bare.yaml': poolYaml('bare').replace(/ {2}endpointPickerRef:\n(?: {4}.*\n)+/, ''),
          'bad-route.yaml': routeYaml('bad', 'bad.example', [{ kind: 'InferencePool', name: 'slow', weight: -1 }]),
        },
        epps: { 'slow-epp': epps.slow!.address },
      },
    ]);
    const router = await startCli(['--config', set.configFile, '--log-level', 'info']);
    try {
      // The data path runs on the transport under test (CI runs this file on both).
      expect(router.logs.find((l) => l.msg === 'mcip-router serving')?.transport).toBe(testExtProcTransport());
      expect((await request(`http://${router.admin}/readyz`)).statusCode).toBe(200);
      const metrics = await (await request(`http://${router.admin}/metrics`)).body.text();
      expect(metrics).toContain('mcip_excluded_objects{cluster="cluster-a",reason="EndpointPickerRefMissing"} 1');
      expect(metrics).toContain('mcip_excluded_objects{cluster="cluster-a",reason="InvalidObject"} 1');
      const envoy = createEnvoyStandin(router.extProc);
      const inFlight = envoy.run({ authority: 'slow.example', path: '/v1/completions', body: [completionBody()] });
      await eventually(() => expect(epps.slow!.counters.openStreams).toBe(1));
      router.child.kill('SIGTERM');
      const result = await inFlight;
      expect(result.outcome, result.reason).toBe('forwarded');
      expect(result.destination).toBe('10.9.0.1:8000');
      expect(await router.exited).toBe(0);
      envoy.close();
      const messages = router.logs.map((l) => l.msg);
      expect(messages).toContain('draining ext_proc streams');
      expect(messages).toContain('mcip-router stopped');
      // No per-request lines at info level.
      expect(router.logs.filter((l) => l.level === 'info' && /stream|request/i.test(String(l.msg)) && l.msg !== 'draining ext_proc streams')).toEqual([]);
    } finally {
      router.child.kill('SIGKILL');
    }
  });
});
