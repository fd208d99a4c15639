/**
 * The router answers each gateway's ext_proc client correctly, through real sockets:
 * the gateway stand-ins of test/harness/gateways/ call the router's ext_proc port
 * (an HTTPRoute matched as today), the router relays to stock llm-d EPPs.
 * NGINX Gateway Fabric's one-shot client announces no processing mode, sends the whole
 * body in one message and half-closes; it reads answers until the stream ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNgfGateway, type NgfConfig } from '../harness/gateways/ngf-one-shot.js';
import { withinProcessMs } from '../helpers/work-time.js';
import { completionBody } from './clusterset.js';
import { metric, PICK, startGatewayClusters, type GatewayClusters } from './gateway-clusters.js';

let c: GatewayClusters;

beforeAll(async () => {
  c = await startGatewayClusters();
});
afterAll(async () => {
  await c?.stop();
});

/** NGINX Gateway Fabric calling the router (plaintext: the shim's --endpoint-picker-disable-tls). */
const ngf = (o: Partial<NgfConfig> = {}) =>
  createNgfGateway({ dial: c.router.extProcAddress, serviceName: 'mcip-router', namespace: 'default', members: ['10.1.0.200:8000'], tls: 'disabled', ...o });

describe('NGINX Gateway Fabric one-shot client (no protocol_config, whole body, half-close)', () => {
  it("gets the stock EPP's pick; the EPP's streamed echo of the body is no violation and the request counts as relayed", async () => {
    const violations = await metric(c.router, 'mcip_epp_answer_violations_total');
    const relayed = await metric(c.router, 'mcip_requests_total', { route: 'default/one', outcome: 'relayed' });
    const gw = ngf();
    const r = await gw.run({ headers: { 'content-type': 'application/json', 'x-route': 'one' }, body: completionBody() });
    expect(r.shimError).toBeUndefined();
    expect(r).toMatchObject({ status: 200, picked: PICK.a, destination: PICK.a });
    // The stock EPP answered the headers, then echoed the body as streamed_response: both relayed, in order.
    expect(r.received.map((m) => m.response)).toEqual(['request_headers', 'request_body']);
    expect(r.received[1]!.request_body?.response?.body_mutation?.streamed_response?.end_of_stream).toBe(true);
    expect(await metric(c.router, 'mcip_epp_answer_violations_total')).toBe(violations);
    expect(await metric(c.router, 'mcip_requests_total', { route: 'default/one', outcome: 'relayed' })).toBe(relayed + 1);
    expect(c.epps.a.streams.at(-1)!.end).toBe('ok');
  });

  it('a bodyless request (headers with end_of_stream) gets the pick too', async () => {
    const r = await ngf().run({ method: 'GET', headers: { 'x-route': 'one' } });
    expect(r).toMatchObject({ status: 200, destination: PICK.a });
    expect(r.sent).toHaveLength(1);
    expect(r.sent[0]!.request_headers!.end_of_stream).toBe(true);
  });

  it('an EPP that keeps its call open after the half-close does not hold the client: the router ends the stream once all is answered', async () => {
    c.epps.a.setIgnoreHalfClose(true);
    try {
      const gw = ngf({ fetchTimeoutMs: 8_000 });
      const r = await withinProcessMs(3_000, 'the one-shot exchange', () => gw.run({ headers: { 'x-route': 'one' }, body: completionBody() }));
      expect(r.shimError).toBeUndefined();
      expect(r).toMatchObject({ status: 200, destination: PICK.a });
    } finally {
      c.epps.a.setIgnoreHalfClose(false);
    }
  });
});
