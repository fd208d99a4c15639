// override_host gateways (Istio; kgateway's subset cluster): only pool members are honoured,
// anything else silently lands on a member by round robin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOverrideHostGateway, overrideHostSelector } from './override-host.js';
import { poolMembers } from './pool-members.js';
import { pickingScript, startScriptedEpp, type PickAnswer, type ScriptedEpp } from './scripted-epp.js';

const MEMBERS = ['10.0.0.1:8000', '10.0.0.2:8000', '10.0.0.3:8000'];
const OUTSIDE = '192.0.2.77:8000';
let epp: ScriptedEpp;
let answer: PickAnswer = {};

beforeAll(async () => {
  epp = await startScriptedEpp(pickingScript(() => answer));
});
afterAll(() => epp.stop());

const req = { authority: 'gw', path: '/v1/completions', body: '{"model":"m"}' };

describe('Istio (override_host on the shadow Service, envoy.lb metadata only)', () => {
  it('sends the request to the picked pod when it is a member', async () => {
    const gw = createOverrideHostGateway(epp.address, MEMBERS);
    answer = { header: MEMBERS[1], metadata: MEMBERS[1] };
    const r = await gw.run(req);
    gw.close();
    expect(r.destination).toBe(MEMBERS[1]);
    expect(gw.members.roundRobinPicks).toEqual([]);
  });

  it('misroutes a pick outside the pool: each request lands on the next pod, none on the pick', async () => {
    const gw = createOverrideHostGateway(epp.address, MEMBERS);
    answer = { header: OUTSIDE, metadata: OUTSIDE };
    const dests: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await gw.run(req);
      expect(r.outcome).toBe('forwarded');
      expect(r.status).toBe(200);
      dests.push(r.destination!);
    }
    gw.close();
    expect(dests).not.toContain(OUTSIDE);
    expect(new Set(dests)).toEqual(new Set(MEMBERS));
  });

  it('ignores the header: a metadata-less answer is load-balanced', async () => {
    const gw = createOverrideHostGateway(epp.address, MEMBERS);
    answer = { header: MEMBERS[2] };
    const r = await gw.run(req);
    gw.close();
    expect(gw.members.roundRobinPicks).toEqual([r.destination]);
  });

  it('takes the first member of a primary,failover list', async () => {
    const gw = createOverrideHostGateway(epp.address, MEMBERS);
    answer = { header: `${OUTSIDE},${MEMBERS[2]}`, metadata: `${OUTSIDE},${MEMBERS[2]}` };
    const r = await gw.run(req);
    gw.close();
    expect(r.destination).toBe(MEMBERS[2]);
  });
});

describe("kgateway's subset cluster (header copied to envoy.lb)", () => {
  it('honours a header-only pick of a member, misroutes one outside', async () => {
    const gw = createOverrideHostGateway(epp.address, MEMBERS, { flavour: 'kgateway' });
    answer = { header: MEMBERS[2] };
    expect((await gw.run(req)).destination).toBe(MEMBERS[2]);
    answer = { header: OUTSIDE };
    const r = await gw.run(req);
    gw.close();
    expect(MEMBERS).toContain(r.destination);
  });

  it('the header overwrites the picker metadata when both are present (header_to_metadata runs after ext_proc)', () => {
    const pick = overrideHostSelector(poolMembers(MEMBERS), { readHeader: true });
    const c = pick({ headers: [['x-gateway-destination-endpoint', MEMBERS[0]!]], dynamicMetadata: { 'envoy.lb': { 'x-gateway-destination-endpoint': MEMBERS[1]! } } });
    expect(c).toEqual({ address: MEMBERS[0] });
  });
});
