// A rule's RequestHeaderModifier through real sockets: the Envoy stand-in (which reads answers
// with protobuf's merge semantics, as Envoy does) sees the route's mutation merged into the
// request headers answer, whether the EPP's answer is relayed or the router answers itself.
import { afterEach, describe, expect, it } from 'vitest';
import { getHeader, getHeaderAll } from '../harness/envoy-standin.js';
import { jsonBody, PARENT_B, POOL_A_ENDPOINTS, startScenario, type Scenario } from './scenario.js';

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

const request = (authority: string) => ({
  authority,
  path: '/v1/completions',
  headers: { 'x-keep': 'old', 'x-drop': '1', 'x-multi': 'a' },
  body: [jsonBody(512)],
});

function expectModified(headers: Parameters<typeof getHeader>[0]): void {
  expect(getHeader(headers, 'x-tier')).toBe('gold');
  expect(getHeaderAll(headers, 'x-keep')).toEqual(['new']);
  expect(getHeaderAll(headers, 'x-multi')).toEqual(['a', 'b']);
  expect(getHeader(headers, 'x-drop')).toBeUndefined();
}

describe('RequestHeaderModifier', () => {
  it('is merged into the EPP answer the router relays; the EPP destination and route cache clear stay', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run(request('headers.example'));
    expect(r.outcome).toBe('forwarded');
    expect(POOL_A_ENDPOINTS).toContain(r.destination);
    expect(r.routeCacheCleared).toBe(true);
    expectModified(r.upstreamHeaders);
    // The EPP saw the request as the client sent it.
    expect(sc.eppA.counters.streamsOpened).toBe(1);
  });

  it("is merged into the router's own answer (Parent mode, remote pool through its parent Gateway)", async () => {
    sc = await startScenario({ mode: 'Parent' });
    const r = await sc.envoy.run(request('headers-remote.example'));
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe(PARENT_B);
    expectModified(r.upstreamHeaders);
  });

  it('leaves routes without a modifier untouched', async () => {
    sc = await startScenario();
    const r = await sc.envoy.run(request('local.example'));
    expect(getHeader(r.upstreamHeaders, 'x-keep')).toBe('old');
    expect(getHeader(r.upstreamHeaders, 'x-drop')).toBe('1');
    expect(getHeader(r.upstreamHeaders, 'x-tier')).toBeUndefined();
  });
});
