/**
 * The relay through real sockets: a gateway that dials only its pool's pods (Istio's
 * override_host, agentgateway's validated override) is answered with the relay's address
 * and a relay token; the relay (the stand-in of envoy/relay.yaml) asks the router's relay
 * verifier (listen.relay) and forwards to the token's target, or answers 403. The relay is
 * not an open proxy: every refusal leaves the target untouched (no connection at all).
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:http2';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { RELAY_TOKEN_HEADER, RelaySigner, type RelayClaim } from '../../src/credentials/relay-token.js';
import { createLogger } from '../../src/log.js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { startRouter, type RouterHandle } from '../../src/runtime/router.js';
import { gatewayYaml, writeClusterSet } from '../e2e/clusterset.js';
import { createOverrideHostGateway } from '../harness/gateways/override-host.js';
import { pickingScript, startScriptedEpp, type ScriptedEpp } from '../harness/gateways/scripted-epp.js';
import { createValidatedGateway } from '../harness/gateways/validated.js';
import type { HeaderList } from '../harness/headers.js';
import { forwardHttp } from '../harness/http-upstream.js';
import { createEnvoyStandin } from '../harness/envoy-standin.js';
import { RELAY_FILTER, startRelayStandin, type RelayStandin } from '../harness/relay-standin.js';
import { eventually } from '../helpers/eventually.js';
import { createTestCa, type TestCa } from '../helpers/pki.js';

const HOST = 'llm.example';
const k1 = randomBytes(32);
const k2 = randomBytes(32);

interface Target {
  readonly address: string;
  connections: number;
  readonly requests: IncomingHttpHeaders[];
  readonly server: Server;
}

/** A model server (or, with `tls`, a remote gateway) that counts connections and records request headers. */
async function startTarget(host: string, tls?: { cert: Buffer; key: Buffer }): Promise<Target> {
  const t = { connections: 0, requests: [] as IncomingHttpHeaders[] } as Target & { address: string };
  const handler = (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => {
    t.requests.push(req.headers);
    req.resume();
    req.on('end', () => res.end(JSON.stringify({ servedBy: t.address })));
  };
  const server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : createHttpServer(handler);
  server.on(tls ? 'secureConnection' : 'connection', () => t.connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return Object.assign(t, { server, address: `${host}:${(server.address() as AddressInfo).port}` });
}

let ca: TestCa;
let router: RouterHandle;
let relay: RelayStandin;
let picker: ScriptedEpp;
let keyFile: string;
let endpoint: Target;
let outside: Target;
let parent: Target;
let claim: RelayClaim;
const signer = new RelaySigner(() => ({ keys: [k1] }), 10_000);

beforeAll(async () => {
  ca = createTestCa('relay test CA');
  endpoint = await startTarget('127.0.0.1');
  // Loopback, but outside cluster-b's eppAnswers.destinations (127.0.0.1/32 only).
  outside = await startTarget('127.0.0.2');
  const leaf = ca.leaf('remote gateway', [`DNS:${HOST}`]);
  parent = await startTarget('127.0.0.1', leaf);
  const set = writeClusterSet(
    [
      { name: 'cluster-a', files: { 'gateway.yaml': gatewayYaml() } },
      { name: 'cluster-b', files: { 'gateway.yaml': gatewayYaml() } },
    ],
    { listen: { extProc: '127.0.0.1:0', admin: '127.0.0.1:0' } },
  );
  keyFile = join(set.dir, 'relay-key');
  writeFileSync(keyFile, `${k1.toString('base64')}\n`);
  const raw = parse(readFileSync(set.configFile, 'utf8')) as Record<string, any>;
  raw.listen.relay = '127.0.0.1:0';
  raw.endpointPicker = { relay: { keyFile } };
  raw.credentials = { pollIntervalMs: 20 };
  raw.extProc = { ...raw.extProc, maxStreams: 4, firstMessageTimeoutMs: 300 };
  for (const c of raw.clusters) c.eppAnswers = { destinations: { allow: ['127.0.0.1/32'], deny: [] } };
  writeFileSync(set.configFile, stringify(raw));
  router = await startRouter(await loadConfig(set.configFile), { logger: createLogger('silent'), processMetrics: false });
  relay = await startRelayStandin({ verifier: router.relayAddress!, parentTls: { ca: ca.cert } });
  // The router in the Endpoint Picker role, as far as the gateway sees it: the relay's address,
  // header and envoy.lb, and a fresh token for `claim` in the same answer.
  picker = await startScriptedEpp(
    pickingScript(() => ({ header: relay.address, metadata: relay.address, headers: { [RELAY_TOKEN_HEADER]: signer.sign(claim, Date.now()) } })),
  );
});

afterAll(async () => {
  await relay?.close();
  picker?.stop();
  await router?.shutdown();
  for (const t of [endpoint, outside, parent]) t?.server.close();
  ca?.remove();
});

const completion = { authority: HOST, path: '/v1/completions', body: '{"model":"llama","prompt":"hi"}' };
const viaHttp = (dest: string, fwd: Parameters<typeof forwardHttp>[1]) => forwardHttp(dest, fwd);

/** A client's request straight to the relay (the pool's pods are reachable in the cluster). */
async function direct(headers: HeaderList = []) {
  const r = await forwardHttp(relay.address, { headers: [[':authority', HOST], [':path', '/v1/completions'], [':method', 'POST'], ...headers], body: Buffer.from('{}') });
  return { status: r.status ?? 0, body: JSON.parse(String(r.body)) as { error?: { reason: string; message: string } } };
}

async function metric(name: string, label: string): Promise<number> {
  const text = await router.metrics.registry.metrics();
  const m = new RegExp(`^${name}\\{${label}\\} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

describe('relay: forwards what a router chose', () => {
  it('Istio (override_host over the relay pods): the token\'s endpoint gets the request, without the token', async () => {
    claim = { target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' };
    const before = endpoint.requests.length;
    const gw = createOverrideHostGateway(picker.address, [relay.address]);
    const r = await gw.run({ ...completion, upstream: viaHttp });
    gw.close();
    expect(r.destination).toBe(relay.address);
    expect(gw.members.roundRobinPicks).toEqual([]);
    expect(r.status).toBe(200);
    expect(JSON.parse(String(r.response.body))).toEqual({ servedBy: endpoint.address });
    expect(endpoint.requests.length).toBe(before + 1);
    const seen = endpoint.requests.at(-1)!;
    expect(seen[RELAY_TOKEN_HEADER]).toBeUndefined();
    expect(seen['x-gateway-destination-endpoint']).toBe(endpoint.address);
    expect(seen['x-mcip-destination-kind']).toBeUndefined();
    expect(relay.forwards.at(-1)).toMatchObject({ destination: endpoint.address, tls: false });
  });

  it('agentgateway (validated override, the relay is a pool pod): forwarded as well', async () => {
    claim = { target: endpoint.address, kind: 'endpoint', cluster: 'cluster-a' };
    const gw = createValidatedGateway(picker.address, [relay.address]);
    const r = await gw.run({ ...completion, upstream: viaHttp });
    gw.close();
    expect(r.status).toBe(200);
    expect(JSON.parse(String(r.response.body))).toEqual({ servedBy: endpoint.address });
    expect(endpoint.requests.at(-1)![RELAY_TOKEN_HEADER]).toBeUndefined();
  });

  it('parent kind: over TLS to the remote gateway (certificate checked for the request host), without the kind mark', async () => {
    claim = { target: parent.address, kind: 'parent', cluster: 'cluster-b' };
    const gw = createOverrideHostGateway(picker.address, [relay.address]);
    const r = await gw.run({ ...completion, upstream: viaHttp });
    gw.close();
    expect(r.status).toBe(200);
    expect(parent.connections).toBe(1);
    expect(relay.forwards.at(-1)).toMatchObject({ destination: parent.address, tls: true });
    const seen = parent.requests.at(-1)!;
    expect(seen.host).toBe(HOST);
    expect(seen['x-mcip-destination-kind']).toBeUndefined();
    expect(seen[RELAY_TOKEN_HEADER]).toBeUndefined();
    expect(await metric('mcip_relay_forwards_total', 'kind="parent"')).toBe(1);
  });
});

describe('relay: not an open proxy (403, the target untouched)', () => {
  /** Runs `send`, expects a 403 naming `reason`, and no new connection at any target. */
  async function refused(reason: string, send: () => Promise<{ status: number; body: { error?: { reason: string } } }>): Promise<void> {
    const before = [endpoint.connections, outside.connections, parent.connections];
    const forwards = relay.forwards.length;
    const counted = await metric('mcip_relay_refusals_total', `reason="${reason}"`);
    const r = await send();
    expect(r.status).toBe(403);
    expect(r.body.error?.reason).toBe(reason);
    expect(relay.forwards.length).toBe(forwards);
    expect([endpoint.connections, outside.connections, parent.connections]).toEqual(before);
    expect(await metric('mcip_relay_refusals_total', `reason="${reason}"`)).toBe(counted + 1);
  }

  it('a client calling the relay without a token', async () => {
    await refused('missing', () => direct([['x-gateway-destination-endpoint', endpoint.address]]));
  });

  it('a client-supplied token not signed with a relay key', async () => {
    const forger = new RelaySigner(() => ({ keys: [randomBytes(32)] }), 10_000);
    const token = forger.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now());
    await refused('forged', () => direct([[RELAY_TOKEN_HEADER, token]]));
  });

  it('a replay of a token that was forwarded once', async () => {
    const token = signer.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now());
    const served = endpoint.requests.length;
    expect((await direct([[RELAY_TOKEN_HEADER, token]])).status).toBe(200);
    expect(endpoint.requests.length).toBe(served + 1);
    await refused('replayed', () => direct([[RELAY_TOKEN_HEADER, token]]));
  });

  it('an expired token', async () => {
    const token = signer.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now() - 12_001);
    await refused('expired', () => direct([[RELAY_TOKEN_HEADER, token]]));
  });

  it("a target outside the member's eppAnswers.destinations", async () => {
    const to = (target: string) => signer.sign({ target, kind: 'endpoint', cluster: 'cluster-b' }, Date.now());
    await refused('destination_denied', () => direct([[RELAY_TOKEN_HEADER, to('169.254.169.254:80')]]));
    await refused('destination_denied', () => direct([[RELAY_TOKEN_HEADER, to(outside.address)]]));
    expect(outside.connections).toBe(0);
  });

  it('a member that is not in the ClusterSet, through the gateway', async () => {
    claim = { target: endpoint.address, kind: 'endpoint', cluster: 'cluster-z' };
    const gw = createOverrideHostGateway(picker.address, [relay.address]);
    await refused('unknown_member', async () => {
      const r = await gw.run({ ...completion, upstream: viaHttp });
      return { status: r.status, body: JSON.parse(String(r.response.body)) };
    });
    gw.close();
  });
});

describe('relay verifier: fails closed', () => {
  it('a relay Envoy that sends the request body too gets no forward: the stream fails, Envoy answers 500', async () => {
    const envoy = createEnvoyStandin(router.relayAddress!);
    const before = endpoint.connections;
    const token = signer.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now());
    const r = await envoy.run({ ...completion, headers: { [RELAY_TOKEN_HEADER]: token } }, { ...RELAY_FILTER, requestBodyMode: 'BUFFERED' });
    envoy.close();
    expect(r.status).toBe(500);
    expect(r.messages.find((m) => m.dir === 'end')).toMatchObject({ grpcCode: 3, grpcDetails: expect.stringContaining('request headers only') });
    expect(endpoint.connections).toBe(before);
  });
});

describe('relay verifier: bounded', () => {
  it('a stream that sends no request headers is ended; streams past extProc.maxStreams are refused at once', async () => {
    const session = connect(`http://${router.relayAddress}`);
    const open = () => {
      const s = session.request({ ':method': 'POST', ':path': EXT_PROC_PROCESS_PATH, 'content-type': 'application/grpc', te: 'trailers' });
      return new Promise<{ status: string; message: string; ms: number }>((resolve) => {
        const t = performance.now();
        // Like a gRPC client (Envoy resets the stream once it has the status), the call's own half
        // ends with the status; left open, the connection would hold the router's drain at shutdown.
        const ended = (h: IncomingHttpHeaders): void => {
          resolve({ status: String(h['grpc-status']), message: String(h['grpc-message']), ms: performance.now() - t });
          s.close();
        };
        s.on('trailers', ended);
        s.on('response', (h) => h['grpc-status'] !== undefined && ended(h));
        s.resume();
      });
    };
    const idle = [open(), open(), open(), open()];
    const fifth = await open();
    expect(fifth.status).toBe('8'); // RESOURCE_EXHAUSTED
    expect(decodeURIComponent(fifth.message)).toContain('extProc.maxStreams (4)');
    for (const r of await Promise.all(idle)) {
      expect(r.status).toBe('4'); // DEADLINE_EXCEEDED
      expect(decodeURIComponent(r.message)).toContain('no request headers within extProc.firstMessageTimeoutMs (300 ms)');
    }
    session.close();
    // The slots are free again: a request goes through.
    const token = signer.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now());
    expect((await direct([[RELAY_TOKEN_HEADER, token]])).status).toBe(200);
  });
});

describe('relay keys', () => {
  it('a rotated key file is used without a restart: the old key verifies while it is listed', async () => {
    const oldKey = signer;
    const newKey = new RelaySigner(() => ({ keys: [k2] }), 10_000);
    const token = (s: RelaySigner) => [RELAY_TOKEN_HEADER, s.sign({ target: endpoint.address, kind: 'endpoint', cluster: 'cluster-b' }, Date.now())] as [string, string];
    writeFileSync(`${keyFile}.new`, `${k2.toString('base64')}\n${k1.toString('base64')}\n`);
    renameSync(`${keyFile}.new`, keyFile);
    await eventually(async () => expect((await direct([token(newKey)])).status).toBe(200));
    expect((await direct([token(oldKey)])).status).toBe(200);
    writeFileSync(`${keyFile}.new`, `${k2.toString('base64')}\n`);
    renameSync(`${keyFile}.new`, keyFile);
    await eventually(async () => expect((await direct([token(oldKey)])).body.error?.reason).toBe('forged'));
    expect((await direct([token(newKey)])).status).toBe(200);
  });
});
