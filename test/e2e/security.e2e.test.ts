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
import { createTestCa, type TestCa } from '../helpers/pki.js';
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

/** Starts a router whose only pool's EPP is the attacker, with these EPP TLS settings and listeners. */
async function start(tls: Record<string, unknown>, listen: Record<string, string>): Promise<string[]> {
  const set = writeClusterSet(
    [
      {
        name: 'cluster-a',
        files: {
          'gateway.yaml': gatewayYaml(),
          'pool.yaml': poolYaml('pool-x'),
          'route.yaml': routeYaml('r', 'llm.example', [{ kind: 'InferencePool', name: 'pool-x' }]),
        },
        epps: { 'pool-x-epp': attacker.address },
      },
    ],
    { listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0', ...listen } as { extProc: string; admin: string } },
  );
  const raw = parse(readFileSync(set.configFile, 'utf8')) as { clusters: { epp: { tls: unknown } }[] };
  raw.clusters[0]!.epp.tls = tls;
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
