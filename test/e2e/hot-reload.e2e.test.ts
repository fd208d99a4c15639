/**
 * Manifest hot reload under traffic: an edited HTTPRoute takes effect within 2 s
 * without dropping in-flight streams; a bad edit is rejected whole (log +
 * metric), the last good routing keeps serving, and a fix applies again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin, type StandinResult } from '../harness/envoy-standin.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import {
  completionBody,
  gatewayYaml,
  poolYaml,
  routeYaml,
  startEpps,
  stopAll,
  writeClusterSet,
  type ClusterSetDir,
} from './clusterset.js';

const X = '10.1.0.1:8000';
const Y = '10.1.0.2:8000';

let epps: Record<string, SimulatedEpp>;
let router: RouterHandle;
let envoy: EnvoyStandin;
let set: ClusterSetDir;

interface Sample {
  readonly startedAt: number;
  readonly result: StandinResult;
}

/** Sends requests back to back on `lanes` lanes until stop() is called. */
function traffic(lanes: number): { samples: Sample[]; stop: () => Promise<void> } {
  const samples: Sample[] = [];
  let running = true;
  const lane = async (): Promise<void> => {
    while (running) {
      const startedAt = Date.now();
      const result = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
      samples.push({ startedAt, result });
    }
  };
  const all = Promise.all(Array.from({ length: lanes }, lane));
  return {
    samples,
    stop: async () => {
      running = false;
      await all;
    },
  };
}

async function metric(name: string, labels: string): Promise<number> {
  const text = await router.metrics.registry.metrics();
  const m = new RegExp(`^${name}\\{${labels}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

beforeAll(async () => {
  // pool-x's EPP answers after 250 ms, so streams are in flight across the reload.
  epps = { ...(await startEpps({ x: X }, 250)), ...(await startEpps({ y: Y })) };
  set = writeClusterSet([
    {
      name: 'cluster-a',
      files: {
        'gateway.yaml': gatewayYaml(),
        'pools.yaml': [poolYaml('pool-x'), poolYaml('pool-y')].join('---\n'),
        'route.yaml': routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x' }]),
      },
      epps: { 'pool-x-epp': epps.x!.address, 'pool-y-epp': epps.y!.address },
    },
  ]);
  router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('silent'), processMetrics: false });
  envoy = createEnvoyStandin(router.extProcAddress);
});

afterAll(async () => {
  envoy?.close();
  await router?.shutdown();
  await stopAll(epps ?? {});
});

describe('hot reload of manifests mid-traffic', () => {
  it('applies an edited route within 2 s and finishes every in-flight stream', async () => {
    const load = traffic(6);
    await eventually(() => expect(load.samples.length).toBeGreaterThan(6), 3000);
    const editedAt = Date.now();
    set.write('cluster-a', 'route.yaml', routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-y' }]));
    await eventually(() => expect(load.samples.some((s) => s.result.destination === Y)).toBe(true), 2000);
    const switchedAt = Date.now();
    expect(switchedAt - editedAt).toBeLessThan(2000);
    // Keep traffic going a little after the switch, then stop.
    await new Promise((r) => setTimeout(r, 300));
    await load.stop();

    const failed = load.samples.filter((s) => s.result.outcome !== 'forwarded');
    expect(failed.map((s) => `${s.result.status} ${s.result.reason}`)).toEqual([]);
    // Streams that started before the edit finished on the pool they were routed to.
    expect(load.samples.filter((s) => s.startedAt < editedAt).every((s) => s.result.destination === X)).toBe(true);
    // Everything that started after the switch was observed went to the new pool.
    expect(load.samples.filter((s) => s.startedAt >= switchedAt).every((s) => s.result.destination === Y)).toBe(true);
    expect(await metric('mcip_config_reloads_total', 'cluster="cluster-a",result="applied"')).toBeGreaterThanOrEqual(2);
  });

  it('rejects a bad edit whole, keeps serving the last good routing, and recovers on a fix', async () => {
    const versionBefore = router.store.snapshot()!.version;
    // One valid change (route back to pool-x) and one invalid object in the same edit: nothing may apply.
    set.write(
      'cluster-a',
      'route.yaml',
      routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x', weight: -5 }]),
    );
    await eventually(
      async () => expect(await metric('mcip_config_reloads_total', 'cluster="cluster-a",result="rejected"')).toBe(1),
      2000,
    );
    expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(0);
    expect(await metric('mcip_config_errors_total', 'cluster="cluster-a",reason="invalid"')).toBe(1);
    expect(router.store.snapshot()!.version).toBe(versionBefore);

    const r = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe(Y);

    // The rejection is visible to operators, naming the object and the field.
    const debug = await request(`http://${router.adminAddress}/debug/routes`);
    const body = JSON.stringify(await debug.body.json());
    expect(body).toContain('HTTPRoute default/r');
    expect(body).toContain('backendRefs[0].weight');

    set.write('cluster-a', 'route.yaml', routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x' }]));
    await eventually(async () => {
      const again = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
      expect(again.destination).toBe(X);
    }, 2000);
    expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(1);
  });
});
