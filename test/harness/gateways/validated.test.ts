// Validated gateways (agentgateway): a pick that is not an endpoint of the pool is refused with 503.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pickingScript, startScriptedEpp, type PickAnswer, type ScriptedEpp } from './scripted-epp.js';
import { createValidatedGateway } from './validated.js';

const MEMBERS = ['10.0.0.1:8000', '10.0.0.2:8000'];
let epp: ScriptedEpp;
let answer: PickAnswer = {};

beforeAll(async () => {
  epp = await startScriptedEpp(pickingScript(() => answer));
});
afterAll(() => epp.stop());

const calls: string[] = [];
const req = { authority: 'gw', path: '/v1/completions', body: '{"model":"m"}', upstream: (d: string) => (calls.push(d), { status: 200, body: 'ok' }) };

describe('agentgateway (validated destination mode)', () => {
  it('forwards to a picked pool endpoint', async () => {
    const gw = createValidatedGateway(epp.address, MEMBERS);
    answer = { header: MEMBERS[1], metadata: MEMBERS[1] };
    const r = await gw.run(req);
    gw.close();
    expect(r.destination).toBe(MEMBERS[1]);
  });

  it.each([
    ['an address outside the pool', '192.0.2.77:8000'],
    ['a member IP on another port', '10.0.0.1:9999'],
    ['a value that is no socket address', 'pod-a:8000'],
  ])('answers 503 and reaches no upstream for %s', async (_what, pick) => {
    const gw = createValidatedGateway(epp.address, MEMBERS);
    answer = { header: pick, metadata: pick };
    calls.length = 0;
    const r = await gw.run(req);
    gw.close();
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(503);
    expect(calls).toEqual([]);
  });

  it('reads the header only: a metadata-only pick is ignored and the pool is load-balanced', async () => {
    const gw = createValidatedGateway(epp.address, MEMBERS);
    answer = { metadata: '192.0.2.77:8000' };
    const r = await gw.run(req);
    gw.close();
    expect(gw.members.roundRobinPicks).toEqual([r.destination]);
  });
});
