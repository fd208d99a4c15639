import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { Agent } from 'undici';
import { RouterMetrics } from '../../src/admin/metrics.js';
import { debugPlacement, json, startAdminServer, type AdminServer } from '../../src/admin/server.js';
import { routerConfigSchema } from '../../src/config/schema.js';
import { createLogger } from '../../src/log.js';

const logger = createLogger('silent');
let server: AdminServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('admin server', () => {
  it('serves liveness, readiness that follows the router, metrics and extra routes', async () => {
    const metrics = new RouterMetrics({ defaultMetrics: false });
    let ready = false;
    server = await startAdminServer('127.0.0.1:0', {
      registry: metrics.registry,
      logger,
      ready: () => (ready ? { ready: true } : { ready: false, reason: 'no routing snapshot yet' }),
      routes: { '/debug/thing': (url) => json(200, { q: url.searchParams.get('q') }) },
    });
    const base = `http://${server.address}`;

    expect((await request(`${base}/healthz`)).statusCode).toBe(200);
    const notReady = await request(`${base}/readyz`);
    expect(notReady.statusCode).toBe(503);
    expect(await notReady.body.text()).toContain('no routing snapshot yet');
    ready = true;
    expect((await request(`${base}/readyz`)).statusCode).toBe(200);

    metrics.streamStarted();
    metrics.streamFinished({ route: 'ns/r', pool: 'p', cluster: 'c', outcome: 'relayed', durationSeconds: 0.01 });
    const m = await request(`${base}/metrics`);
    expect(m.headers['content-type']).toContain('text/plain');
    const text = await m.body.text();
    expect(text).toContain('mcip_requests_total{route="ns/r",pool="p",cluster="c",outcome="relayed"} 1');
    expect(text).toContain('mcip_active_streams 0');

    const dbg = await request(`${base}/debug/thing?q=x`);
    expect(await dbg.body.json()).toEqual({ q: 'x' });
    expect((await request(`${base}/nope`)).statusCode).toBe(404);
    expect((await request(`${base}/healthz`, { method: 'POST' })).statusCode).toBe(405);
  });

  it('answers 500 without dying when a handler throws', async () => {
    server = await startAdminServer('127.0.0.1:0', {
      registry: new RouterMetrics({ defaultMetrics: false }).registry,
      logger,
      ready: () => ({ ready: true }),
      routes: {
        '/debug/broken': () => {
          throw new Error('boom');
        },
      },
    });
    expect((await request(`http://${server.address}/debug/broken`)).statusCode).toBe(500);
    expect((await request(`http://${server.address}/healthz`)).statusCode).toBe(200);
  });

  it('listens on a unix socket', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mcip-admin-')), 'admin.sock');
    server = await startAdminServer(`unix:${path}`, {
      registry: new RouterMetrics({ defaultMetrics: false }).registry,
      logger,
      ready: () => ({ ready: true }),
      routes: {},
    });
    expect(server.address).toBe(path);
    const agent = new Agent({ connect: { socketPath: path } });
    const res = await request('http://admin/healthz', { dispatcher: agent });
    expect(await res.body.text()).toBe('ok\n');
    await agent.close();
  });

  it('reports a taken port as a listen error', async () => {
    server = await startAdminServer('127.0.0.1:0', {
      registry: new RouterMetrics({ defaultMetrics: false }).registry,
      logger,
      ready: () => ({ ready: true }),
      routes: {},
    });
    await expect(
      startAdminServer(server.address, {
        registry: new RouterMetrics({ defaultMetrics: false }).registry,
        logger,
        ready: () => ({ ready: true }),
        routes: {},
      }),
    ).rejects.toThrow(/EADDRINUSE/);
  });
});

describe('admin server connection limits', () => {
  const LIMITS = { maxConnections: 4, headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 500, maxHeaderBytes: 4096 };

  async function limited(): Promise<{ host: string; port: number }> {
    const metrics = new RouterMetrics({ defaultMetrics: false });
    server = await startAdminServer('127.0.0.1:0', { registry: metrics.registry, logger, ready: () => ({ ready: true }), routes: {}, limits: LIMITS });
    const [host, port] = server.address.split(':');
    return { host: host!, port: Number(port) };
  }

  /** Opens a raw TCP connection, writes `data`, and resolves with what the server sent until it closed (or `waitMs` passed). */
  function raw(addr: { host: string; port: number }, data: string, waitMs: number): Promise<{ text: string; closed: boolean; sock: Socket }> {
    return new Promise((resolve) => {
      const sock = connect(addr.port, addr.host);
      let text = '';
      const timer = setTimeout(() => resolve({ text, closed: false, sock }), waitMs);
      sock.on('data', (d) => (text += d.toString()));
      sock.on('error', () => {});
      sock.on('close', () => {
        clearTimeout(timer);
        resolve({ text, closed: true, sock });
      });
      sock.write(data);
    });
  }

  it('closes connections over maxConnections at once, and serves again when one goes', async () => {
    const addr = await limited();
    const idle = await Promise.all(Array.from({ length: LIMITS.maxConnections }, () => raw(addr, '', 100)));
    expect(idle.every((c) => !c.closed)).toBe(true);
    const extra = await raw(addr, 'GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n', 2000);
    expect(extra).toMatchObject({ closed: true, text: '' });
    idle[0]!.sock.destroy();
    await new Promise((r) => setTimeout(r, 50));
    const again = await raw(addr, 'GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n', 2000);
    expect(again.text).toMatch(/^HTTP\/1\.1 200/);
    for (const c of idle) c.sock.destroy();
  });

  it('cuts a client that trickles its headers after headersTimeoutMs (408), freeing its slot', async () => {
    const addr = await limited();
    const t0 = Date.now();
    const slow = await raw(addr, 'GET /healthz HTTP/1.1\r\nhost: x\r\n', 5000);
    expect(slow.closed).toBe(true);
    expect(slow.text).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('answers 431 to a header block over maxHeaderBytes', async () => {
    const addr = await limited();
    const big = await raw(addr, `GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(LIMITS.maxHeaderBytes)}\r\n\r\n`, 2000);
    expect(big.text).toMatch(/^HTTP\/1\.1 431/);
    const small = await raw(addr, 'GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n', 2000);
    expect(small.text).toMatch(/^HTTP\/1\.1 200/);
  });
});

describe('where /debug/* is served', () => {
  it('on a loopback admin address; not on a pod-IP admin address unless exposed; on listen.debug when set', () => {
    expect(debugPlacement({ admin: '127.0.0.1:9901' }, false)).toEqual({ onAdmin: true });
    expect(debugPlacement({ admin: '[::1]:9901' }, false)).toEqual({ onAdmin: true });
    expect(debugPlacement({ admin: 'unix:/run/admin.sock' }, false)).toEqual({ onAdmin: true });
    const refused = debugPlacement({ admin: '0.0.0.0:9901' }, false);
    expect(refused.onAdmin).toBe(false);
    expect(refused.reason).toMatch(/listen\.debug.*admin\.exposeDebug/);
    expect(debugPlacement({ admin: '0.0.0.0:9901' }, true)).toEqual({ onAdmin: true });
    expect(debugPlacement({ admin: '0.0.0.0:9901', debug: '127.0.0.1:9902' }, false)).toMatchObject({ onAdmin: false, listen: '127.0.0.1:9902' });
  });

  it('the config refuses a non-loopback listen.debug unless admin.exposeDebug', () => {
    const base = { clusterName: 'a', gateways: [{ namespace: 'g', name: 'g' }], clusters: [{ name: 'a', manifests: { paths: ['m'] } }] };
    const r = routerConfigSchema.safeParse({ ...base, listen: { debug: '0.0.0.0:9902' } });
    expect(r.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['listen.debug', expect.stringContaining('admin.exposeDebug')]]);
    expect(routerConfigSchema.safeParse({ ...base, listen: { debug: '0.0.0.0:9902' }, admin: { exposeDebug: true } }).success).toBe(true);
    expect(routerConfigSchema.safeParse({ ...base, listen: { debug: '127.0.0.1:9902' } }).success).toBe(true);
  });

  it('a listener without the debug routes answers /debug/* with 404 and the reason', async () => {
    server = await startAdminServer('127.0.0.1:0', {
      registry: new RouterMetrics({ defaultMetrics: false }).registry,
      logger,
      ready: () => ({ ready: true }),
      routes: {},
      debugElsewhere: 'served elsewhere: see listen.debug',
    });
    const res = await request(`http://${server.address}/debug/routes`);
    expect(res.statusCode).toBe(404);
    expect(await res.body.text()).toBe('served elsewhere: see listen.debug\n');
  });
});
