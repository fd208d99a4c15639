// An EPP killed mid-traffic, through real sockets: 64 concurrent ext_proc streams from the
// Envoy stand-in over ONE connection (Envoy applies max_requests_per_connection only
// approximately on HTTP/2, and a config may not set it at all), 3,000 requests on the split
// route (pool-a on eppA, pool-b on eppB). eppA dies halfway the way a crashed pod does: its
// connections are reset (TCP RST, no GOAWAY). Every request must be forwarded with a 200: a
// stream cut before its answer reached Envoy fails over to pool-b, one cut after is finished
// by the router. None may reach Envoy as a gRPC error.
//
// Envoy resets every stream when done, so 3,000 streams are also 3,000 RST_STREAMs on the
// router's connection: past Node's default rapid-reset budget (1,000, then 33/s) unless the
// router raised it, in which case the GOAWAY would fail every stream in flight (64 here).
import { afterEach, describe, expect, it } from 'vitest';
import type { StandinResult } from '../harness/envoy-standin.js';
import { startTcpRelay, type TcpRelay } from '../harness/tcp-relay.js';
import { buildScenarioSnapshot, frames, jsonBody, startScenario, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
let relay: TcpRelay | undefined;
afterEach(async () => {
  relay?.close();
  await sc?.stop();
  sc = relay = undefined;
});

const TOTAL = 3000;
const CONCURRENCY = 64;
const KILL_AT = 1500;

describe('an EPP killed under 64 concurrent streams', () => {
  it('loses no request: each is forwarded (failed over or finished by the router), none reaches Envoy as a gRPC error', async () => {
    sc = await startScenario({ eppA: { delayMs: 2 }, eppB: { delayMs: 2 } });
    // eppA is reached through a relay that can reset its connections.
    relay = await startTcpRelay(sc.eppA.address);
    sc.setSnapshot(buildScenarioSnapshot({ eppA: relay.address, eppB: sc.eppB.address }));
    const body = jsonBody(1024);
    const response = { status: 200, body: frames(body, 512) };
    const results: StandinResult[] = [];
    let next = 0;
    let killedAfter = -1;
    const worker = async (): Promise<void> => {
      while (next < TOTAL) {
        if (next++ === KILL_AT) {
          relay!.kill();
          killedAfter = results.length;
        }
        results.push(await sc!.envoy.run({ authority: 'split.example', path: '/v1/completions', body: frames(body, 512), response }));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    const lost = results.filter((r) => r.outcome !== 'forwarded' || r.status !== 200);
    const summary = lost.slice(0, 5).map((r) => `${r.outcome} ${r.status} ${r.reason ?? ''}`);
    expect(lost.length, `${lost.length} of ${TOTAL} lost:\n${summary.join('\n')}`).toBe(0);
    expect(results).toHaveLength(TOTAL);
    // The kill hit streams in flight on eppA: they failed over, or the router finished them.
    expect(killedAfter).toBeGreaterThan(0);
    expect(sc.observer.failovers.filter((f) => f.from === 'cluster-a').length).toBeGreaterThan(0);
    await sc.settled(10_000);
    expect(sc.observer.outcomes().filter((o) => o !== 'relayed' && o !== 'finished_by_router')).toEqual([]);
  }, 180_000);
});
