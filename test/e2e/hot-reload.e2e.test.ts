/**
 * Manifest hot reload under traffic: an edited HTTPRoute takes effect within 2 s
 * without dropping in-flight streams; an invalid object is left out while the
 * rest of the edit applies; a file that does not parse keeps its last good
 * version (log + metric) until it is good again.
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
/** Every log line, raw (JSON.parse would hide a repeated key). */
const lines: string[] = [];

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
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  router = await startRouter(await loadConfig(set.configFile), { logger, processMetrics: false });
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

  it('leaves out an invalid route and serves the rest of the same edit; the fixed route comes back', async () => {
    // One valid change (a new route) and one invalid object in the same edit: the valid one applies, the invalid one is left out.
    set.write('cluster-a', 'other.yaml', routeYaml('r2', 'other.example', [{ kind: 'InferencePool', name: 'pool-x' }]));
    set.write('cluster-a', 'route.yaml', routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x', weight: -5 }]));
    await eventually(async () => {
      const other = await envoy.run({ authority: 'other.example', path: '/v1/completions', body: [completionBody()] });
      expect(other.destination).toBe(X);
    }, 2000);
    const left = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
    expect(left.status).toBe(404);
    expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(1);
    expect(await metric('mcip_excluded_objects', 'cluster="cluster-a",reason="InvalidObject"')).toBe(1);

    // Operators see what was left out, naming the object and the field.
    const debug = (await (await request(`http://${router.adminAddress}/debug/routes`)).body.json()) as { excludedObjects: unknown[] };
    expect(debug.excludedObjects).toMatchObject([
      { cluster: 'cluster-a', kind: 'HTTPRoute', namespace: 'default', name: 'r', field: 'spec.rules[0].backendRefs[0].weight', reason: 'InvalidObject' },
    ]);

    set.write('cluster-a', 'route.yaml', routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x' }]));
    await eventually(async () => {
      const again = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
      expect(again.destination).toBe(X);
    }, 2000);
    expect(await metric('mcip_excluded_objects', 'cluster="cluster-a",reason="InvalidObject"')).toBe(0);
  });

  it('keeps the last good version of a file that does not parse, and is healthy again once it is restored byte for byte', async () => {
    const good = routeYaml('r', 'reload.example', [{ kind: 'InferencePool', name: 'pool-x' }]);
    const sources = async () => (await (await request(`http://${router.adminAddress}/debug/sources`)).body.json()) as { rejected: Record<string, unknown> };
    await eventually(async () => expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(1), 2000);
    const versionBefore = router.store.snapshot()!.version;
    const logged = lines.length;

    set.write('cluster-a', 'route.yaml', `${good}  broken: [\n`);
    await eventually(async () => expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(0), 2000);
    expect(await metric('mcip_config_errors_total', 'cluster="cluster-a",reason="parse"')).toBe(1);
    expect(Object.keys((await sources()).rejected)).toEqual(['cluster-a']);
    const r = await envoy.run({ authority: 'reload.example', path: '/v1/completions', body: [completionBody()] });
    expect(r.destination).toBe(X);

    set.write('cluster-a', 'route.yaml', good);
    await eventually(async () => expect(await metric('mcip_config_last_reload_successful', 'cluster="cluster-a"')).toBe(1), 2000);
    expect((await sources()).rejected).toEqual({});
    // Nothing changed, so nothing was rebuilt.
    expect(router.store.snapshot()!.version).toBe(versionBefore);

    // The rejection was logged once, its end once (info), and no line repeats a key (pino child bindings + fields).
    const since = lines.slice(logged);
    expect(since.filter((l) => l.includes('rejected'))).toHaveLength(1);
    expect(since.filter((l) => l.includes('recovered')).map((l) => (JSON.parse(l) as { level: string }).level)).toEqual(['info']);
    for (const l of lines) expect(l.match(/"cluster":/g)?.length ?? 0, l).toBeLessThanOrEqual(1);
    expect(lines.some((l) => l.includes('"source":"manifests"') && l.includes('"cluster":"cluster-a"'))).toBe(true);
  });
});
