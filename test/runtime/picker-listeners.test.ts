/**
 * The Endpoint Picker role through the whole router: manifests on disk -> sources ->
 * snapshot -> one ext_proc server per picker port -> simulated EPPs, driven by the
 * gateway stand-ins (Envoy AI Gateway's ORIGINAL_DST, Istio's override_host, NGINX
 * Gateway Fabric's one-shot exchange) over real sockets.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../src/cli/check.js';
import { loadConfig } from '../../src/config/load.js';
import { RelayVerifier } from '../../src/credentials/relay-token.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { completionBody, gatewayYaml, importYaml, inBatches, poolYaml, startEpps, stopAll, tolerance, writeClusterSet } from '../e2e/clusterset.js';
import { aiGatewayOptions, createOriginalDstGateway, type OriginalDstGateway } from '../harness/gateways/original-dst.js';
import { createOverrideHostGateway } from '../harness/gateways/override-host.js';
import { createNgfGateway } from '../harness/gateways/ngf-one-shot.js';
import { pickingScript, startScriptedEpp, type ScriptedEpp } from '../harness/gateways/scripted-epp.js';
import { createValidatedGateway } from '../harness/gateways/validated.js';
import { getHeader } from '../harness/headers.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { eventually } from '../helpers/eventually.js';
import { seededRandom } from '../helpers/random.js';
import { freePorts, pickerPoolYaml } from './picker-fixtures.js';

const ENDPOINT = { llmA: '10.1.0.3:8000', llmB: '10.2.0.3:8000' };
const FAIL_OPEN = '10.1.0.99:8000';
const POD_IP = '10.0.0.9';
const RELAY_PORT = 8443;
const RELAY = `${POD_IP}:${RELAY_PORT}`;
const KEY = Buffer.alloc(32, 7);
const TOKEN = 'x-mcip-relay-token';
const DEST = 'x-gateway-destination-endpoint';

const istioGateway = (): string =>
  [
    stringify({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GatewayClass', metadata: { name: 'istio' }, spec: { controllerName: 'istio.io/gateway-controller' } }),
    stringify({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'istio-gw', namespace: 'default' },
      spec: { gatewayClassName: 'istio', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    }),
  ].join('---\n');

let epps: Record<string, SimulatedEpp>;
/** An EPP whose request headers answers name no destination. */
let silentEpp: ScriptedEpp;
let router: RouterHandle;
let configFile: string;
let writeManifest: (cluster: string, file: string, text: string) => void;
let port: { mixed: number; relay: number; unassigned: number; failOpen: number; failover: number; istio: number; bad: number; noDest: number };
const gateways: { close(): void }[] = [];

beforeAll(async () => {
  epps = await startEpps(ENDPOINT);
  silentEpp = await startScriptedEpp(pickingScript(() => ({})));
  const [mixed, relay, unassigned, failOpen, failover, istio, bad, closed, noDest] = await freePorts(9);
  port = { mixed: mixed!, relay: relay!, unassigned: unassigned!, failOpen: failOpen!, failover: failover!, istio: istio!, bad: bad!, noDest: noDest! };
  const set = writeClusterSet(
    [
      {
        name: 'cluster-a',
        files: {
          'gateway.yaml': [gatewayYaml(), istioGateway()].join('---\n'),
          'pools.yaml': [poolYaml('llm'), poolYaml('dead', { failureMode: 'FailOpen' }), poolYaml('down'), poolYaml('silent')].join('---\n'),
          'imports.yaml': importYaml('llm', ['cluster-b']),
          'picker.yaml': [
            pickerPoolYaml('llm-mc', port.mixed, 'InferencePool/llm=1, InferencePoolImport/llm=3', { answer: 'direct' }),
            pickerPoolYaml('llm-relay', port.relay, 'InferencePool/llm', { answer: 'relay', targetPort: RELAY_PORT }),
            pickerPoolYaml('fo-mc', port.failOpen, 'InferencePool/dead', { answer: 'direct' }),
            pickerPoolYaml('fail-mc', port.failover, 'InferencePool/down=1, InferencePoolImport/llm=1', { answer: 'direct' }),
            pickerPoolYaml('llm-istio', port.istio, 'InferencePool/llm', { answer: 'direct', parentGateway: 'istio-gw' }),
            pickerPoolYaml('llm-bad', port.bad, 'InferencePool/llm=1, InferencePool/llm=lots', { answer: 'direct' }),
            pickerPoolYaml('silent-mc', port.noDest, 'InferencePool/silent', { answer: 'direct' }),
          ].join('---\n'),
        },
        epps: { 'llm-epp': epps.llmA!.address, 'dead-epp': `127.0.0.1:${closed}`, 'down-epp': `127.0.0.1:${closed}`, 'silent-epp': silentEpp.address },
      },
      { name: 'cluster-b', files: { 'pools.yaml': poolYaml('llm', { exported: true }) }, epps: { 'llm-epp': epps.llmB!.address } },
    ],
    {
      extra: {
        endpointPicker: {
          namespace: 'default',
          serviceName: 'mcip-router',
          address: '127.0.0.1',
          ports: Object.values(port),
          tls: { plaintext: true },
          relay: { port: RELAY_PORT, keyFile: 'relay.key' },
        },
      },
    },
  );
  writeFileSync(join(set.dir, 'relay.key'), `${KEY.toString('base64')}\n`);
  // The static FailOpen endpoint of pool "dead" (the router fails open to it when its EPP cannot be reached).
  const config = await loadConfig(set.configFile);
  const clusters = config.clusters.map((c) => (c.name === 'cluster-a' ? { ...c, failOpen: { endpoints: [{ namespace: 'default', pool: 'dead', endpoints: [FAIL_OPEN] }] } } : c));
  configFile = set.configFile;
  writeManifest = set.write;
  process.env.POD_IP = POD_IP;
  router = await startRouter({ ...config, clusters }, { logger: createLogger('silent'), random: seededRandom(20261128), processMetrics: false });
});

afterAll(async () => {
  for (const g of gateways) g.close();
  await router?.shutdown();
  await stopAll(epps ?? {});
  silentEpp?.stop();
  delete process.env.POD_IP;
});

const at = (p: number): string => `127.0.0.1:${p}`;
function aiGateway(p: number): OriginalDstGateway {
  const g = createOriginalDstGateway(at(p), aiGatewayOptions());
  gateways.push(g);
  return g;
}
const request = { authority: 'any.example', path: '/v1/completions', body: [completionBody()] };

describe('the Endpoint Picker role (one ext_proc server per picker port)', () => {
  it('splits a multi-cluster pool 1:3 between its local pool and the import, answering header and envoy.lb alike (Envoy AI Gateway)', async () => {
    const gw = aiGateway(port.mixed);
    const n = 120;
    const results = await inBatches(n, 8, () => gw.run({ ...request, headers: { [TOKEN]: 'client-made' } }));
    const counts: Record<string, number> = {};
    for (const r of results) {
      expect(r.outcome, r.reason).toBe('forwarded');
      expect(r.dynamicMetadata['envoy.lb']?.[DEST]).toBe(r.destination);
      expect(getHeader(r.upstreamHeaders!, 'x-mcip-destination-kind')).toBeUndefined();
      expect(getHeader(r.upstreamHeaders!, TOKEN)).toBeUndefined();
      counts[r.destination!] = (counts[r.destination!] ?? 0) + 1;
    }
    expect(Object.keys(counts).sort()).toEqual([ENDPOINT.llmA, ENDPOINT.llmB].sort());
    expect(Math.abs((counts[ENDPOINT.llmB] ?? 0) / n - 0.75)).toBeLessThanOrEqual(tolerance(0.75, n));
    await eventually(async () =>
      expect(await router.metrics.registry.metrics()).toMatch(/mcip_requests_total\{route="InferencePool\/default\/llm-mc",pool="default\/llm",cluster="cluster-b",outcome="relayed"\} \d+/),
    );
  });

  it("answers NGINX Gateway Fabric's one-shot exchange with a raw_value header it proxies to", async () => {
    const ngf = createNgfGateway({ dial: at(port.mixed), serviceName: 'mcip-router', namespace: 'default', members: [RELAY], tls: 'disabled' });
    const r = await ngf.run({ headers: { 'content-type': 'application/json' }, body: completionBody() });
    expect(r.status, r.shimError).toBe(200);
    expect([ENDPOINT.llmA, ENDPOINT.llmB]).toContain(r.destination);
    expect(r.failedOpen).toBe(false);
  });

  it('attributes each stream to the pool bound to the port it arrived on', async () => {
    const relayGw = createOverrideHostGateway(at(port.relay), [RELAY]);
    gateways.push(relayGw);
    const r = await relayGw.run(request);
    expect(r.destination).toBe(RELAY);
    expect(relayGw.members.roundRobinPicks).toEqual([]);
    await eventually(async () =>
      expect(await router.metrics.registry.metrics()).toMatch(/mcip_requests_total\{route="InferencePool\/default\/llm-relay",pool="default\/llm",cluster="cluster-a",outcome="relayed"\} [1-9]/),
    );
  });

  it('relay answers name this pod in header and envoy.lb, with a token the relay accepts for the real destination; a client token never passes', async () => {
    const gw = createOverrideHostGateway(at(port.relay), [RELAY]);
    gateways.push(gw);
    const r = await gw.run({ ...request, headers: { [TOKEN]: 'client-made' } });
    expect(r.outcome, r.reason).toBe('forwarded');
    expect(r.destination).toBe(RELAY);
    expect(r.dynamicMetadata['envoy.lb']?.[DEST]).toBe(RELAY);
    expect(getHeader(r.upstreamHeaders!, DEST)).toBe(RELAY);
    const token = getHeader(r.upstreamHeaders!, TOKEN);
    expect(token).not.toBe('client-made');
    const verifier = new RelayVerifier({ keys: () => ({ keys: [KEY] }), ttlMs: 10_000, maxSkewMs: 2000, maxNonces: 100 });
    const verdict = verifier.verify(token, Date.now());
    expect(verdict).toMatchObject({ ok: true, claim: { target: ENDPOINT.llmA, kind: 'endpoint', cluster: 'cluster-a' } });
    expect(verifier.verify(token, Date.now())).toEqual({ ok: false, reason: 'replayed' });
  });

  it('relay answers are pool members agentgateway accepts (its validated destination mode)', async () => {
    const gw = createValidatedGateway(at(port.relay), [RELAY]);
    gateways.push(gw);
    const r = await gw.run(request);
    expect(r.outcome, r.reason).toBe('forwarded');
    expect(r.destination).toBe(RELAY);
    expect(gw.members.roundRobinPicks).toEqual([]);
  });

  it('fails over to the other backend when a picked pool\'s EPP cannot be reached', async () => {
    const gw = aiGateway(port.failover);
    const results = await inBatches(20, 4, () => gw.run(request));
    for (const r of results) {
      expect(r.outcome, r.reason).toBe('forwarded');
      expect(r.destination).toBe(ENDPOINT.llmB);
    }
  });

  it('fails open to the pool\'s known endpoint, in header and envoy.lb, without a client token', async () => {
    const gw = aiGateway(port.failOpen);
    const r = await gw.run({ ...request, headers: { [TOKEN]: 'client-made' } });
    expect(r.outcome, r.reason).toBe('forwarded');
    expect(r.destination).toBe(FAIL_OPEN);
    expect(r.dynamicMetadata['envoy.lb']?.[DEST]).toBe(FAIL_OPEN);
    expect(getHeader(r.upstreamHeaders!, TOKEN)).toBeUndefined();
  });

  it('an EPP answer naming no destination never lets a client-supplied destination header through to an ORIGINAL_DST gateway', async () => {
    const gw = aiGateway(port.noDest);
    const r = await gw.run({ ...request, headers: { [DEST]: '192.0.2.66:22', [TOKEN]: 'client-made' } });
    expect(silentEpp.streams.length).toBeGreaterThan(0);
    expect(r.destination).toBeUndefined();
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(503);
  });

  it('answers 503 naming the port on a picker port no pool is bound to, counted as no route', async () => {
    const r = await aiGateway(port.unassigned).run(request);
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(503);
    expect(r.response.body.toString()).toContain(`no multi-cluster InferencePool is bound to picker port ${port.unassigned}`);
    await eventually(async () => expect(await router.metrics.registry.metrics()).toMatch(/mcip_requests_total\{[^}]*outcome="no_route"\} [1-9]/));
  });

  it('refuses a direct pool whose gateway needs a relay (Istio): a 503, not a silent round robin', async () => {
    const gw = createOverrideHostGateway(at(port.istio), [RELAY]);
    gateways.push(gw);
    const r = await gw.run(request);
    expect(r.status).toBe(503);
    expect(gw.members.roundRobinPicks).toEqual([]);
  });

  it('reports every refusal in /debug/routes and --check, leaving out only the refused pools', async () => {
    const routes = (await (await fetch(`http://${router.adminAddress}/debug/routes`)).json()) as {
      pickerPools: { route: string; port: number; answer: string }[];
      diagnostics: { severity: string; subject: string; path?: string; reason: string; message: string }[];
    };
    expect(routes.pickerPools.map((p) => p.route).sort()).toEqual(
      ['InferencePool/default/fail-mc', 'InferencePool/default/fo-mc', 'InferencePool/default/llm-mc', 'InferencePool/default/llm-relay', 'InferencePool/default/silent-mc'],
    );
    const istio = routes.diagnostics.find((d) => d.reason === 'DirectAnswerMisroutes');
    expect(istio).toMatchObject({ severity: 'error', subject: 'cluster-a: InferencePool default/llm-istio', path: 'metadata.annotations["mcip-router.dev/answer"]' });
    expect(istio!.message).toContain('istio.io/gateway-controller');
    expect(istio!.message).toContain('mcip-router.dev/answer: relay');
    const bad = routes.diagnostics.find((d) => d.subject === 'cluster-a: InferencePool default/llm-bad');
    expect(bad).toMatchObject({ severity: 'error', reason: 'BackendInvalid', path: 'metadata.annotations["mcip-router.dev/backends"]' });
    expect(bad!.message).toContain('"InferencePool/llm=lots"');

    const check = await runCheck(await loadConfig(configFile), createLogger('silent'));
    expect(check.code).toBe(1);
    expect(check.output).toContain(`InferencePool/default/llm-mc  picker port ${port.mixed}  answer direct`);
    expect(check.output).toMatch(/error +cluster-a: InferencePool default\/llm-istio .*DirectAnswerMisroutes/);
  });

  it('follows the current snapshot: a pool created for a port serves on it without a restart', async () => {
    writeManifest('cluster-a', 'late.yaml', pickerPoolYaml('late-mc', port.unassigned, 'InferencePoolImport/llm', { answer: 'direct' }));
    const gw = aiGateway(port.unassigned);
    const r = await eventually(async () => {
      const res = await gw.run(request);
      expect(res.outcome, res.reason).toBe('forwarded');
      return res;
    }, 5000, 100);
    expect(r.destination).toBe(ENDPOINT.llmB);
  });
});
