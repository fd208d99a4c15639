/**
 * The router as deployed, over real sockets: an EPP that presents a certificate for
 * attacker.invalid is refused by default (the request gets 503 and the EPP never sees
 * the client's authorization header); skipping verification is an explicit, logged
 * choice that /debug/sources shows; /debug/* stays off a non-loopback admin address.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { createEnvoyStandin, type EnvoyStandin } from '../harness/envoy-standin.js';
import { eventually } from '../helpers/eventually.js';
import { createTestCa, selfSignedLeaf, type TestCa } from '../helpers/pki.js';
import { ensureBuilt, runCli } from './cli-process.js';
import { startRecordingEpp, type RecordingEpp } from '../helpers/recording-epp.js';
import { completionBody, gatewayYaml, poolYaml, routeYaml, writeClusterSet } from './clusterset.js';

let rogue: TestCa;
let attacker: RecordingEpp;
let router: RouterHandle | undefined;
let envoy: EnvoyStandin | undefined;

beforeAll(async () => {
  rogue = createTestCa('rogue CA');
  const leaf = rogue.leaf('attacker', ['DNS:attacker.invalid']);
  attacker = await startRecordingEpp({ cert: leaf.cert, key: leaf.key });
});
afterAll(() => {
  attacker.stop();
  rogue.remove();
});
afterEach(async () => {
  envoy?.close();
  await router?.shutdown();
  router = undefined;
  attacker.calls.length = 0;
});

let configFile: string;

/** Starts a router whose only pool's EPP is the attacker (or `epp`), with these EPP TLS settings and listeners. */
async function start(tls: Record<string, unknown>, listen: Record<string, string>, epp: RecordingEpp = attacker): Promise<string[]> {
  const set = writeClusterSet(
    [
      {
        name: 'cluster-a',
        files: {
          'gateway.yaml': gatewayYaml(),
          'pool.yaml': poolYaml('pool-x'),
          'route.yaml': routeYaml('r', 'llm.example', [{ kind: 'InferencePool', name: 'pool-x' }]),
        },
        epps: { 'pool-x-epp': epp.address },
      },
    ],
    { listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0', ...listen } as { extProc: string; admin: string } },
  );
  const raw = parse(readFileSync(set.configFile, 'utf8')) as { clusters: { epp: { tls: unknown; metrics?: unknown } }[] };
  raw.clusters[0]!.epp.tls = tls;
  // The recording EPPs serve no /metrics: scraping is off, which the router reports as no load signal.
  raw.clusters[0]!.epp.metrics = { enabled: false };
  configFile = set.configFile;
  writeFileSync(set.configFile, stringify(raw));
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('warn', sink), processMetrics: false });
  envoy = createEnvoyStandin(router.extProcAddress);
  return lines;
}

const send = () =>
  envoy!.run({ authority: 'llm.example', path: '/v1/completions', headers: { authorization: 'Bearer client-secret' }, body: [completionBody()] });

async function getJson(url: string): Promise<{ status: number; body: string }> {
  const res = await request(url);
  return { status: res.statusCode, body: await res.body.text() };
}

describe('EPP certificate verification', () => {
  it('by default: the attacker.invalid certificate is refused, the request gets 503 and the EPP sees nothing', async () => {
    await start({ enabled: true, serverName: 'epp.example' }, {});
    const r = await send();
    expect(r.status).toBe(503);
    expect(attacker.calls).toHaveLength(0);
  });

  it('insecureSkipVerify is an explicit choice: warned at start, shown in /debug/sources (and the EPP then gets the request)', async () => {
    const logs = await start({ enabled: true, insecureSkipVerify: true }, {});
    const warning = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['field'] === 'clusters[0].epp.tls.insecureSkipVerify');
    expect(warning).toMatchObject({ level: 'warn', cluster: 'cluster-a' });
    const sources = JSON.parse((await getJson(`http://${router!.adminAddress}/debug/sources`)).body) as { security: Record<string, { eppTls: string }> };
    expect(sources.security['cluster-a']!.eppTls).toBe('NOT VERIFIED (insecureSkipVerify)');
    await send();
    expect(attacker.calls).toHaveLength(1);
    expect(attacker.calls[0]!.firstMessage!.toString('latin1')).toContain('client-secret');
  });
});

describe('a stock EPP\'s certificate, self-signed at its start', () => {
  let leaf: ReturnType<typeof selfSignedLeaf>;
  let stock: RecordingEpp;
  beforeAll(async () => {
    leaf = selfSignedLeaf('Inference Ext');
    stock = await startRecordingEpp({ cert: leaf.cert, key: leaf.key });
  });
  afterAll(() => {
    stock.stop();
    leaf.remove();
  });

  it('is refused by default: 503, the EPP sees nothing, /debug/signals says tls-unverified and the log says how to trust it', async () => {
    const logs = await start({ enabled: true }, { debug: '127.0.0.1:0' }, stock);
    expect((await send()).status).toBe(503);
    expect(stock.calls).toHaveLength(0);
    await eventually(async () => {
      const signals = JSON.parse((await getJson(`http://${router!.debugAddress}/debug/signals`)).body) as { candidates: Record<string, { reason: string }> };
      expect(signals.candidates['cluster-a/default/pool-x']?.reason).toBe('health:tls-unverified');
    }, 5000);
    const hint = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).includes('certificate is not trusted'));
    expect(hint).toMatchObject({ level: 'warn', cluster: 'cluster-a' });
    expect(String(hint!['error'])).toMatch(/self[- ]signed certificate/);
    expect(String(hint!['msg'])).toContain('epp.tls.insecureSkipVerify: true');
  });

  it('insecureSkipVerify: the request gets through, warned at start, on /debug/signals and by --check (exit 0)', async () => {
    const logs = await start({ enabled: true, insecureSkipVerify: true }, { debug: '127.0.0.1:0' }, stock);
    expect(logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['field'] === 'clusters[0].epp.tls.insecureSkipVerify')).toHaveLength(1);
    await send();
    expect(stock.calls).toHaveLength(1);
    const signals = JSON.parse((await getJson(`http://${router!.debugAddress}/debug/signals`)).body) as { warnings: { field?: string; message: string }[] };
    expect(signals.warnings.map((w) => w.field)).toEqual(['clusters[0].epp.tls.insecureSkipVerify', 'clusters[0].epp.metrics.enabled']);
    ensureBuilt();
    const check = await runCli(['--check', '--config', configFile]);
    expect(check.code, check.stderr).toBe(0);
    expect(check.stdout).toContain('warning: cluster cluster-a: clusters[0].epp.tls.insecureSkipVerify: the certificates of this member\'s EPPs are not verified');
    expect(check.stdout).toMatch(/warning: cluster cluster-a: clusters\[0\]\.epp\.metrics\.enabled: pool cluster-a\/default\/pool-x has no load signal/);
  });
});

describe('admin surface', () => {
  it('a non-loopback admin address serves probes and metrics but not /debug/*; listen.debug on loopback does', async () => {
    await start({ enabled: false }, { admin: '0.0.0.0:0', debug: '127.0.0.1:0' });
    const port = router!.adminAddress.slice(router!.adminAddress.lastIndexOf(':') + 1);
    const admin = `http://127.0.0.1:${port}`;
    expect((await getJson(`${admin}/readyz`)).status).toBe(200);
    expect((await getJson(`${admin}/metrics`)).status).toBe(200);
    const refused = await getJson(`${admin}/debug/routes`);
    expect(refused.status).toBe(404);
    expect(refused.body).toContain('listen.debug');
    expect((await getJson(`http://${router!.debugAddress}/debug/routes`)).status).toBe(200);
  });

  it('without listen.debug, a non-loopback admin address serves no /debug/* unless admin.exposeDebug', async () => {
    await start({ enabled: false }, { admin: '0.0.0.0:0' });
    const port = router!.adminAddress.slice(router!.adminAddress.lastIndexOf(':') + 1);
    const r = await getJson(`http://127.0.0.1:${port}/debug/sources`);
    expect(r.status).toBe(404);
    expect(r.body).toContain('admin.exposeDebug');
  });
});
