/**
 * The clusters the gateway-client tests run the router against: two clusters of stock
 * llm-d EPPs (no Health on the ext_proc port, the body always echoed as
 * streamed_response, the stream ended on the client's half-close) and HTTPRoutes
 * without hostnames matched on an `x-route` header, since NGINX Gateway Fabric's
 * picker client sends no :authority and no :path.
 *
 * - route `one`: InferencePool llm (cluster-a, picks A)
 * - route `split`: InferencePool llm 70, InferencePoolImport llm 30 (cluster-b, picks B)
 * - route `failover`: InferencePool down-closed (its EPP fails every stream) first, the import next
 * - route `open`: InferencePool down-open (FailOpen, its EPP fails every stream; static fail-open endpoint)
 * - route `closed`: InferencePool down-closed (FailClose)
 * - route `odd`: InferencePool odd, whose EPP (scripted) answers the destination as a test sets it
 */
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { pickingScript, startScriptedEpp, type PickAnswer, type ScriptedEpp } from '../harness/gateways/scripted-epp.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { seededRandom } from '../helpers/random.js';
import { GATEWAY, gatewayYaml, importYaml, poolYaml, startEpps, stopAll, writeClusterSet, type BackendSpec } from './clusterset.js';

export const PICK = {
  a: '10.1.0.1:8000', // cluster-a llm
  b: '10.2.0.1:8000', // cluster-b llm (exported)
  downOpen: '10.1.0.5:8000',
  downClosed: '10.1.0.6:8000',
};
/** The static FailOpen endpoint of down-open. */
export const FAIL_OPEN_ENDPOINT = '10.1.0.50:8000';

export interface GatewayClusters {
  readonly router: RouterHandle;
  readonly epps: Record<keyof typeof PICK, SimulatedEpp>;
  /** The EPP of pool odd: answers the request headers with what `setAnswer` gave. */
  readonly odd: ScriptedEpp;
  setAnswer(a: PickAnswer): void;
  stop(): Promise<void>;
}

function headerRoute(name: string, backends: BackendSpec[]): string {
  return stringify({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name, namespace: GATEWAY.namespace },
    spec: {
      parentRefs: [{ name: GATEWAY.name }],
      rules: [
        {
          matches: [{ headers: [{ name: 'x-route', value: name }] }],
          backendRefs: backends.map((b) => ({
            group: b.kind === 'InferencePool' ? 'inference.networking.k8s.io' : 'inference.networking.x-k8s.io',
            kind: b.kind,
            name: b.name,
            ...(b.weight !== undefined ? { weight: b.weight } : {}),
          })),
        },
      ],
    },
  });
}

export async function startGatewayClusters(): Promise<GatewayClusters> {
  const epps = (await startEpps(PICK, 0, Object.keys(PICK))) as Record<keyof typeof PICK, SimulatedEpp>;
  epps.downOpen.setCrash('on-headers');
  epps.downClosed.setCrash('on-headers');
  let answer: PickAnswer = {};
  const odd = await startScriptedEpp(pickingScript(() => answer));
  const set = writeClusterSet(
    [
      {
        name: 'cluster-a',
        files: {
          'gateway.yaml': gatewayYaml(),
          'pools.yaml': [poolYaml('llm'), poolYaml('down-open', { failureMode: 'FailOpen' }), poolYaml('down-closed'), poolYaml('odd')].join('---\n'),
          'imports.yaml': importYaml('llm', ['cluster-b']),
          'routes.yaml': [
            headerRoute('one', [{ kind: 'InferencePool', name: 'llm' }]),
            headerRoute('split', [
              { kind: 'InferencePool', name: 'llm', weight: 70 },
              { kind: 'InferencePoolImport', name: 'llm', weight: 30 },
            ]),
            // The import is drawn first once in a million: down-closed fails, the import is tried with the request replayed.
            headerRoute('failover', [
              { kind: 'InferencePool', name: 'down-closed', weight: 1_000_000 },
              { kind: 'InferencePoolImport', name: 'llm', weight: 1 },
            ]),
            headerRoute('open', [{ kind: 'InferencePool', name: 'down-open' }]),
            headerRoute('closed', [{ kind: 'InferencePool', name: 'down-closed' }]),
            headerRoute('odd', [{ kind: 'InferencePool', name: 'odd' }]),
          ].join('---\n'),
        },
        epps: { 'llm-epp': epps.a.address, 'down-open-epp': epps.downOpen.address, 'down-closed-epp': epps.downClosed.address, 'odd-epp': odd.address },
        epp: { health: { intervalMs: 100, timeoutMs: 500 } },
      },
      {
        name: 'cluster-b',
        files: { 'pools.yaml': poolYaml('llm', { exported: true }) },
        epps: { 'llm-epp': epps.b.address },
        epp: { health: { intervalMs: 100, timeoutMs: 500 } },
      },
    ],
    {
      extra: {
        // The failing EPPs stay candidates: every request shows failover or the failure mode, none an ejection.
        outlier: { consecutiveFailures: 100_000 },
        // An EPP that never answers fails within a test's time.
        extProc: { attemptTimeoutMs: 1_000 },
      },
    },
  );
  const configText = await loadConfig(set.configFile);
  const config = {
    ...configText,
    clusters: configText.clusters.map((c) =>
      c.name === 'cluster-a' ? { ...c, failOpen: { endpoints: [{ namespace: 'default', pool: 'down-open', endpoints: [FAIL_OPEN_ENDPOINT] }] } } : c,
    ),
  };
  const router = await startRouter(config, { logger: createLogger('silent'), random: seededRandom(20261128), processMetrics: false });
  return {
    router,
    epps,
    odd,
    setAnswer: (a) => (answer = a),
    async stop() {
      await router.shutdown();
      await stopAll(epps);
      odd.stop();
    },
  };
}

/** A counter of the router's metrics, by name and label matchers (0 when absent). */
export async function metric(router: RouterHandle, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await router.metrics.registry.metrics();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
