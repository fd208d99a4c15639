// The server's own surface: TLS to EPPs, unix socket listen, gRPC health, drain.
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { EppClientPool } from '../../src/transport/epp-client.js';
import { noopObserver } from '../../src/extproc/observer.js';
import { createExtProcServer, type ExtProcServer } from '../../src/extproc/server.js';
import { HealthClient } from '../harness/protos.js';
import { TLS_FIXTURES } from '../harness/simulated-epp.js';
import { seededRandom } from '../helpers/random.js';
import { jsonBody, POOL_A_ENDPOINTS, startScenario, waitFor, type Scenario } from './scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const req = { authority: 'local.example', path: '/v1/completions', body: jsonBody(1024) };

describe('TLS to the EPP', () => {
  it('with verification disabled (EPPs self-sign by default)', async () => {
    sc = await startScenario({ eppTls: { enabled: true, insecureSkipVerify: true } });
    const r = await sc.envoy.run(req);
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
  });

  it('verified against a CA file', async () => {
    sc = await startScenario({ eppTls: { enabled: true, insecureSkipVerify: false, caFile: TLS_FIXTURES.certPath } });
    const r = await sc.envoy.run(req);
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
  });

  it('a CA file and a serverName the certificate does not carry: 503', async () => {
    sc = await startScenario({ eppTls: { enabled: true, insecureSkipVerify: false, caFile: TLS_FIXTURES.certPath, serverName: 'epp.other.example' } });
    const r = await sc.envoy.run(req);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.response.body.toString()).error.type).toBe('epp_unavailable');
  });

  it('verification on without a CA file (system roots) rejects the self-signed certificate: 503', async () => {
    sc = await startScenario({ eppTls: { enabled: true, insecureSkipVerify: false } });
    const r = await sc.envoy.run(req);
    expect(r.status).toBe(503);
  });

  it('a CA file that cannot be read: 503 saying so', async () => {
    sc = await startScenario({ eppTls: { enabled: true, insecureSkipVerify: false, caFile: '/nonexistent/ca.pem' } });
    const r = await sc.envoy.run(req);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.response.body.toString()).error.message).toContain('/nonexistent/ca.pem');
  });
});

describe('listening', () => {
  it('on a unix socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcip-extproc-'));
    try {
      sc = await startScenario({ listen: `unix:${join(dir, 'ext_proc.sock')}` });
      expect(sc.address).toBe(`unix:${join(dir, 'ext_proc.sock')}`);
      const r = await sc.envoy.run(req);
      expect(POOL_A_ENDPOINTS).toContain(r.destination);
    } finally {
      await sc?.stop();
      sc = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

function bareServer(): { server: ExtProcServer; pool: EppClientPool } {
  const pool = new EppClientPool({ maxMessageBytes: 16 << 20, connectTimeoutMs: 1000 });
  const server = createExtProcServer({
    snapshot: () => undefined,
    settings: { ...DEFAULT_EXT_PROC, maxMessageBytes: 16 << 20, eppConnectTimeoutMs: 1000, drainTimeoutMs: 1000 },
    random: seededRandom(1),
    eppClients: pool,
    observer: noopObserver,
    logger: pino({ level: 'silent' }),
  });
  return { server, pool };
}

type HealthStub = grpc.Client & {
  Check(req: { service: string }, cb: (err: grpc.ServiceError | null, res?: { status: number }) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status: number }>;
};

function check(client: HealthStub, service: string): Promise<number> {
  return new Promise((resolve, reject) => client.Check({ service }, (err, res) => (err ? reject(err) : resolve(res!.status))));
}

describe('gRPC health', () => {
  it('NOT_SERVING until setServing(true), NOT_SERVING again while draining; Watch follows', async () => {
    const { server, pool } = bareServer();
    const address = await server.bind('127.0.0.1:0');
    const client = new HealthClient(address, grpc.credentials.createInsecure()) as unknown as HealthStub;
    try {
      expect(await check(client, '')).toBe(2);
      expect(await check(client, 'envoy.service.ext_proc.v3.ExternalProcessor')).toBe(2);
      await expect(check(client, 'inference-extension')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
      const seen: number[] = [];
      const watch = client.Watch({ service: 'envoy.service.ext_proc.v3.ExternalProcessor' });
      watch.on('data', (m: { status: number }) => seen.push(m.status));
      watch.on('error', () => undefined);
      await waitFor(() => seen.length === 1, 2000, () => 'first Watch status');
      server.setServing(true);
      expect(await check(client, '')).toBe(1);
      await waitFor(() => seen.length === 2, 2000, () => 'second Watch status');
      server.setServing(true); // no change, no Watch message
      const drained = server.drain(1000);
      await waitFor(() => seen.length === 3, 2000, () => 'third Watch status');
      expect(seen).toEqual([2, 1, 2]);
      await drained;
    } finally {
      client.close();
      await server.close();
      pool.close();
    }
  });
});

describe('drain', () => {
  it('waits for in-flight streams, then stops accepting', async () => {
    sc = await startScenario({ eppA: { delayMs: 300 } });
    const pending = sc.envoy.run(req);
    await waitFor(() => sc!.server.activeStreams() === 1, 2000, () => 'stream open');
    const started = Date.now();
    await sc.server.drain(5000);
    const r = await pending;
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(sc.server.activeStreams()).toBe(0);
    const after = await sc.envoy.run(req);
    expect(after.status).toBe(500); // Envoy cannot open the ext_proc stream any more
  });

  it('cuts what is left after the timeout', async () => {
    sc = await startScenario({ eppA: { hang: true } });
    const pending = sc.envoy.run(req);
    await waitFor(() => sc!.server.activeStreams() === 1, 2000, () => 'stream open');
    await withinProcessMs(2000, 'drain(200)', () => sc!.server.drain(200));
    const r = await pending;
    expect(r.status).toBe(500);
    await sc.settled();
  });
});
