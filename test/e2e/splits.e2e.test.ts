/**
 * Gateway API weight conformance through the whole router: manifests on disk ->
 * sources -> snapshot -> ext_proc server -> simulated EPPs, driven by the Envoy
 * stand-in in FULL_DUPLEX_STREAMED mode, 200 requests per split (GIE's test).
 * The remote members (cluster-b, cluster-c) run stock llm-d EPPs: their ext_proc
 * ports serve no Health, and the router's health probes there get UNIMPLEMENTED.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { seededRandom } from '../helpers/random.js';
import {
  completionBody,
  gatewayYaml,
  importYaml,
  inBatches,
  poolYaml,
  routeYaml,
  startEpps,
  stopAll,
  tolerance,
  writeClusterSet,
} from './clusterset.js';

const ENDPOINT = {
  x: '10.1.0.1:8000', // cluster-a pool-x
  y: '10.1.0.2:8000', // cluster-a pool-y
  llmA: '10.1.0.3:8000', // cluster-a llm
  llmB: '10.2.0.3:8000', // cluster-b llm (exported)
  multiB: '10.2.0.4:8000', // cluster-b multi (exported)
  multiC: '10.3.0.4:8000', // cluster-c multi (exported)
};

let epps: Record<string, SimulatedEpp>;
let router: RouterHandle;
let envoy: EnvoyStandin;

beforeAll(async () => {
  epps = await startEpps(ENDPOINT, 0, ['llmB', 'multiB', 'multiC']);
  const fastHealth = { health: { intervalMs: 100, timeoutMs: 500 } };
  const set = writeClusterSet([
    {
      name: 'cluster-a',
      files: {
        'gateway.yaml': gatewayYaml(),
        'pools.yaml': [poolYaml('pool-x'), poolYaml('pool-y'), poolYaml('llm')].join('---\n'),
        // 'multi' has no InferencePoolImport object: the router derives it from the exported pools of cluster-b and cluster-c.
        'imports.yaml': importYaml('llm', ['cluster-b']),
        'routes.yaml': [
          routeYaml('split', 'split.example', [
            { kind: 'InferencePool', name: 'pool-x', weight: 70 },
            { kind: 'InferencePool', name: 'pool-y', weight: 30 },
          ]),
          routeYaml('mixed', 'mixed.example', [
            { kind: 'InferencePool', name: 'llm', weight: 50 },
            { kind: 'InferencePoolImport', name: 'llm', weight: 50 },
          ]),
          routeYaml('multi', 'multi.example', [{ kind: 'InferencePoolImport', name: 'multi' }]),
        ].join('---\n'),
      },
      epps: { 'pool-x-epp': epps.x!.address, 'pool-y-epp': epps.y!.address, 'llm-epp': epps.llmA!.address },
      epp: fastHealth,
    },
    {
      name: 'cluster-b',
      files: { 'pools.yaml': [poolYaml('llm', { exported: true }), poolYaml('multi', { exported: true })].join('---\n') },
      epps: { 'llm-epp': epps.llmB!.address, 'multi-epp': epps.multiB!.address },
      epp: fastHealth,
    },
    {
      name: 'cluster-c',
      files: { 'pools.yaml': poolYaml('multi', { exported: true }) },
      epps: { 'multi-epp': epps.multiC!.address },
      epp: fastHealth,
    },
  ]);
  router = await startRouter(await loadConfig(set.configFile), {
    logger: createLogger('silent'),
    random: seededRandom(20261121),
    processMetrics: false,
  });
  envoy = createEnvoyStandin(router.extProcAddress);
  // Many probes have answered (more than the unhealthy threshold) before any split is measured.
  await eventually(async () => expect((await signals()).targets.filter((t) => t.kind === 'epp-health' && (t.state.lastProbeAt ?? 0) > 0)).toHaveLength(6));
  await new Promise((r) => setTimeout(r, 500));
});

interface DebugSignals {
  candidates: Record<string, { ready: string; reason: string }>;
  targets: { kind: string; target: string; state: { status: string; code?: string; lastProbeAt?: number } }[];
}
async function signals(): Promise<DebugSignals> {
  return (await (await fetch(`http://${router.adminAddress}/debug/signals`)).json()) as DebugSignals;
}

afterAll(async () => {
  envoy?.close();
  await router?.shutdown();
  await stopAll(epps ?? {});
});

async function distribution(authority: string, n: number): Promise<Record<string, number>> {
  const results = await inBatches(n, 16, () =>
    envoy.run({ authority, path: '/v1/completions', body: [completionBody()] }),
  );
  const counts: Record<string, number> = {};
  for (const r of results) {
    expect(r.outcome, r.reason).toBe('forwarded');
    counts[r.destination!] = (counts[r.destination!] ?? 0) + 1;
  }
  return counts;
}

async function activeStreams(): Promise<number> {
  const text = await router.metrics.registry.metrics();
  return Number(/^mcip_active_streams (\d+)$/m.exec(text)?.[1]);
}

function expectShare(counts: Record<string, number>, endpoint: string, p: number, n: number): void {
  const share = (counts[endpoint] ?? 0) / n;
  expect(Math.abs(share - p), `share of ${endpoint} = ${share}, target ${p}`).toBeLessThanOrEqual(tolerance(p, n));
}

describe('weighted splits through the router (200 requests each)', () => {
  it('70/30 between two InferencePools', async () => {
    const counts = await distribution('split.example', 200);
    expect(Object.keys(counts).sort()).toEqual([ENDPOINT.x, ENDPOINT.y].sort());
    expectShare(counts, ENDPOINT.x, 0.7, 200);
    expectShare(counts, ENDPOINT.y, 0.3, 200);
  });

  it('50/50 between an InferencePool and the InferencePoolImport of the same name', async () => {
    const counts = await distribution('mixed.example', 200);
    expect(Object.keys(counts).sort()).toEqual([ENDPOINT.llmA, ENDPOINT.llmB].sort());
    expectShare(counts, ENDPOINT.llmA, 0.5, 200);
    expectShare(counts, ENDPOINT.llmB, 0.5, 200);
  });

  it('an import with two exporting clusters splits between both remote pools', async () => {
    const counts = await distribution('multi.example', 200);
    expect(Object.keys(counts).sort()).toEqual([ENDPOINT.multiB, ENDPOINT.multiC].sort());
    expectShare(counts, ENDPOINT.multiB, 0.5, 200);
    expectShare(counts, ENDPOINT.multiC, 0.5, 200);
  });

  it('/debug/routes shows the given import as an object and the one nobody wrote as derived', async () => {
    type Backend = { ref: { kind: string; name: string }; import?: { source: string; exportingClusters: string[] } };
    const body = (await (await fetch(`http://${router.adminAddress}/debug/routes`)).json()) as { routes: { route: { name: string }; rules: { backends: Backend[] }[] }[] };
    const imported = (route: string) => body.routes.find((r) => r.route.name === route)?.rules[0]?.backends.find((b) => b.ref.kind === 'InferencePoolImport')?.import;
    expect(imported('mixed')).toEqual({ source: 'object', exportingClusters: ['cluster-b'] });
    expect(imported('multi')).toEqual({ source: 'derived', exportingClusters: ['cluster-b', 'cluster-c'] });
  });

  it('/debug/signals shows the stock EPPs as offering no health signal (UNIMPLEMENTED), not as down', async () => {
    const s = await signals();
    const health = (address: string) => s.targets.find((t) => t.kind === 'epp-health' && t.target.startsWith(`${address} `))!.state;
    for (const name of ['llmB', 'multiB', 'multiC']) expect(health(epps[name]!.address)).toMatchObject({ status: 'unsupported', code: 'UNIMPLEMENTED' });
    expect(health(epps.llmA!.address)).toMatchObject({ status: 'healthy' });
    expect(s.candidates['cluster-b/default/llm']).toMatchObject({ ready: 'unknown', reason: 'health:unsupported' });
    expect(s.candidates['cluster-a/default/llm']).toMatchObject({ ready: 'ready' });
  });

  it('/debug/pick explains the split with exact probabilities', async () => {
    const res = await fetch(`http://${router.adminAddress}/debug/pick?host=split.example&path=/v1/completions&method=POST`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { entries: { id: string; probability: number }[] };
    const p = Object.fromEntries(body.entries.map((e) => [e.id, e.probability]));
    expect(p['cluster-a/default/pool-x']).toBeCloseTo(0.7, 10);
    expect(p['cluster-a/default/pool-y']).toBeCloseTo(0.3, 10);
    const missing = await fetch(`http://${router.adminAddress}/debug/pick?host=nowhere.example&path=/`);
    expect(missing.status).toBe(404);
  });

  it('each request went through the EPP of the pool it landed on, and no stream leaked', async () => {
    for (const [name, endpoint] of Object.entries(ENDPOINT)) {
      const epp = epps[name]!;
      expect(epp.counters.picks[endpoint] ?? 0).toBe(epp.counters.streamsOpened);
      // Teardown runs after the client response: Envoy half-closes, the router ends the EPP call.
      await eventually(() => expect(epp.counters.openStreams).toBe(0));
    }
    await eventually(async () => expect(await activeStreams()).toBe(0));
  });

  it('metrics count the requests per route, pool and cluster', async () => {
    await eventually(async () => expect(await activeStreams()).toBe(0));
    const text = await router.metrics.registry.metrics();
    const line = (route: string, pool: string, cluster: string): number => {
      const m = new RegExp(
        `mcip_requests_total\\{route="default/${route}",pool="default/${pool}",cluster="${cluster}",outcome="relayed"\\} (\\d+)`,
      ).exec(text);
      return m ? Number(m[1]) : 0;
    };
    expect(line('split', 'pool-x', 'cluster-a') + line('split', 'pool-y', 'cluster-a')).toBe(200);
    expect(line('mixed', 'llm', 'cluster-a') + line('mixed', 'llm', 'cluster-b')).toBe(200);
    expect(line('multi', 'multi', 'cluster-b') + line('multi', 'multi', 'cluster-c')).toBe(200);
  });
});
