// ORIGINAL_DST gateways (Envoy AI Gateway, kgateway's first plugin): any picked ip:port is dialled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StandinResult } from '../standin-types.js';
import { aiGatewayOptions, createOriginalDstGateway, kgatewayOriginalDstOptions } from './original-dst.js';
import { pickingScript, startScriptedEpp, type PickAnswer, type ScriptedEpp } from './scripted-epp.js';

const OUTSIDE = '192.0.2.77:8000'; // no pod of the pool
let epp: ScriptedEpp;
let answer: PickAnswer = {};

beforeAll(async () => {
  epp = await startScriptedEpp(pickingScript(() => answer));
});
afterAll(() => epp.stop());

const body = JSON.stringify({ model: 'm', prompt: 'hello' });
const out = (r: StandinResult): string[] => r.messages.filter((w) => w.dir === 'out').map((w) => w.type);

describe('Envoy AI Gateway (ORIGINAL_DST, full duplex)', () => {
  it('dials an address outside the pool exactly as picked', async () => {
    const gw = createOriginalDstGateway(epp.address, aiGatewayOptions());
    answer = { header: OUTSIDE, metadata: OUTSIDE };
    const seen: string[] = [];
    const r = await gw.run({ authority: 'gw', path: '/v1/completions', body, upstream: (d) => (seen.push(d), { status: 200, body: 'ok' }) });
    gw.close();
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe(OUTSIDE);
    expect(seen).toEqual([OUTSIDE]);
    expect(out(r)).toContain('response_headers');
    expect(r.messages.find((w) => w.dir === 'out')?.message).toMatchObject({ protocol_config: { request_body_mode: 4, response_body_mode: 4 } });
  });

  it('reads the header, not the metadata: a header-less answer finds no host (503)', async () => {
    const gw = createOriginalDstGateway(epp.address, aiGatewayOptions());
    answer = { metadata: OUTSIDE };
    const r = await gw.run({ authority: 'gw', path: '/v1/completions', body });
    gw.close();
    expect(r.status).toBe(503);
    expect(r.reason).toMatch(/no x-gateway-destination-endpoint header/);
  });
});

describe("kgateway's ORIGINAL_DST plugin (buffered request, no response phase)", () => {
  it('dials the picked address and never shows the response to the picker', async () => {
    const gw = createOriginalDstGateway(epp.address, kgatewayOriginalDstOptions());
    answer = { header: OUTSIDE };
    const r = await gw.run({ authority: 'gw', path: '/v1/completions', body });
    gw.close();
    expect(r.destination).toBe(OUTSIDE);
    expect(out(r)).toEqual(['request_headers', 'request_body']);
  });
});
