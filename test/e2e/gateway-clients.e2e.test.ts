/**
 * The router answers each gateway's ext_proc client correctly, through real sockets:
 * the gateway stand-ins of test/harness/gateways/ call the router's ext_proc port
 * (an HTTPRoute matched as today), the router relays to stock llm-d EPPs.
 * NGINX Gateway Fabric's one-shot client announces no processing mode, sends the whole
 * body in one message and half-closes; it reads answers until the stream ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNgfGateway, type NgfConfig } from '../harness/gateways/ngf-one-shot.js';
import { aiGatewayOptions, createOriginalDstGateway } from '../harness/gateways/original-dst.js';
import { createOverrideHostGateway } from '../harness/gateways/override-host.js';
import type { PickAnswer } from '../harness/gateways/scripted-epp.js';
import { createValidatedGateway } from '../harness/gateways/validated.js';
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

describe('a gateway in BUFFERED mode against stock EPPs (Envoy AI Gateway with processing-body-mode: buffered)', () => {
  it("gets no pick: Envoy sends the body only after the headers answer, which a stock EPP gives only after the body; the router answers 503 after attemptTimeoutMs, not the gateway's 300 s message timeout", async () => {
    const gw = createOriginalDstGateway(c.router.extProcAddress, aiGatewayOptions('buffered'));
    const r = await withinProcessMs(5_000, 'the buffered request', () =>
      gw.run({ authority: 'llm.example', path: '/v1/completions', headers: { 'x-route': 'one' }, body: completionBody() }),
    );
    gw.close();
    expect(r.outcome).toBe('local-reply');
    expect(r.status).toBe(503);
    expect(r.response.body.toString()).toMatch(/attemptTimeoutMs/);
    // The stock EPP saw the request headers and nothing more: Envoy was holding the body.
    expect(c.epps.a.streams.at(-1)!.received.map((m) => m.request)).toEqual(['request_headers']);
  });
});

const X = '10.1.0.7:8000';
const Y = '10.1.0.8:8000';
/** The gateways' own pool endpoints include both, so override_host and validated would follow either. */
const POOL = [X, Y, '10.1.0.9:8000'];

/** Where each gateway sends a request of route `odd` (undefined: nowhere), and the status its client gets. */
async function everyGateway(): Promise<Record<string, { status: number; destination: string | undefined }>> {
  const envoyReq = { authority: 'llm.example', path: '/v1/completions', headers: { 'x-route': 'odd' }, body: completionBody() };
  const aigw = createOriginalDstGateway(c.router.extProcAddress, aiGatewayOptions());
  const istio = createOverrideHostGateway(c.router.extProcAddress, POOL);
  const agw = createValidatedGateway(c.router.extProcAddress, POOL);
  try {
    const out: Record<string, { status: number; destination: string | undefined }> = {};
    for (const [name, run] of [
      ['Envoy AI Gateway', () => aigw.run(envoyReq)],
      ['Istio', () => istio.run(envoyReq)],
      ['agentgateway', () => agw.run(envoyReq)],
      ['NGINX Gateway Fabric', () => ngf({ members: POOL }).run({ headers: { 'x-route': 'odd' }, body: completionBody() })],
    ] as const) {
      const r = await run();
      out[name] = { status: r.status, destination: r.destination };
    }
    expect(istio.members.roundRobinPicks).toEqual([]); // Istio followed the pick, never its fallback
    return out;
  } finally {
    aigw.close();
    istio.close();
    agw.close();
  }
}

describe('the destination reaches every gateway on both carriers, whatever the EPP sets', () => {
  it.each<[string, PickAnswer]>([
    ['the header and equal envoy.lb metadata (a stock EPP)', { header: X, metadata: X }],
    ['the header in `value` only (Envoy and NGF read raw_value only)', { header: X, headerAsValue: true, metadata: X }],
    ['envoy.lb metadata only (ORIGINAL_DST, NGF and agentgateway read the header only)', { metadata: X }],
    ['the header only (Istio reads envoy.lb only)', { header: X }],
  ])('%s: every gateway sends the request to it', async (_what, answer) => {
    c.setAnswer(answer);
    const served = await everyGateway();
    for (const [name, r] of Object.entries(served)) expect(r, name).toEqual({ status: 200, destination: X });
  });

  it('a header and envoy.lb naming different endpoints: the header wins on both carriers, and the answer is counted', async () => {
    const before = await metric(c.router, 'mcip_epp_answer_violations_total', { reason: 'destination_mismatch' });
    c.setAnswer({ header: X, metadata: Y });
    const served = await everyGateway();
    for (const [name, r] of Object.entries(served)) expect(r, name).toEqual({ status: 200, destination: X });
    expect(await metric(c.router, 'mcip_epp_answer_violations_total', { reason: 'destination_mismatch' })).toBe(before + 4);
  });
});
