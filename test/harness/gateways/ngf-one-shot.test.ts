// NGINX Gateway Fabric's one-shot exchange: headers, whole body, half-close; only the
// request_headers answer's raw_value header counts; any address is proxied to.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromStruct } from '../protos.js';
import { TLS_FIXTURES } from '../simulated-epp.js';
import { createNgfGateway, type NgfConfig } from './ngf-one-shot.js';
import { pickAnswer, pickingScript, startScriptedEpp, type PickAnswer, type ScriptedEpp } from './scripted-epp.js';

const MEMBERS = ['10.0.0.1:8000', '10.0.0.2:8000'];
const OUTSIDE = '192.0.2.77:8000';
let epp: ScriptedEpp;
let answer: PickAnswer = {};
const body = JSON.stringify({ model: 'm', prompt: 'hello' });

beforeAll(async () => {
  epp = await startScriptedEpp(pickingScript(() => answer), { cert: TLS_FIXTURES.cert, key: TLS_FIXTURES.key });
});
afterAll(() => epp.stop());

const gateway = (o: Partial<NgfConfig> = {}) =>
  createNgfGateway({ dial: epp.address, serviceName: 'mcip-router', namespace: 'llm', members: MEMBERS, ...o });

describe('NGINX Gateway Fabric (one-shot, TLS without verification)', () => {
  it('sends headers then the whole body, half-closes, and proxies to any picked address', async () => {
    const gw = gateway();
    answer = { header: OUTSIDE, metadata: OUTSIDE };
    const r = await gw.run({ headers: { 'Content-Type': 'application/json' }, body });
    expect(r.status).toBe(200);
    expect(r.destination).toBe(OUTSIDE);
    const s = epp.streams.at(-1)!;
    expect(s.authority).toBe(`mcip-router.llm:${epp.address.split(':')[1]}`);
    expect(s.received.map((m) => m.request)).toEqual(['request_headers', 'request_body']);
    expect(s.received[0]!.protocol_config).toBeUndefined();
    expect(s.received[0]!.request_headers!.end_of_stream).toBe(false);
    expect(s.received[1]!.request_body).toMatchObject({ end_of_stream: true });
    expect(s.received[1]!.request_body!.body!.toString()).toBe(body);
    const hs = s.received[0]!.request_headers!.headers!.headers!;
    expect(hs.map((h) => h.key)).toEqual(['content-type', 'x-epp-host', 'x-epp-port', 'content-length']);
    expect(hs.find((h) => h.key === 'x-epp-host')).toMatchObject({ value: 'mcip-router.llm' });
    expect(hs.every((h) => (h.raw_value ?? Buffer.alloc(0)).length === 0)).toBe(true);
  });

  it('opens a new connection for every request', async () => {
    const gw = gateway();
    answer = { header: MEMBERS[0] };
    await gw.run({ body });
    await gw.run({ body });
    expect(gw.connections).toBe(2);
  });

  it.each<[string, PickAnswer]>([
    ['only envoy.lb metadata', { metadata: MEMBERS[0] }],
    ['the header in value instead of raw_value', { header: MEMBERS[0], headerAsValue: true }],
  ])('finds no pick in %s: FailClose answers 500, FailOpen uses the pool upstream', async (_w, a) => {
    answer = a;
    const closed = await gateway().run({ body });
    expect(closed).toMatchObject({ status: 500, picked: '' });
    expect(closed.destination).toBeUndefined();
    const open = gateway({ failureMode: 'FailOpen' });
    const r = await open.run({ body });
    expect(r).toMatchObject({ status: 200, failedOpen: true });
    expect(open.members.roundRobinPicks).toEqual([r.destination]);
  });

  it("drops the picker's immediate response: the client gets the failure mode's answer, not 429", async () => {
    epp.setScript((m) => (m.request === 'request_headers' ? [{ immediate_response: { status: { code: 429 }, body: Buffer.from('busy') } }] : []));
    try {
      const r = await gateway().run({ body });
      expect(r.status).toBe(500);
      expect(r.shimError).toMatch(/immediate response 429/);
    } finally {
      epp.setScript(pickingScript(() => answer));
    }
  });

  it('sends a bodyless request as headers with end_of_stream only', async () => {
    answer = { header: MEMBERS[1] };
    const r = await gateway().run({ method: 'GET' });
    expect(r.destination).toBe(MEMBERS[1]);
    const s = epp.streams.at(-1)!;
    expect(s.received.map((m) => m.request)).toEqual(['request_headers']);
    expect(s.received[0]!.request_headers!.end_of_stream).toBe(true);
  });

  it('the last matching set_headers entry wins; a later answer without it changes nothing', async () => {
    epp.setScript((m) => {
      if (m.request !== 'request_headers') return [{ request_body: { response: {} } }];
      const first = pickAnswer({ header: MEMBERS[0] });
      first.request_headers!.response!.header_mutation!.set_headers!.push({ header: { key: 'x-gateway-destination-endpoint', raw_value: Buffer.from(MEMBERS[1]!) } });
      return [first];
    });
    try {
      const r = await gateway().run({ body });
      expect(r.destination).toBe(MEMBERS[1]);
      expect(fromStruct(r.received[0]!.dynamic_metadata)).toEqual({});
    } finally {
      epp.setScript(pickingScript(() => answer));
    }
  });
});

describe('NGINX Gateway Fabric with a verified or plaintext picker connection', () => {
  it('with verification on, refuses a certificate that does not name <service>.<namespace>', async () => {
    answer = { header: MEMBERS[0] };
    // The fixture certificate is trusted but names localhost and 127.0.0.1 only.
    const r = await gateway({ tls: { ca: TLS_FIXTURES.cert } }).run({ body });
    expect(r).toMatchObject({ status: 500, picked: '' });
    expect(r.shimError).toMatch(/ext_proc stream/);
  });

  it('cannot talk plaintext to a TLS picker', async () => {
    const r = await gateway({ tls: 'disabled' }).run({ body });
    expect(r).toMatchObject({ status: 500, picked: '' });
    expect(r.shimError).toMatch(/ext_proc stream/);
  });
});
