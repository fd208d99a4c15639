import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ParentProber, type ParentProbeSettings } from '../../src/signals/parent-prober.js';
import { systemClock } from '../../src/signals/types.js';
import { startFakeMetricsServer, type FakeMetricsServer } from '../harness/fake-metrics-server.js';
import { withinProcessMs } from '../helpers/work-time.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tcpServer(): Promise<{ server: Server; address: string }> {
  const server = createServer((s) => s.destroy());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return { server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function prober(over: Partial<ParentProbeSettings> & { address: string }) {
  const p = new ParentProber({ mode: 'tcp', scheme: 'http', intervalMs: 50, timeoutMs: 300, healthyThreshold: 2, unhealthyThreshold: 3, ...over }, { clock: systemClock });
  cleanups.push(() => p.stop());
  return p;
}

describe('ParentProber', () => {
  it('tcp: connect succeeds, refused fails', async () => {
    const { server, address } = await tcpServer();
    const p = prober({ address });
    expect(await p.probeOnce()).toMatchObject({ ok: true, reached: true });
    await new Promise<void>((r) => server.close(() => r()));
    expect(await p.probeOnce()).toMatchObject({ ok: false, reached: false, reason: 'refused' });
  });

  it('tcp: a bad address fails without throwing', async () => {
    expect(await prober({ address: 'not-an-address' }).probeOnce()).toMatchObject({ ok: false, reason: 'bad-address' });
  });

  it('http: 2xx is up, 5xx is down (but reached), a hang times out', async () => {
    const srv: FakeMetricsServer = await startFakeMetricsServer({ path: '/healthz', payload: 'ok' });
    cleanups.push(() => srv.stop());
    const p = prober({ address: `127.0.0.1:${srv.port}`, mode: 'http', path: '/healthz', timeoutMs: 200 });
    expect(await p.probeOnce()).toMatchObject({ ok: true, reached: true });
    srv.setStatus(503);
    expect(await p.probeOnce()).toMatchObject({ ok: false, reached: true, reason: 'http-503' });
    srv.setHang(true);
    expect(await withinProcessMs(1000, 'hung probe', () => p.probeOnce())).toMatchObject({ ok: false, reached: false, reason: 'timeout' });
  });

  it('runs on its interval and applies thresholds', async () => {
    const { server, address } = await tcpServer();
    const statuses: string[] = [];
    const p = new ParentProber(
      { address, mode: 'tcp', scheme: 'http', intervalMs: 20, timeoutMs: 200, healthyThreshold: 2, unhealthyThreshold: 3 },
      {
        clock: systemClock,
        onResult: (_o, s) => {
          statuses.push(s.status);
          if (statuses.length === 2) server.close();
        },
      },
    );
    cleanups.push(() => p.stop());
    p.start();
    await expect.poll(() => statuses.length, { timeout: 3000 }).toBeGreaterThanOrEqual(5);
    expect(statuses.slice(0, 5)).toEqual(['healthy', 'healthy', 'healthy', 'healthy', 'unhealthy']);
  });
});
