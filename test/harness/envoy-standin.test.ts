// The Envoy stand-in against the simulated EPP directly, in every processing mode.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvoyStandin, getHeader, type BodyMode, type EnvoyStandin, type StandinOptions } from './envoy-standin.js';
import { startSimulatedEpp, type SimulatedEpp } from './simulated-epp.js';

const ENDPOINTS = ['10.0.0.1:8000', '10.0.0.2:8000', '10.0.0.3:8000'];
const KiB = 1024;
const MiB = 1024 * KiB;

let epp: SimulatedEpp;
let envoy: EnvoyStandin;

beforeAll(async () => {
  epp = await startSimulatedEpp({ endpoints: ENDPOINTS });
});
afterAll(async () => {
  envoy?.close();
  await epp.stop();
});

function jsonBody(size: number): Buffer {
  const head = '{"model":"m","prompt":"';
  const tail = '"}';
  return Buffer.from(head + 'p'.repeat(Math.max(0, size - head.length - tail.length)) + tail);
}

function chunk(b: Buffer, n: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; i += n) out.push(b.subarray(i, i + n));
  return out;
}

/** Buffer comparison without vitest's element-wise deep equality (slow on MiB buffers). */
function expectBytes(actual: Buffer | undefined, expected: Buffer): void {
  expect(actual, 'missing body').toBeDefined();
  expect(actual!.length).toBe(expected.length);
  expect(actual!.equals(expected), 'bodies differ').toBe(true);
}

function types(r: { messages: Array<{ dir: string; type: string }> }): string[] {
  return r.messages.map((m) => `${m.dir}:${m.type}`);
}

async function settled(): Promise<void> {
  for (let i = 0; i < 50 && epp.counters.openStreams !== 0; i++) await new Promise((r) => setTimeout(r, 10));
}

describe('envoy stand-in against the simulated EPP', () => {
  beforeAll(() => {
    envoy = createEnvoyStandin(epp.address);
  });

  it('headers only (GET, full duplex): destination from the EPP, no body', async () => {
    const r = await envoy.run({ authority: 'llm.example', path: '/v1/models', method: 'GET' });
    expect(r.outcome).toBe('forwarded');
    expect(ENDPOINTS).toContain(r.destination);
    expect(r.forwardedBody!.length).toBe(0);
    expect(r.routeCacheCleared).toBe(true);
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': r.destination });
    expect(types(r).slice(0, 2)).toEqual(['out:request_headers', 'in:request_headers']);
    const first = r.messages[0]!.message as { request_headers?: { end_of_stream?: boolean }; protocol_config?: unknown };
    expect(first.request_headers?.end_of_stream).toBe(true);
    expect(first.protocol_config).toEqual({ request_body_mode: 4, response_body_mode: 4, send_body_without_waiting_for_header_response: false });
    expect(r.messages.slice(1).every((m) => !(m.message as { protocol_config?: unknown })?.protocol_config)).toBe(true);
  });

  it('full duplex: the EPP holds headers until the body, then echoes it; exact message order', async () => {
    const body = jsonBody(3 * KiB);
    const r = await envoy.run({ authority: 'a', path: '/v1/completions', body: chunk(body, KiB), response: { status: 200, body: ['he', 'llo'] } });
    expect(r.outcome).toBe('forwarded');
    expectBytes(r.forwardedBody, body);
    expect(r.response.status).toBe(200);
    expect(r.response.body.toString()).toBe('hello');
    expect(types(r)).toEqual([
      'out:request_headers', 'out:request_body', 'out:request_body', 'out:request_body',
      'in:request_headers', 'in:request_body',
      'out:response_headers', 'out:response_body', 'out:response_body',
      'in:response_headers', 'in:response_body', 'in:response_body',
    ]);
    expect(getHeader(r.upstreamHeaders, 'x-gateway-destination-endpoint')).toBe(r.destination);
  });

  it('full duplex with trailers on both paths', async () => {
    const body = jsonBody(2 * KiB);
    const r = await envoy.run({
      authority: 'a', path: '/', body: chunk(body, 700), trailers: { 'x-req-trailer': 't1' },
      response: { status: 201, headers: { 'content-type': 'text/plain' }, body: 'resp', trailers: { 'x-resp-trailer': 't2' } },
    });
    expect(r.outcome).toBe('forwarded');
    expectBytes(r.forwardedBody, body);
    expect(getHeader(r.upstreamTrailers, 'x-req-trailer')).toBe('t1');
    expect(r.response.status).toBe(201);
    expect(r.response.body.toString()).toBe('resp');
    expect(getHeader(r.response.trailers, 'x-resp-trailer')).toBe('t2');
    const sentBodies = r.messages.filter((m) => m.dir === 'out' && m.type === 'request_body');
    expect(sentBodies.every((m) => (m.message as { request_body: { end_of_stream?: boolean } }).request_body.end_of_stream !== true)).toBe(true);
    expect(types(r)).toContain('in:request_trailers');
    expect(types(r)).toContain('in:response_trailers');
  });

  const modes: BodyMode[] = ['FULL_DUPLEX_STREAMED', 'BUFFERED', 'STREAMED', 'BUFFERED_PARTIAL', 'NONE'];
  const sizes: Array<[string, Buffer[] | undefined]> = [
    ['no body', undefined],
    ['0 B data frame', [Buffer.alloc(0)]],
    ['1 KiB', [jsonBody(KiB)]],
    ['4 MiB', chunk(jsonBody(4 * MiB), 256 * KiB)],
  ];
  for (const mode of modes) {
    for (const [label, body] of sizes) {
      it(`request body mode ${mode}, ${label}: destination, forwarded body, client response`, async () => {
        const opts: StandinOptions = { requestBodyMode: mode, responseBodyMode: mode, messageTimeoutMs: 5000 };
        const respBody = Buffer.concat(body ?? []).subarray(0, 2 * KiB);
        const r = await envoy.run({ authority: 'a', path: '/v1/completions', body, response: { status: 200, body: [respBody] } }, opts);
        expect(r.outcome, r.reason).toBe('forwarded');
        expect(ENDPOINTS).toContain(r.destination);
        expectBytes(r.forwardedBody, Buffer.concat(body ?? []));
        expect(r.response.status).toBe(200);
        expectBytes(r.response.body, respBody);
        const sentBodies = r.messages.filter((m) => m.dir === 'out' && m.type === 'request_body').length;
        const expected = !body || mode === 'NONE' ? 0 : mode === 'STREAMED' || mode === 'FULL_DUPLEX_STREAMED' ? body.length : 1;
        expect(sentBodies).toBe(expected);
      });
    }
  }

  it('BUFFERED: one body message after the headers response; STREAMED: one per chunk, answered in order', async () => {
    const body = chunk(jsonBody(3000), 1000);
    const b = await envoy.run({ authority: 'a', path: '/', body }, { requestBodyMode: 'BUFFERED', responseBodyMode: 'NONE' });
    expect(types(b).slice(0, 4)).toEqual(['out:request_headers', 'in:request_headers', 'out:request_body', 'in:request_body']);
    const s = await envoy.run({ authority: 'a', path: '/', body }, { requestBodyMode: 'STREAMED', responseBodyMode: 'NONE' });
    expect(types(s).slice(0, 8)).toEqual([
      'out:request_headers', 'in:request_headers',
      'out:request_body', 'out:request_body', 'out:request_body',
      'in:request_body', 'in:request_body', 'in:request_body',
    ]);
    expectBytes(s.forwardedBody, Buffer.concat(body));
  });

  it('STREAMED with send_body_without_waiting_for_header_response pipelines the body after the headers', async () => {
    const body = chunk(jsonBody(2000), 1000);
    const r = await envoy.run(
      { authority: 'a', path: '/', body, headers: { 'content-length': '2000' } },
      { requestBodyMode: 'STREAMED', responseBodyMode: 'NONE', sendBodyWithoutWaitingForHeaderResponse: true },
    );
    expect(types(r).slice(0, 6)).toEqual([
      'out:request_headers', 'out:request_body', 'out:request_body',
      'in:request_headers', 'in:request_body', 'in:request_body',
    ]);
    const pc = (r.messages[0]!.message as { protocol_config?: object }).protocol_config;
    expect(pc).toMatchObject({ request_body_mode: 1, send_body_without_waiting_for_header_response: true });
    expectBytes(r.forwardedBody, Buffer.concat(body));
    expect(getHeader(r.upstreamHeaders, 'content-length')).toBeUndefined();
  });

  it('SKIP modes send nothing for that phase; all SKIP/NONE never opens the stream', async () => {
    const r = await envoy.run(
      { authority: 'a', path: '/', headers: { 'x-gateway-destination-endpoint': '10.9.9.9:80' }, body: 'x' },
      { requestHeaderMode: 'SKIP', responseHeaderMode: 'SKIP', requestBodyMode: 'NONE', responseBodyMode: 'NONE', requestTrailerMode: 'SKIP', responseTrailerMode: 'SKIP' },
    );
    expect(r.outcome).toBe('forwarded');
    expect(r.destination).toBe('10.9.9.9:80');
    expect(r.messages).toEqual([]);
  });

  it('hundreds of requests over one channel: round-robin picks, no open streams left', async () => {
    const before = { ...epp.counters.picks };
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => envoy.run({ authority: 'a', path: '/', body: jsonBody(200 + i) })),
    );
    expect(results.every((r) => r.outcome === 'forwarded')).toBe(true);
    for (const e of ENDPOINTS) expect((epp.counters.picks[e] ?? 0) - (before[e] ?? 0)).toBe(100);
    await settled();
    expect(epp.counters.openStreams).toBe(0);
  });

  it("maxRequestsPerConnection (Envoy's max_requests_per_connection): a new connection every N streams", async () => {
    const rotating = createEnvoyStandin(epp.address, { maxRequestsPerConnection: 4 });
    try {
      for (let i = 0; i < 6; i++) expect((await rotating.run({ authority: 'a', path: '/', body: '{}' })).outcome).toBe('forwarded');
      const rs = await Promise.all(Array.from({ length: 6 }, () => rotating.run({ authority: 'a', path: '/', body: '{}' })));
      expect(rs.every((r) => r.outcome === 'forwarded')).toBe(true);
      expect(rotating.connectionsOpened).toBe(3);
      const peers = epp.streams.slice(-12).map((r) => r.peer);
      const perConnection = [...new Set(peers)].map((p) => peers.filter((q) => q === p).length);
      expect(perConnection).toEqual([4, 4, 4]);
      await settled();
    } finally {
      rotating.close();
    }
  });

  it('forwards metadata_context, attributes and gRPC metadata as Envoy does', async () => {
    const r = await envoy.run(
      { authority: 'a', path: '/', body: '{}' },
      {
        metadataContext: { 'envoy.lb.subset_hint': { 'x-gateway-destination-endpoint-subset': ['10.0.0.2:8000'] } },
        attributes: { 'envoy.filters.http.ext_proc': { 'request.path': '/' } },
        grpcMetadata: { 'x-route': 'r1' },
        servedEndpointMetadata: true,
      },
    );
    expect(r.destination).toBe('10.0.0.2:8000');
    const rec = epp.streams.at(-1)!;
    expect(rec.grpcMetadata['x-route']).toBe('r1');
    expect(rec.received[0]!.attributes).toBeDefined();
    expect(rec.received.slice(1).every((m) => m.attributes === undefined)).toBe(true);
    expect(rec.received.every((m) => m.metadata_context !== undefined)).toBe(true);
    expect(rec.servedEndpoint).toBe('10.0.0.2:8000');
  });
});
