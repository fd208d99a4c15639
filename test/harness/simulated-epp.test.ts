// The simulated EPP: GIE-like picking, faults, health, TLS, counters, kill/restart.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { createEnvoyStandin, runRequest, type StandinOptions, type StandinRequest } from './envoy-standin.js';
import { ExternalProcessorClient, fromStruct, HealthClient, type PbProcessingRequest, type PbProcessingResponse } from './protos.js';
import { startSimulatedEpp, TLS_FIXTURES, type SimulatedEpp, type SimulatedEppOptions } from './simulated-epp.js';

const EPS = ['10.0.0.1:8000', '10.0.0.2:8000', '10.0.0.3:8000'];
const REQ: StandinRequest = { authority: 'a', path: '/v1/completions', body: '{"model":"llama","prompt":"hi"}' };
const running: SimulatedEpp[] = [];
afterEach(async () => {
  for (const e of running.splice(0)) await e.stop();
});

async function epp(o: Partial<SimulatedEppOptions> = {}): Promise<SimulatedEpp> {
  const e = await startSimulatedEpp({ endpoints: EPS, ...o });
  running.push(e);
  return e;
}
const run = (e: SimulatedEpp, req: Partial<StandinRequest> = {}, opts: StandinOptions = {}) => runRequest(e.address, { ...REQ, ...req }, opts);
const idle = async (e: SimulatedEpp) => {
  for (let i = 0; i < 100 && e.counters.openStreams !== 0; i++) await new Promise((r) => setTimeout(r, 10));
  return e.counters.openStreams;
};

describe('picking like a GIE EPP', () => {
  it('reads the JSON body first: 400 when not JSON or (requireModel) no model', async () => {
    const e = await epp({ requireModel: true });
    expect(await run(e, { body: 'not json' })).toMatchObject({ outcome: 'local-reply', status: 400 });
    expect(await run(e, { body: '{"prompt":"x"}' })).toMatchObject({ outcome: 'local-reply', status: 400 });
    expect(await run(e)).toMatchObject({ outcome: 'forwarded' });
    expect(e.counters.immediateResponses).toBe(2);
  });

  it('listSize returns a comma-separated list, primary first: ORIGINAL_DST rejects it (503)', async () => {
    const e = await epp({ listSize: 2 });
    const r = await run(e);
    expect(r).toMatchObject({ outcome: 'local-reply', status: 503, destinationHeader: '10.0.0.1:8000,10.0.0.2:8000' });
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ 'x-gateway-destination-endpoint': '10.0.0.1:8000,10.0.0.2:8000' });
    expect(e.counters.picks).toEqual({ '10.0.0.1:8000': 1 });
  });

  it('honours the subset hint, and answers 503 when nothing in it is known', async () => {
    const e = await epp();
    const hint = (list: string[]) => ({ metadataContext: { 'envoy.lb.subset_hint': { 'x-gateway-destination-endpoint-subset': list } } });
    for (let i = 0; i < 4; i++) expect((await run(e, {}, hint(['10.0.0.3:8000', '10.9.9.9:1']))).destination).toBe('10.0.0.3:8000');
    expect((await run(e, {}, hint(['10.0.0.2']))).destination).toBe('10.0.0.2:8000');
    expect(await run(e, {}, hint(['10.9.9.9:1']))).toMatchObject({ outcome: 'local-reply', status: 503 });
  });

  it('custom picker: any value (even garbage), or an immediate response', async () => {
    const e = await epp({ picker: (ctx) => (ctx.json?.model === 'bad' ? 'garbage' : { immediate: { status: 404, body: 'no such model' } }) });
    expect(await run(e, { body: '{"model":"bad"}' })).toMatchObject({ status: 503, destinationHeader: 'garbage' });
    expect(await run(e)).toMatchObject({ status: 404, reason: 'immediate_response' });
  });

  it('non-full-duplex modes: answers headers right away, body CONTINUE', async () => {
    const e = await epp({ responseHeaders: { 'x-epp': 'seen' } });
    const r = await run(e, {}, { requestBodyMode: 'BUFFERED', responseBodyMode: 'BUFFERED', messageTimeoutMs: 2000 });
    expect(r).toMatchObject({ outcome: 'forwarded', destination: '10.0.0.1:8000' });
    expect(r.forwardedBody!.toString()).toBe(REQ.body);
    expect(r.response.headers).toContainEqual(['x-epp', 'seen']);
    expect(r.messages.map((m) => `${m.dir}:${m.type}`).slice(0, 4)).toEqual(['out:request_headers', 'in:request_headers', 'out:request_body', 'in:request_body']);
  });
});

describe('faults, switchable at runtime', () => {
  it('immediate 503/429 and back', async () => {
    const e = await epp();
    e.setImmediate({ status: 429, body: 'saturated' });
    const r = await run(e);
    expect(r).toMatchObject({ status: 429 });
    expect(r.response.body.toString()).toBe('saturated');
    e.setImmediate(undefined);
    expect(await run(e)).toMatchObject({ outcome: 'forwarded' });
  });

  it('delayMs before answering headers', async () => {
    const e = await epp({ delayMs: 150 });
    const t0 = Date.now();
    expect(await run(e)).toMatchObject({ outcome: 'forwarded' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('hang: full duplex waits until the client resets (or the idle timeout); other modes hit the message timeout', async () => {
    const e = await epp({ hang: true });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    expect(await run(e, {}, { signal: ac.signal })).toMatchObject({ outcome: 'reset' });
    expect(await run(e, {}, { requestBodyMode: 'STREAMED', messageTimeoutMs: 100 })).toMatchObject({ status: 504 });
    expect(await run(e, {}, { streamIdleTimeoutMs: 100 })).toMatchObject({ status: 408, reason: 'stream idle timeout' });
    expect(await idle(e)).toBe(0);
  });

  it.each([
    ['on-headers', 500],
    ['mid-body', 500],
    ['after-headers-response', 500],
    ['close-ok', 503],
  ] as const)('crash %s -> %i', async (mode, status) => {
    const e = await epp({ crash: mode });
    const r = await run(e);
    expect(r.status).toBe(status);
    if (mode === 'close-ok') expect(r.reason).toMatch(/no healthy upstream/);
    else expect(r.details).toBe('ext_proc_error_gRPC_error_14');
    expect(await idle(e)).toBe(0);
  });

  it('close-ok: Envoy continues without the processor', async () => {
    const e = await epp({ crash: 'close-ok' });
    const r = await run(e, { body: undefined, headers: { 'x-gateway-destination-endpoint': '10.7.7.7:80' } });
    expect(r).toMatchObject({ outcome: 'forwarded', destination: '10.7.7.7:80' });
  });

  it('kill() resets streams and closes the port; restart() serves on the same port', async () => {
    const e = await epp({ hang: true });
    const envoy = createEnvoyStandin(e.address);
    const pending = envoy.run(REQ);
    await new Promise((r) => setTimeout(r, 50));
    expect(e.counters.openStreams).toBe(1);
    const port = e.port;
    await e.kill();
    expect(await pending).toMatchObject({ status: 500 });
    expect(await envoy.run(REQ)).toMatchObject({ status: 500 });
    e.setHang(false);
    await e.restart();
    expect(e.port).toBe(port);
    // grpc-js keeps its channel in backoff briefly (Envoy would just connect on the next stream).
    let r = await envoy.run(REQ);
    for (let i = 0; i < 40 && r.outcome !== 'forwarded'; i++) {
      await new Promise((res) => setTimeout(res, 50));
      r = await envoy.run(REQ);
    }
    expect(r).toMatchObject({ outcome: 'forwarded' });
    envoy.close();
    expect(await idle(e)).toBe(0);
  });
});

describe('counters and records', () => {
  it('counts streams, messages by type and picks per endpoint', async () => {
    const e = await epp();
    const envoy = createEnvoyStandin(e.address);
    for (let i = 0; i < 6; i++) await envoy.run({ ...REQ, trailers: { t: '1' } });
    envoy.close();
    expect(e.counters.streamsOpened).toBe(6);
    expect(e.counters.picks).toEqual({ '10.0.0.1:8000': 2, '10.0.0.2:8000': 2, '10.0.0.3:8000': 2 });
    expect(e.counters.messages).toMatchObject({ request_headers: 6, request_body: 6, request_trailers: 6, response_headers: 6, response_body: 6 });
    expect(await idle(e)).toBe(0);
    expect(e.streams).toHaveLength(6);
    expect(e.streams[0]!.destination).toBe('10.0.0.1:8000');
    e.resetCounters();
    expect(e.counters.streamsOpened).toBe(0);
  });

  it('counts how streams ended: OK, cancelled by the client (even by an RST_STREAM right after its half-close), failed', async () => {
    const e = await epp();
    const ended = () => {
      const c = e.counters;
      return { ok: c.streamsEndedOk, cancelled: c.streamsCancelled, failed: c.streamsFailed };
    };
    const until = async (want: ReturnType<typeof ended>) => {
      for (let i = 0; i < 200 && JSON.stringify(ended()) !== JSON.stringify(want); i++) await new Promise((r) => setTimeout(r, 10));
      expect(ended()).toEqual(want);
    };
    // A client that half-closes and waits for the EPP's status: ended OK.
    const client = new ExternalProcessorClient(e.address, grpc.credentials.createInsecure());
    const call = (client as unknown as { Process(): grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse> }).Process();
    const answers: PbProcessingResponse[] = [];
    call.on('data', (m: PbProcessingResponse) => answers.push(m));
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.write({ request_headers: { headers: { headers: [] }, end_of_stream: true } });
    call.end();
    expect((await status).code).toBe(grpc.status.OK);
    client.close();
    expect(answers.map((a) => a.response)).toEqual(['request_headers']);
    await until({ ok: 1, cancelled: 0, failed: 0 });
    expect(e.streams[0]!.end).toBe('ok');
    // Envoy's close, half-close then RST_STREAM at once: the reset reaches the HTTP/2 stream (what
    // Node's rapid-reset limit counts), so it is cancelled even though the EPP ended it OK.
    expect(await run(e)).toMatchObject({ outcome: 'forwarded' });
    await until({ ok: 1, cancelled: 1, failed: 0 });
    // Cancelled before the EPP answered.
    e.setHang(true);
    const ac = new AbortController();
    const pending = run(e, {}, { signal: ac.signal });
    for (let i = 0; i < 100 && e.counters.openStreams === 0; i++) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    expect(await pending).toMatchObject({ outcome: 'reset' });
    await until({ ok: 1, cancelled: 2, failed: 0 });
    // The EPP fails it.
    e.setHang(false);
    e.setCrash('on-headers');
    expect(await run(e)).toMatchObject({ status: 500 });
    await until({ ok: 1, cancelled: 2, failed: 1 });
    expect(e.streams.map((r) => r.end)).toEqual(['ok', 'cancelled', 'cancelled', 'failed']);
  });
});

interface HealthStub extends grpc.Client {
  Check(req: { service: string }, cb: (err: grpc.ServiceError | null, res: { status?: number }) => void): void;
  Watch(req: { service: string }): grpc.ClientReadableStream<{ status?: number }>;
}
const healthClient = (addr: string) => new HealthClient(addr, grpc.credentials.createInsecure()) as unknown as HealthStub;

describe('health and TLS', () => {
  const check = (addr: string, service: string) =>
    new Promise<{ status?: number } | grpc.ServiceError>((resolve) => {
      const c = healthClient(addr);
      c.Check({ service }, (err, res) => {
        c.close();
        resolve(err ?? res);
      });
    });

  it('Check per service, settable; unknown service NOT_FOUND; separate port', async () => {
    const e = await epp({ separateHealthPort: true, health: { 'inference-extension': 'NOT_SERVING' } });
    expect(await check(e.address, 'envoy.service.ext_proc.v3.ExternalProcessor')).toEqual({ status: 1 });
    expect(await check(e.healthAddress, 'inference-extension')).toEqual({ status: 2 });
    e.setHealth('inference-extension', 'SERVING');
    expect(await check(e.healthAddress, 'inference-extension')).toEqual({ status: 1 });
    expect(await check(e.address, '')).toEqual({ status: 1 });
    expect(await check(e.address, 'nope')).toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('Watch streams the current status, then changes', async () => {
    const e = await epp();
    const c = healthClient(e.address);
    const seen: number[] = [];
    const call = c.Watch({ service: '' });
    call.on('data', (m: { status?: number }) => seen.push(m.status ?? 0));
    call.on('error', () => undefined);
    await new Promise((r) => setTimeout(r, 50));
    e.setHealth('', 'NOT_SERVING');
    await new Promise((r) => setTimeout(r, 50));
    call.cancel();
    c.close();
    expect(seen).toEqual([1, 2]);
  });

  it('TLS with the self-signed fixture certificate', async () => {
    const e = await epp({ tls: true });
    const tls = createEnvoyStandin(e.address, { tls: { ca: TLS_FIXTURES.cert } });
    expect(await tls.run(REQ)).toMatchObject({ outcome: 'forwarded' });
    tls.close();
    expect(await run(e)).toMatchObject({ status: 500 }); // plaintext client against TLS
  });

  it('metadata_context is recorded as sent (gateway to EPP)', async () => {
    const e = await epp();
    await run(e, {}, { metadataContext: { custom: { a: 1 } } });
    const md = e.streams[0]!.received[0]!.metadata_context;
    expect(Object.keys(md?.filter_metadata ?? {})).toEqual(['custom']);
    expect(fromStruct(md?.filter_metadata?.custom)).toEqual({ a: 1 });
  });
});
