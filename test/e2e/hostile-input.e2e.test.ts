/**
 * Hostile input never stalls the router's event loop: a tenant's HTTPRoute
 * RegularExpression that backtracks catastrophically in a backtracking engine
 * (`/(a+)+b`), read from real YAML manifests, and request paths built to
 * trigger it, sent through the Envoy stand-in over real gRPC. The hostile
 * request and the next, unrelated one are each answered within 100 ms, and a
 * pattern RE2 cannot compile is left out with a reason naming route and field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import { withLoopDelay } from '../harness/loop-delay.js';
import { timeWorkAsync } from '../helpers/work-time.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { completionBody, GATEWAY, gatewayYaml, poolYaml, routeYaml, startEpps, stopAll, writeClusterSet } from './clusterset.js';

const X = '10.2.0.1:8000';
const Y = '10.2.0.2:8000';

function regexRouteYaml(name: string, hostname: string, pattern: string, pool: string): string {
  return stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: 'default' },
    spec: {
      parentRefs: [{ name: GATEWAY.name }],
      hostnames: [hostname],
      rules: [
        {
          matches: [{ path: { type: 'RegularExpression', value: pattern } }, { headers: [{ type: 'RegularExpression', name: 'x-tenant', value: '(x+x+)+y' }] }],
          backendRefs: [{ group: 'inference.networking.k8s.io', kind: 'InferencePool', name: pool }],
        },
      ],
    },
  });
}

let epps: Record<string, SimulatedEpp>;
let router: RouterHandle;
let envoy: EnvoyStandin;

beforeAll(async () => {
  epps = await startEpps({ x: X, y: Y });
  const set = writeClusterSet([
    {
      name: 'cluster-a',
      files: {
        'gateway.yaml': gatewayYaml(),
        'pools.yaml': [poolYaml('pool-x'), poolYaml('pool-y')].join('---\n'),
        'routes.yaml': [
          regexRouteYaml('tenant-regex', 'tenant.example', '/(a+)+b', 'pool-x'),
          regexRouteYaml('tenant-lookahead', 'lookahead.example', '/v1/(?=chat).*', 'pool-x'),
          routeYaml('plain', 'plain.example', [{ kind: 'InferencePool', name: 'pool-y' }]),
        ].join('---\n'),
      },
      epps: { 'pool-x-epp': epps.x!.address, 'pool-y-epp': epps.y!.address },
    },
  ]);
  router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('silent'), processMetrics: false });
  envoy = createEnvoyStandin(router.extProcAddress);
  // Warm up the connection and both routes once.
  await envoy.run({ authority: 'plain.example', path: '/v1/completions', body: [completionBody()] });
  await envoy.run({ authority: 'tenant.example', path: '/aab', body: [completionBody()] });
});

afterAll(async () => {
  envoy?.close();
  await router?.shutdown();
  await stopAll(epps ?? {});
});

/** One request and its answer time, counted as work (test/helpers/work-time.ts): the router runs in this process. */
async function timed(authority: string, path: string, headers: Record<string, string> = {}) {
  const { result, ms } = await timeWorkAsync(() => envoy.run({ authority, path, headers, body: [completionBody()] }));
  return { result, ms };
}

// The 100 ms bounds hold on an idle machine with a wide margin (a few ms). They count work, not
// wall-clock time, so a CI machine busy with other suites does not exceed them; a rare miss (a long
// GC pause) is retried. Without RE2 the first hostile request alone blocks the loop for minutes,
// which no retry hides.
describe('hostile route regexes', { retry: 2 }, () => {
  it.each([
    ['a 40-character path', `/${'a'.repeat(40)}`],
    ['a 4,000-character path', `/${'a'.repeat(4000)}`],
    ['a path over routes.regex.maxInputLength', `/${'a'.repeat(10_000)}b`],
  ])('%s against /(a+)+b: it and the next request are answered within 100 ms', async (_what, path) => {
    const { result, maxDelayMs } = await withLoopDelay(async () => {
      const hostile = await timed('tenant.example', path);
      const next = await timed('plain.example', '/v1/completions');
      return { hostile, next };
    });
    expect(result.hostile.result.status).toBe(404); // no rule matches: the route's regex did not match
    expect(result.next.result.destination).toBe(Y);
    expect(result.hostile.ms).toBeLessThan(100);
    expect(result.next.ms).toBeLessThan(100);
    expect(maxDelayMs).toBeLessThan(100);
  });

  it('a hostile header value against (x+x+)+y is answered within 100 ms', async () => {
    const { result, maxDelayMs } = await withLoopDelay(() => timed('tenant.example', '/other', { 'x-tenant': 'x'.repeat(3000) }));
    expect(result.result.status).toBe(404);
    expect(result.ms).toBeLessThan(100);
    expect(maxDelayMs).toBeLessThan(100);
  });

  it('the regex still matches what it should', async () => {
    expect((await timed('tenant.example', `/${'a'.repeat(500)}b`)).result.destination).toBe(X);
    expect((await timed('tenant.example', '/other', { 'x-tenant': 'xxxy' })).result.destination).toBe(X);
  });

  it('a pattern RE2 cannot compile is left out, with a reason naming route and field', async () => {
    const r = await timed('lookahead.example', '/v1/chat');
    expect(r.result.status).toBe(404);
    const body = (await (await request(`http://${router.adminAddress}/debug/routes`)).body.json()) as unknown;
    const text = JSON.stringify(body);
    expect(text).toContain('HTTPRoute default/tenant-lookahead');
    expect(text).toContain('spec.rules[0].matches[0].path.value');
    expect(text).toContain('invalid RE2 regular expression');
  });
});
