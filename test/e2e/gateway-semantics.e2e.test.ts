/**
 * What each gateway does with the router's answers, through real sockets: the split
 * across two clusters' pools, failover with replay to the second cluster's EPP,
 * FailOpen and FailClose, per destination semantics:
 * - ORIGINAL_DST (Envoy AI Gateway): any picked address is followed;
 * - NGINX Gateway Fabric (one-shot): any picked address is followed; the router's
 *   immediate response never reaches the client, NGF's own failure mode answers;
 * - override_host (Istio): a pick that is not one of the gateway's pool members is
 *   silently round-robined onto a member (the misroute relay answers exist for);
 * - validated (agentgateway): such a pick is refused with 503.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNgfGateway } from '../harness/gateways/ngf-one-shot.js';
import { aiGatewayOptions, createOriginalDstGateway } from '../harness/gateways/original-dst.js';
import { createOverrideHostGateway } from '../harness/gateways/override-host.js';
import { createValidatedGateway } from '../harness/gateways/validated.js';
import { completionBody, inBatches, tolerance } from './clusterset.js';
import { FAIL_OPEN_ENDPOINT, metric, PICK, startGatewayClusters, type GatewayClusters } from './gateway-clusters.js';

let c: GatewayClusters;

beforeAll(async () => {
  c = await startGatewayClusters();
});
afterAll(async () => {
  await c?.stop();
});

/** The gateway's own InferencePool endpoints (what Istio's shadow Service and agentgateway's service hold): cluster-a's pods only. */
const MEMBERS = [PICK.a, '10.1.0.2:8000'];

interface Served {
  status: number;
  /** Where the gateway sent the request (undefined: nowhere). */
  destination: string | undefined;
}

type Gateway = { run(route: string): Promise<Served>; close(): void; roundRobin?: () => readonly string[] };

function envoyRun(g: { run: ReturnType<typeof createOriginalDstGateway>['run'] }, route: string): Promise<Served> {
  return g.run({ authority: 'llm.example', path: '/v1/completions', headers: { 'content-type': 'application/json', 'x-route': route }, body: completionBody() }).then((r) => ({
    status: r.status,
    destination: r.destination,
  }));
}

const GATEWAYS: Record<string, () => Gateway> = {
  'Envoy AI Gateway (ORIGINAL_DST)': () => {
    const g = createOriginalDstGateway(c.router.extProcAddress, aiGatewayOptions());
    return { run: (route) => envoyRun(g, route), close: () => g.close() };
  },
  'NGINX Gateway Fabric (one-shot)': () => {
    const g = createNgfGateway({ dial: c.router.extProcAddress, serviceName: 'mcip-router', namespace: 'default', members: MEMBERS, tls: 'disabled' });
    return {
      run: (route) => g.run({ headers: { 'content-type': 'application/json', 'x-route': route }, body: completionBody() }).then((r) => ({ status: r.status, destination: r.destination })),
      close: () => undefined,
      roundRobin: () => g.members.roundRobinPicks,
    };
  },
  'Istio (override_host)': () => {
    const g = createOverrideHostGateway(c.router.extProcAddress, MEMBERS);
    return { run: (route) => envoyRun(g, route), close: () => g.close(), roundRobin: () => g.members.roundRobinPicks };
  },
  'agentgateway (validated)': () => {
    const g = createValidatedGateway(c.router.extProcAddress, MEMBERS);
    return { run: (route) => envoyRun(g, route), close: () => g.close() };
  },
};

async function runMany(gw: Gateway, route: string, n: number): Promise<Served[]> {
  return inBatches(n, 8, () => gw.run(route));
}

function share(results: Served[], dest: string): number {
  return results.filter((r) => r.destination === dest).length / results.length;
}

describe.each(['Envoy AI Gateway (ORIGINAL_DST)', 'NGINX Gateway Fabric (one-shot)'])('%s follows any address the router answers', (name) => {
  it('70/30 between the local pool and the other cluster (200 requests)', async () => {
    const gw = GATEWAYS[name]!();
    const results = await runMany(gw, 'split', 200);
    gw.close();
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(Math.abs(share(results, PICK.a) - 0.7)).toBeLessThanOrEqual(tolerance(0.7, 200));
    expect(Math.abs(share(results, PICK.b) - 0.3)).toBeLessThanOrEqual(tolerance(0.3, 200));
  });

  it("failover: the first cluster's EPP fails, the other cluster's EPP gets the request replayed and its pick is followed", async () => {
    const gw = GATEWAYS[name]!();
    const failovers = await metric(c.router, 'mcip_failovers_total', { from_cluster: 'cluster-a', to_cluster: 'cluster-b' });
    const r = await gw.run('failover');
    gw.close();
    expect(r).toEqual({ status: 200, destination: PICK.b });
    expect(await metric(c.router, 'mcip_failovers_total', { from_cluster: 'cluster-a', to_cluster: 'cluster-b' })).toBe(failovers + 1);
    const replayed = c.epps.b.streams.at(-1)!.received.find((m) => m.request === 'request_body');
    expect(replayed?.request_body?.body?.toString()).toBe(completionBody().toString());
  });

  it("FailOpen: every EPP failed, the router's fail-open endpoint is followed", async () => {
    const gw = GATEWAYS[name]!();
    const r = await gw.run('open');
    gw.close();
    expect(r).toEqual({ status: 200, destination: FAIL_OPEN_ENDPOINT });
  });
});

describe('FailClose: the router answers 503 itself (an immediate response)', () => {
  it.each(['Envoy AI Gateway (ORIGINAL_DST)', 'Istio (override_host)', 'agentgateway (validated)'])('%s: the client gets the 503', async (name) => {
    const gw = GATEWAYS[name]!();
    const r = await gw.run('closed');
    gw.close();
    expect(r).toEqual({ status: 503, destination: undefined });
  });

  it("NGINX Gateway Fabric drops it: its own failure mode answers (FailClose 500; FailOpen its pool's upstream)", async () => {
    const closed = await createNgfGateway({ dial: c.router.extProcAddress, serviceName: 'mcip-router', namespace: 'default', members: MEMBERS, tls: 'disabled' }).run({
      headers: { 'x-route': 'closed' },
      body: completionBody(),
    });
    expect(closed).toMatchObject({ status: 500, picked: '', shimError: 'immediate response 503' });
    expect(closed.destination).toBeUndefined();
    const open = createNgfGateway({ dial: c.router.extProcAddress, serviceName: 'mcip-router', namespace: 'default', members: MEMBERS, tls: 'disabled', failureMode: 'FailOpen' });
    const r = await open.run({ headers: { 'x-route': 'closed' }, body: completionBody() });
    expect(r).toMatchObject({ status: 200, failedOpen: true });
    expect(MEMBERS).toContain(r.destination);
  });
});

describe('Istio (override_host): a pick outside its pool is silently misrouted', () => {
  it("the other cluster's picks (split, failover, fail-open) land round-robin on local pods, none where the router sent them", async () => {
    const gw = GATEWAYS['Istio (override_host)']!();
    const results = await runMany(gw, 'split', 100);
    const remote = c.epps.b.counters.picks[PICK.b] ?? 0;
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(share(results, PICK.b)).toBe(0);
    expect(results.every((r) => MEMBERS.includes(r.destination!))).toBe(true);
    const rr = gw.roundRobin!().length;
    expect(rr).toBeGreaterThan(0); // each remote pick became a round-robin pick
    const failedOver = await gw.run('failover');
    const openFallback = await gw.run('open');
    gw.close();
    expect(MEMBERS).toContain(failedOver.destination);
    expect(MEMBERS).toContain(openFallback.destination);
    expect(gw.roundRobin!().length).toBe(rr + 2);
    expect(remote).toBeGreaterThan(0);
  });
});

describe('agentgateway (validated): a pick outside its pool is refused', () => {
  it("the other cluster's picks (split, failover, fail-open) answer 503; local picks are served", async () => {
    const gw = GATEWAYS['agentgateway (validated)']!();
    const results = await runMany(gw, 'split', 100);
    const refused = results.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((r) => r.destination === undefined)).toBe(true);
    expect(results.filter((r) => r.status === 200).every((r) => r.destination === PICK.a)).toBe(true);
    expect(Math.abs(refused.length / 100 - 0.3)).toBeLessThanOrEqual(tolerance(0.3, 100));
    expect(await gw.run('failover')).toEqual({ status: 503, destination: undefined });
    expect(await gw.run('open')).toEqual({ status: 503, destination: undefined });
    gw.close();
  });
});
