import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_POOL_METRIC_NAMES } from '../../src/config/schema.js';
import { MetricsScraper, type ScrapeSettings } from '../../src/signals/metrics-scraper.js';
import { systemClock } from '../../src/signals/types.js';
import { TLS_FIXTURES } from '../harness/simulated-epp.js';
import { poolMetricsText, startFakeMetricsServer, type FakeMetricsServer } from '../harness/fake-metrics-server.js';
import { startPingServer, withLoopDelay } from '../harness/loop-delay.js';
import { withinProcessMs } from '../helpers/work-time.js';

const servers: FakeMetricsServer[] = [];
const scrapers: MetricsScraper[] = [];
afterEach(async () => {
  for (const s of scrapers.splice(0)) s.stop();
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function server(opts: Parameters<typeof startFakeMetricsServer>[0] = {}) {
  const s = await startFakeMetricsServer(opts);
  servers.push(s);
  return s;
}

function scraper(origin: string, over: Partial<ScrapeSettings> = {}) {
  const s = new MetricsScraper(
    { origin, path: '/metrics', tls: { insecureSkipVerify: false }, intervalMs: 60_000, timeoutMs: 500, maxBytes: 1024 * 1024, names: DEFAULT_POOL_METRIC_NAMES, ...over },
    { clock: systemClock },
  );
  scrapers.push(s);
  return s;
}

describe('MetricsScraper', () => {
  it('selects series by label name = pool name (GIE names), keeping other pools apart', async () => {
    const payload =
      '# HELP inference_pool_per_pod_queue_size per pod\n# TYPE inference_pool_per_pod_queue_size gauge\n' +
      'inference_pool_per_pod_queue_size{name="pool-a",model_server_pod="x"} 9\n' +
      poolMetricsText('pool-a', { readyPods: 3, queueSize: 1.5, kvCache: 0.25, runningRequests: 7 }) +
      poolMetricsText('pool-b', { readyPods: 0 }).replace(/^# .*\n/gm, '') +
      'inference_pool_ready_pods{name="pool-c",extra="x"} NaN\n' +
      'inference_pool_ready_pods 5\n';
    const srv = await server({ payload });
    const s = scraper(srv.origin);
    const r = await s.scrapeOnce();
    expect(r.ok).toBe(true);
    const pools = s.state().pools;
    expect(pools.get('pool-a')).toEqual({ readyPods: 3, queueSize: 1.5, kvCache: 0.25, runningRequests: 7 });
    expect(pools.get('pool-b')).toEqual({ readyPods: 0 });
    expect(pools.get('pool-c')).toEqual({}); // NaN carries no information
    expect(s.state().lastSuccessAt).toBeGreaterThan(0);
  });

  it('reads the llm-d router names, and prefers the first configured name when both exist', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 2, queueSize: 4, kvCache: 0.5 }, 'llmd') });
    const s = scraper(srv.origin);
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(s.state().pools.get('p')).toEqual({ readyPods: 2, queueSize: 4, kvCache: 0.5 });

    srv.setPayload(poolMetricsText('p', { readyPods: 9 }, 'llmd') + poolMetricsText('p', { readyPods: 1 }, 'gie'));
    await s.scrapeOnce();
    expect(s.state().pools.get('p')).toEqual({ readyPods: 1 });
  });

  it('reads the current llm_d_epp_* names first: over the deprecated inference_pool_* and the pre-release names', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 3, queueSize: 6, kvCache: 0.7, runningRequests: 2 }, 'epp') });
    const s = scraper(srv.origin);
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(s.state().pools.get('p')).toEqual({ readyPods: 3, queueSize: 6, kvCache: 0.7, runningRequests: 2 });

    srv.setPayload(poolMetricsText('p', { readyPods: 9, queueSize: 9 }, 'llmd') + poolMetricsText('p', { readyPods: 8, queueSize: 8 }, 'gie') + poolMetricsText('p', { readyPods: 1, queueSize: 1 }, 'epp'));
    await s.scrapeOnce();
    expect(s.state().pools.get('p')).toEqual({ readyPods: 1, queueSize: 1 });
  });

  it('custom metric names', async () => {
    const srv = await server({ payload: 'my_ready{name="p"} 4\n' });
    const s = scraper(srv.origin, { names: { ...DEFAULT_POOL_METRIC_NAMES, readyPods: ['my_ready'] } });
    await s.scrapeOnce();
    expect(s.state().pools.get('p')).toEqual({ readyPods: 4 });
  });

  it('sends the bearer token and re-reads the file when it is rotated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcip-token-'));
    const file = join(dir, 'token');
    writeFileSync(file, 'token-one\n');
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 1 }), token: 'token-one' });
    const s = scraper(srv.origin, { bearerToken: { file }, allowTokenOverPlainHttp: true });
    expect((await s.scrapeOnce()).ok).toBe(true);
    expect(srv.lastAuthorization).toBe('Bearer token-one');

    // Rotation as Kubernetes does it: a new file swapped in atomically.
    srv.setToken('token-two');
    writeFileSync(join(dir, 'token.new'), 'token-two');
    renameSync(join(dir, 'token.new'), file);
    const r = await s.scrapeOnce();
    expect(r.ok).toBe(true);
    expect(srv.lastAuthorization).toBe('Bearer token-two');

    srv.setToken('token-three'); // server rotated first: 401, then the next scrape re-reads
    expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'http-401' });
    writeFileSync(file, 'token-three');
    expect((await s.scrapeOnce()).ok).toBe(true);
  });

  it('a missing token file is a failed scrape', async () => {
    const srv = await server({ payload: 'a 1\n' });
    const s = scraper(srv.origin, { bearerToken: { file: '/nonexistent/token' }, allowTokenOverPlainHttp: true });
    expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'token' });
    expect(srv.requests).toBe(0);
  });

  it('times out on a slow or hung endpoint, keeping the last good values', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 2 }) });
    const s = scraper(srv.origin, { timeoutMs: 200 });
    await s.scrapeOnce();
    const good = s.state().lastSuccessAt;
    srv.setDelayMs(1000);
    expect(await withinProcessMs(900, 'slow endpoint', () => s.scrapeOnce())).toMatchObject({ ok: false, reason: 'timeout' });
    srv.setDelayMs(0);
    srv.setHang(true);
    expect(await withinProcessMs(900, 'hung endpoint', () => s.scrapeOnce())).toMatchObject({ ok: false, reason: 'timeout' });
    expect(s.state()).toMatchObject({ lastSuccessAt: good, consecutiveFailures: 2 });
    expect(s.state().pools.get('p')).toEqual({ readyPods: 2 });
    srv.setHang(false);
    expect((await s.scrapeOnce()).ok).toBe(true);
  });

  it('HTTP 500, malformed and oversized payloads are failed scrapes, never crashes', async () => {
    const srv = await server({ payload: 'a 1\n', status: 500 });
    const s = scraper(srv.origin, { maxBytes: 64 * 1024 });
    expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'http-500' });
    srv.setStatus(200);
    for (const bad of ['<html>oops</html>', 'inference_pool_ready_pods{name="p" 1\n', Buffer.from([0xff, 0x00, 0xfe, 0x0a])]) {
      srv.setPayload(bad);
      expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'malformed' });
    }
    srv.setPayload('a 1\n'.repeat(20_000));
    expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'too-large' });
    srv.setPayload(poolMetricsText('p', { readyPods: 1 }));
    expect((await s.scrapeOnce()).ok).toBe(true);
  });

  // Retried on a timing miss (a loaded CI machine); the quadratic parser took seconds, which no retry hides.
  it('a hostile endpoint (a 60 KB malformed value) fails the scrape naming the target and line, and never stalls the event loop', { retry: 2 }, async () => {
    const payload = poolMetricsText('p', { readyPods: 1 }) + `inference_pool_average_queue_size{name="p"} ${'1'.repeat(60_000)}x\n`;
    const srv = await server({ payload });
    const s = scraper(srv.origin);
    const pinger = await startPingServer();
    try {
      const { result, maxDelayMs, maxPingMs, pings } = await withLoopDelay(() => s.scrapeOnce(), pinger);
      expect(result).toMatchObject({ ok: false, reason: 'malformed' });
      const lines = payload.split('\n').length - 1;
      expect(!result.ok && result.message).toBe(`${srv.origin}/metrics line ${lines}: value longer than 64 characters`);
      expect(pings).toBeGreaterThan(0);
      expect(maxPingMs).toBeLessThan(100);
      expect(maxDelayMs).toBeLessThan(100);
    } finally {
      await pinger.stop();
    }
  });

  it('connection refused is a failed scrape', async () => {
    const srv = await server();
    const origin = srv.origin;
    await srv.stop();
    servers.length = 0;
    const s = scraper(origin);
    expect(await s.scrapeOnce()).toMatchObject({ ok: false, reason: 'connect' });
  });

  it('keeps the connection alive across scrapes and scrapes on its interval', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 1 }) });
    const results: boolean[] = [];
    const s = new MetricsScraper(
      { origin: srv.origin, path: '/metrics', tls: { insecureSkipVerify: false }, intervalMs: 50, timeoutMs: 500, maxBytes: 1024 * 1024, names: DEFAULT_POOL_METRIC_NAMES },
      { clock: systemClock, onResult: (r) => results.push(r.ok) },
    );
    scrapers.push(s);
    s.start();
    await new Promise((r) => setTimeout(r, 400));
    s.stop();
    expect(results.length).toBeGreaterThanOrEqual(4);
    expect(results.every(Boolean)).toBe(true);
    expect(srv.connections).toBe(1);
  });

  it('stop() while a scrape waits for its token file: no request goes out (and no connection is left open)', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 1 }) });
    // A FIFO: reading the token waits until something writes it, so stop() lands mid-read.
    const fifo = join(mkdtempSync(join(tmpdir(), 'mcip-token-')), 'token');
    execFileSync('mkfifo', [fifo]);
    const s = scraper(srv.origin, { bearerToken: { file: fifo }, allowTokenOverPlainHttp: true });
    const scrape = s.scrapeOnce();
    s.stop();
    await writeFile(fifo, 'token-one');
    expect(await scrape).toMatchObject({ ok: false, reason: 'stopped' });
    expect(srv.requests).toBe(0);
    expect(srv.connections).toBe(0);
  });

  it('https: verifies against caFile, or skips verification when asked', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 1 }), tls: { cert: TLS_FIXTURES.cert, key: TLS_FIXTURES.key } });
    expect(srv.origin.startsWith('https://')).toBe(true);
    expect(await scraper(srv.origin).scrapeOnce()).toMatchObject({ ok: false, reason: 'tls' });
    expect((await scraper(srv.origin, { tls: { insecureSkipVerify: true } }).scrapeOnce()).ok).toBe(true);
    expect((await scraper(srv.origin, { tls: { caFile: TLS_FIXTURES.certPath, insecureSkipVerify: false } }).scrapeOnce()).ok).toBe(true);
    expect(await scraper(srv.origin, { tls: { caFile: '/nonexistent/ca.pem', insecureSkipVerify: true } }).scrapeOnce()).toMatchObject({ ok: false, reason: 'tls-config' });
  });
});

describe('MetricsScraper of a host name from a member object', () => {
  const LOOPBACK_ALLOWED = { allow: ['127.0.0.0/8', '::1/128'], deny: [] };
  const DEFAULT_RULES = { allow: ['0.0.0.0/0', '::/0'], deny: ['127.0.0.0/8', '::1/128', '169.254.0.0/16'] };

  it("does not connect (nor send the member's token) when the name resolves to an address the member's rules deny", async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 1 }), token: 'member-token' });
    const dir = mkdtempSync(join(tmpdir(), 'scrape-dns-'));
    writeFileSync(join(dir, 'token'), 'member-token');
    const origin = `http://localhost:${srv.port}`;
    const over = { cluster: 'cluster-b', bearerToken: { file: join(dir, 'token') }, allowTokenOverPlainHttp: true };
    const r = await scraper(origin, { ...over, destinations: DEFAULT_RULES }).scrapeOnce();
    expect(r).toMatchObject({ ok: false, reason: 'connect' });
    expect(!r.ok && r.message).toBe(
      `localhost resolved to 127.0.0.1, which is refused: 127.0.0.1:${srv.port} is inside destinations.deny (clusters[cluster-b].eppAnswers.destinations)`,
    );
    expect(srv.connections).toBe(0);
    expect(srv.requests).toBe(0);

    const allowed = scraper(origin, { ...over, destinations: LOOPBACK_ALLOWED });
    expect((await allowed.scrapeOnce()).ok).toBe(true);
    expect(allowed.state().pools.get('p')).toEqual({ readyPods: 1 });
    expect(srv.lastAuthorization).toBe('Bearer member-token');
  });

  it('without member rules (an operator override) the name is dialled as it resolves', async () => {
    const srv = await server({ payload: poolMetricsText('p', { readyPods: 2 }) });
    expect((await scraper(`http://localhost:${srv.port}`).scrapeOnce()).ok).toBe(true);
  });
});
