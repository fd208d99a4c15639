/**
 * TLS on the picker ports as gateways meet it: by default the router serves a self-signed
 * certificate naming its Service (gateways connect without verifying: NGINX Gateway Fabric's
 * skip-verify default), a plaintext client is refused, and `tls.plaintext` serves h2c.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { completionBody, poolYaml, startEpps, stopAll, writeClusterSet } from '../e2e/clusterset.js';
import { createNgfGateway } from '../harness/gateways/ngf-one-shot.js';
import type { SimulatedEpp } from '../harness/simulated-epp.js';
import { peerCertificate } from '../helpers/peer-certificate.js';
import { freePorts, pickerPoolYaml } from './picker-fixtures.js';

const ENDPOINT = { llmA: '10.1.0.3:8000' };
let epps: Record<string, SimulatedEpp>;
let router: RouterHandle;
let tlsPort: number;
let plainRouter: RouterHandle;
let plainPort: number;

async function start(port: number, tls: Record<string, unknown>): Promise<RouterHandle> {
  const set = writeClusterSet(
    [{ name: 'cluster-a', files: { 'pools.yaml': poolYaml('llm'), 'picker.yaml': pickerPoolYaml('llm-mc', port, 'InferencePool/llm', { answer: 'direct' }) }, epps: { 'llm-epp': epps.llmA!.address } }],
    { extra: { endpointPicker: { namespace: 'default', serviceName: 'mcip-router', address: '127.0.0.1', ports: [port], tls } } },
  );
  const config = await loadConfig(set.configFile);
  return startRouter(config, { logger: createLogger('silent'), processMetrics: false });
}

beforeAll(async () => {
  epps = await startEpps(ENDPOINT);
  [tlsPort, plainPort] = (await freePorts(2)) as [number, number];
  router = await start(tlsPort, {});
  plainRouter = await start(plainPort, { plaintext: true });
});

afterAll(async () => {
  await router?.shutdown();
  await plainRouter?.shutdown();
  await stopAll(epps ?? {});
});

const ngf = (port: number, tls: 'skip-verify' | 'disabled') =>
  createNgfGateway({ dial: `127.0.0.1:${port}`, serviceName: 'mcip-router', namespace: 'default', members: [], tls });

describe('TLS on the picker ports', () => {
  it('serves TLS by default with a self-signed certificate naming the Service; a gateway that does not verify gets its pick', async () => {
    const r = await ngf(tlsPort, 'skip-verify').run({ headers: { 'content-type': 'application/json' }, body: completionBody() });
    expect(r.status, r.shimError).toBe(200);
    expect(r.destination).toBe(ENDPOINT.llmA);
    const cert = await peerCertificate('127.0.0.1', tlsPort);
    expect(cert.subjectAltName).toContain('DNS:mcip-router.default.svc');
  });

  it('refuses a plaintext client on a TLS picker port', async () => {
    const r = await ngf(tlsPort, 'disabled').run({ headers: { 'content-type': 'application/json' }, body: completionBody() });
    expect(r.destination).toBeUndefined();
    expect(r.shimError).toBeDefined();
  });

  it('serves h2c when endpointPicker.tls.plaintext is set', async () => {
    const r = await ngf(plainPort, 'disabled').run({ headers: { 'content-type': 'application/json' }, body: completionBody() });
    expect(r.status, r.shimError).toBe(200);
    expect(r.destination).toBe(ENDPOINT.llmA);
  });
});
