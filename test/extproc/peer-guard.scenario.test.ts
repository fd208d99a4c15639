// The ext_proc server against one hostile peer (extProc.peerLimits), on both transports, over
// real sockets through the real router: a client opening streams and resetting them at once
// (HTTP/2 rapid reset) or holding streams it never sends on is cut with GOAWAY
// ENHANCE_YOUR_CALM and counted, while another client's exchanges keep completing at the
// latency they had before; Envoy (a reset after every answered stream) and NGINX Gateway
// Fabric (a new TLS connection per request) at a high rate under tight limits are never cut.
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { createNgfGateway } from '../harness/gateways/ngf-one-shot.js';
import { ENHANCE_YOUR_CALM, NO_ERROR, rawH2Connect, type RawH2Client } from '../helpers/raw-h2.js';
import { eventually } from '../helpers/eventually.js';
import { processClock } from '../helpers/work-time.js';
import { frames, jsonBody, startScenario, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
const raws: RawH2Client[] = [];
afterEach(async () => {
  for (const r of raws.splice(0)) r.destroy();
  await sc?.stop();
  sc = undefined;
});

const ATTACKER = '127.0.0.2';
const hostPort = (address: string): [string, number] => [address.replace(/:\d+$/, ''), Number(address.split(':').pop())];
const request = { authority: 'local.example', path: '/v1/completions', body: frames(jsonBody(512), 256) };

/** Runs `count` Envoy-like exchanges one after another; returns each one's latency (ms of this process's time). */
async function exchanges(s: Scenario, count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const clock = processClock();
    const r = await s.envoy.run(request);
    clock.stop();
    expect(r.outcome, r.reason).toBe('forwarded');
    ms.push(clock.ms());
  }
  return ms;
}

const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe.each(['http2', 'grpc-js'] as const)('hostile peer on the ext_proc server (%s)', (transport) => {
  it('a rapid-reset client is cut with GOAWAY ENHANCE_YOUR_CALM on each connection; the other client\'s exchanges keep their latency', async () => {
    sc = await startScenario({ transport });
    await exchanges(sc, 20); // warm up
    const before = await exchanges(sc, 40);

    const [host, port] = hostPort(sc.address);
    // The attacker is another peer (another address) than the victim's Envoy.
    const attackers = [await rawH2Connect(host, port, false, ATTACKER), await rawH2Connect(host, port, false, ATTACKER)];
    raws.push(...attackers);
    const perConnection = 50_000;
    const attack = Promise.all(attackers.map((a) => a.open(perConnection, { reset: true })));
    const during = await exchanges(sc, 40);
    const written = await attack;
    await Promise.all(attackers.map((a) => a.closed));

    for (const a of attackers) expect(a.goaway?.errorCode).toBe(ENHANCE_YOUR_CALM);
    // Cut after the burst (200 by default): the last stream the router took is one of the first few hundred of the 50,000 each sent.
    for (const a of attackers) expect(a.goaway!.lastStreamId).toBeLessThan(2 * 2 * DEFAULT_EXT_PROC.peerLimits.earlyResetBurst);
    expect(written).toHaveLength(2);
    expect(sc.observer.peerCuts).toEqual(['early_resets', 'early_resets']);
    const [b, d] = [p50(before), p50(during)];
    expect(d, `p50 before ${b.toFixed(1)} ms, during the attack ${d.toFixed(1)} ms`).toBeLessThan(Math.max(4 * b, b + 25));
    await sc.settled();
  }, 60_000);

  it('a trusted proxy in the pod (peerLimits.trustedPeers: the router\'s own Envoy, a mesh sidecar) passes its clients\' cancellations: never cut, never cooled down', async () => {
    // The attacker's address is trusted here: its early resets are what a sidecar sends when its clients cancel.
    sc = await startScenario({ transport, peerLimits: { earlyResetBurst: 5, earlyResetsPerSecond: 1, trustedPeers: [`${ATTACKER}/32`] } });
    const [host, port] = hostPort(sc.address);
    const proxy = await rawH2Connect(host, port, false, ATTACKER);
    raws.push(proxy);
    await proxy.open(200, { reset: true });
    await eventually(() => expect(proxy.framesReceived).toBeGreaterThan(0));
    await proxy.ping();
    expect(proxy.goaway).toBeUndefined();
    expect(sc.observer.peerCuts).toEqual([]);
    // The same resets from an address that is not trusted are cut.
    const other = await rawH2Connect(host, port, false, '127.0.0.3');
    raws.push(other);
    await other.open(200, { reset: true });
    await eventually(() => expect(other.goaway?.errorCode).toBe(ENHANCE_YOUR_CALM), 5_000);
    expect(sc.observer.peerCuts).toEqual(['early_resets']);
  });

  it('a rapid-reset client is cut whatever error code its resets carry (RST_STREAM NO_ERROR is a reset too)', async () => {
    sc = await startScenario({ transport, peerLimits: { earlyResetBurst: 10, earlyResetsPerSecond: 1 } });
    const [host, port] = hostPort(sc.address);
    const attacker = await rawH2Connect(host, port, false, ATTACKER);
    raws.push(attacker);
    await attacker.open(2_000, { reset: true, resetCode: NO_ERROR });
    await eventually(() => expect(attacker.goaway?.errorCode).toBe(ENHANCE_YOUR_CALM), 5_000);
    expect(attacker.goaway!.lastStreamId).toBeLessThan(2 * 4 * 10);
    expect(sc.observer.peerCuts).toEqual(['early_resets']);
    expect((await sc.envoy.run(request)).outcome).toBe('forwarded');
  });

  it('a rapid-reset client that opens a new connection before each one\'s burst is spent is cut all the same (the account is per address)', async () => {
    sc = await startScenario({ transport, peerLimits: { earlyResetBurst: 20, earlyResetsPerSecond: 1 } });
    const [host, port] = hostPort(sc.address);
    let cutAfter: number | undefined;
    for (let i = 0; i < 30 && cutAfter === undefined; i++) {
      const c = await rawH2Connect(host, port, false, ATTACKER);
      raws.push(c);
      // Fewer resets than the burst on each connection; the connection is left once they are all read.
      await c.open(15, { reset: true });
      await eventually(() => expect(c.framesReceived).toBeGreaterThan(0));
      await c.ping();
      if (c.goaway?.errorCode === ENHANCE_YOUR_CALM) cutAfter = i;
      c.destroy();
    }
    expect(cutAfter, 'never cut').toBeDefined();
    expect(cutAfter!).toBeLessThanOrEqual(2);
    expect(sc.observer.peerCuts).toEqual(['early_resets']);
    // Another address is not charged for it.
    const other = await rawH2Connect(host, port, false, '127.0.0.3');
    raws.push(other);
    await other.open(15, { reset: true });
    await other.ping();
    expect(other.goaway).toBeUndefined();
  });

  it('a peer that was cut and reconnects is closed unserved for cutCooldownMs; other peers connect meanwhile', async () => {
    sc = await startScenario({ transport, peerLimits: { earlyResetBurst: 10, cutCooldownMs: 1_000 } });
    const [host, port] = hostPort(sc.address);
    const first = await rawH2Connect(host, port, false, ATTACKER);
    raws.push(first);
    await first.open(100, { reset: true });
    await first.closed;
    expect(first.goaway?.errorCode).toBe(ENHANCE_YOUR_CALM);
    const again = await rawH2Connect(host, port, false, ATTACKER);
    raws.push(again);
    await again.closed;
    expect(again.framesReceived).toBe(0); // not even the server's SETTINGS
    const other = await rawH2Connect(host, port, false, '127.0.0.3');
    raws.push(other);
    await eventually(() => expect(other.framesReceived).toBeGreaterThan(0));
    expect(other.isClosed()).toBe(false);
    // After the cooldown the address is served again.
    await eventually(async () => {
      const later = await rawH2Connect(host, port, false, ATTACKER);
      raws.push(later);
      await eventually(() => expect(later.framesReceived).toBeGreaterThan(0), 200);
    }, 5_000, 100);
    expect(sc.observer.peerCuts).toEqual(['early_resets']);
  });

  it('a client holding streams it never sends on is cut past maxUnusedStreams; the streams it held are released', async () => {
    // The router exits on an uncaught exception (main.ts): a stream of the cut connection erroring with nobody listening would end it.
    const uncaught: Error[] = [];
    const record = (err: Error): void => void uncaught.push(err);
    process.on('uncaughtException', record);
    try {
      sc = await startScenario({ transport, peerLimits: { maxUnusedStreams: 50 } });
      const [host, port] = hostPort(sc.address);
      const idle = await rawH2Connect(host, port, false, ATTACKER);
      raws.push(idle);
      await idle.open(500, { reset: false });
      await idle.closed;
      expect(idle.goaway?.errorCode).toBe(ENHANCE_YOUR_CALM);
      expect(sc.observer.peerCuts).toEqual(['unused_streams']);
      await eventually(() => expect(sc!.server.activeStreams()).toBe(0));
      expect((await sc.envoy.run(request)).outcome).toBe('forwarded');
      expect(uncaught.map((e) => e.message)).toEqual([]);
    } finally {
      process.off('uncaughtException', record);
    }
  });

  it('Envoy at a high rate, a reset after every answered stream, is never cut, even with a tight early-reset bound', async () => {
    // maxUnusedStreams stays at its default: 32 streams opened in one write are all unused until their first message is read.
    sc = await startScenario({ transport, peerLimits: { earlyResetBurst: 5, earlyResetsPerSecond: 1 } });
    let failures = 0;
    let next = 0;
    const total = 1_000;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next++ < total) if ((await sc!.envoy.run(request)).outcome !== 'forwarded') failures++;
      }),
    );
    expect(failures).toBe(0);
    await sc.settled();
    expect(sc.observer.peerCuts).toEqual([]);
    expect(sc.observer.finished).toHaveLength(total);
  }, 120_000);

  it('NGINX Gateway Fabric, a new TLS connection per request, is never cut, even with a tight bound', async () => {
    sc = await startScenario({
      transport,
      serverOptions: { tls: { kind: 'self-signed', dnsNames: ['mcip-router.llm'] } },
      peerLimits: { earlyResetBurst: 1, earlyResetsPerSecond: 1, maxUnusedStreams: 2 },
    });
    const ngf = createNgfGateway({ dial: sc.address, serviceName: 'mcip-router', namespace: 'llm', members: ['10.9.0.1:8000'] });
    const total = 150;
    let next = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next++ < total) {
          const r = await ngf.run({ headers: { host: 'local.example' }, body: JSON.stringify({ model: 'm', prompt: 'p' }) });
          // The router answers every stream (no NGF :authority matches a route here): answered, not reset.
          expect(r.shimError ?? 'answered').not.toMatch(/UNAVAILABLE|GOAWAY|14/);
        }
      }),
    );
    expect(ngf.connections).toBe(total);
    expect(sc.observer.peerCuts).toEqual([]);
    expect(sc.observer.finished).toHaveLength(total);
  }, 120_000);
});
