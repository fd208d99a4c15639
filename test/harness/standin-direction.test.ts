// The stand-in's Envoy rules, proven against tiny scripted (often misbehaving) processors.
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getHeader, getHeaderAll, runRequest, type StandinOptions, type StandinRequest } from './envoy-standin.js';
import { ExternalProcessorService, toStruct, type PbProcessingRequest, type PbProcessingResponse } from './protos.js';

type Call = grpc.ServerDuplexStream<PbProcessingRequest, PbProcessingResponse>;
type Script = (m: PbProcessingRequest, call: Call, n: number) => void;

const servers: grpc.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

/** A processor that runs `script` on every message it receives. */
async function processor(script: Script): Promise<string> {
  const server = new grpc.Server();
  server.addService(ExternalProcessorService, {
    Process: ((call: Call) => {
      let n = 0;
      call.on('data', (m: PbProcessingRequest) => script(m, call, n++));
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    }) as grpc.handleBidiStreamingCall<unknown, unknown>,
  });
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
  );
  servers.push(server);
  return `127.0.0.1:${port}`;
}

const DEST = '10.1.1.1:8000';
const set = (key: string, v: string, append?: boolean) => ({
  header: { key, raw_value: Buffer.from(v) },
  ...(append === undefined ? {} : { append: { value: append } }),
});
const destHeaders = (extra: object[] = [], clear = true): PbProcessingResponse => ({
  request_headers: { response: { header_mutation: { set_headers: [set('x-gateway-destination-endpoint', DEST), ...extra] }, clear_route_cache: clear } },
});
const streamed = (dir: 'request_body' | 'response_body', body: Buffer | undefined, eos: boolean): PbProcessingResponse => ({
  [dir]: { response: { body_mutation: { streamed_response: { body, end_of_stream: eos } } } },
});

/** A well-behaved full-duplex processor; `override` may answer a message itself (return true). */
function fullDuplex(override?: (m: PbProcessingRequest, call: Call) => boolean, headersResp = destHeaders()): Script {
  return (m, call) => {
    if (override?.(m, call)) return;
    if (m.request === 'request_headers' && m.request_headers?.end_of_stream) call.write(headersResp);
    if (m.request === 'request_body' && m.request_body?.end_of_stream) {
      call.write(headersResp);
      call.write(streamed('request_body', m.request_body.body, true));
    }
    if (m.request === 'response_headers') call.write({ response_headers: {} });
    if (m.request === 'response_body') call.write(streamed('response_body', m.response_body?.body, !!m.response_body?.end_of_stream));
    if (m.request === 'request_trailers') call.write({ request_trailers: {} });
    if (m.request === 'response_trailers') call.write({ response_trailers: {} });
  };
}

const REQ: StandinRequest = { authority: 'a', path: '/', body: '{"model":"m"}', response: { status: 200, body: 'ok' } };
const run = (target: string, req: Partial<StandinRequest> = {}, opts: StandinOptions = {}) => runRequest(target, { ...REQ, ...req }, opts);

describe('spurious messages -> local reply 500', () => {
  it('a response of the wrong type', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' && call.write({ response_headers: {} }));
    const r = await run(t, { body: undefined });
    expect(r).toMatchObject({ outcome: 'local-reply', status: 500 });
    expect(r.reason).toMatch(/^spurious: expected request_headers, got response_headers/);
  });

  it('a body response before the headers response in full duplex', async () => {
    const t = await processor((m, call) => m.request === 'request_body' && call.write(streamed('request_body', m.request_body?.body, true)));
    const r = await run(t);
    expect(r.status).toBe(500);
    expect(r.reason).toMatch(/spurious: body response before the headers response/);
  });

  it('a non-streamed body response in full duplex', async () => {
    const t = await processor(fullDuplex((m, call) => {
      if (m.request !== 'request_body') return false;
      call.write(destHeaders());
      call.write({ request_body: { response: { body_mutation: { body: Buffer.from('x') } } } });
      return true;
    }));
    const r = await run(t);
    expect(r.status).toBe(500);
    expect(r.reason).toMatch(/spurious: full duplex body response without streamed_response/);
  });

  it('an empty ProcessingResponse', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' && call.write({}));
    const r = await run(t, { body: undefined });
    expect(r.status).toBe(500);
    expect(r.reason).toMatch(/empty ProcessingResponse/);
  });

  it('streamed_response outside full duplex', async () => {
    const t = await processor((m, call) => {
      if (m.request === 'request_headers') call.write(destHeaders());
      if (m.request === 'request_body') call.write(streamed('request_body', Buffer.from('x'), true));
    });
    const r = await run(t, {}, { requestBodyMode: 'BUFFERED', responseBodyMode: 'NONE' });
    expect(r.status).toBe(500);
  });
});

describe('header mutations', () => {
  it('value-only sets an EMPTY header; append false/unset overwrites, true appends; protected headers skipped', async () => {
    const extra = [
      { header: { key: 'x-value-only', value: 'hello' } },
      set('x-over', 'new'), set('x-over2', 'new', false), set('x-app', 'two', true),
      set(':authority', 'evil'), set('host', 'evil'), set(':method', 'GET'), set(':scheme', 'https'), set('x-envoy-foo', 'bar'),
    ];
    const t = await processor(fullDuplex(undefined, destHeaders(extra)));
    const r = await run(t, { headers: { 'x-over': 'old', 'x-over2': 'old', 'x-app': 'one' } });
    expect(r.outcome).toBe('forwarded');
    const h = r.upstreamHeaders!;
    expect(getHeaderAll(h, 'x-value-only')).toEqual(['']);
    expect(getHeaderAll(h, 'x-over')).toEqual(['new']);
    expect(getHeaderAll(h, 'x-over2')).toEqual(['new']);
    expect(getHeaderAll(h, 'x-app')).toEqual(['one', 'two']);
    expect(getHeader(h, ':authority')).toBe('a');
    expect(getHeader(h, 'host')).toBeUndefined();
    expect(getHeader(h, ':method')).toBe('POST');
    expect(getHeader(h, ':scheme')).toBe('http');
    expect(getHeader(h, 'x-envoy-foo')).toBeUndefined();
  });

  it('clear_route_cache is honoured only with a header mutation', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' && call.write({ request_headers: { response: { clear_route_cache: true } } }));
    const r = await run(t, { body: undefined, headers: { 'x-gateway-destination-endpoint': DEST } }, { responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' });
    expect(r.outcome).toBe('forwarded');
    expect(r.routeCacheCleared).toBe(false);
  });

  it('dynamic_metadata is kept only for receiving namespaces', async () => {
    const resp = { ...destHeaders(), dynamic_metadata: toStruct({ 'envoy.lb': { k: 'v' }, other: { k: 'x' } }) };
    const t = await processor(fullDuplex(undefined, resp));
    const r = await run(t);
    expect(r.dynamicMetadata).toEqual({ 'envoy.lb': { k: 'v' } });
    const r2 = await run(t, {}, { receivingNamespaces: ['other'] });
    expect(r2.dynamicMetadata).toEqual({ other: { k: 'x' } });
  });
});

describe('ORIGINAL_DST: exactly one ip:port', () => {
  const withDest = async (value: string) => {
    const t = await processor(fullDuplex(undefined, { request_headers: { response: { header_mutation: { set_headers: [set('x-gateway-destination-endpoint', value)] } } } }));
    return run(t);
  };
  it.each(['10.1.1.1:8000', '[fd00::1]:8000', '[::1]:80'])('%s is routed', async (v) => {
    const r = await withDest(v);
    expect(r).toMatchObject({ outcome: 'forwarded', destination: v });
  });
  it.each(['10.1.1.1:8000,10.1.1.2:8000', 'garbage', '10.1.1.1', 'pod.example:80', '300.1.1.1:80', ' 10.1.1.1:80', ''])('%j -> 503', async (v) => {
    const r = await withDest(v);
    expect(r).toMatchObject({ outcome: 'local-reply', status: 503 });
    expect(r.reason).toMatch(/^no healthy upstream \(invalid/);
    expect(r.response.body.toString()).toBe('no healthy upstream');
  });
  it('missing header -> 503 no healthy upstream (the local reply still passes the response path)', async () => {
    const t = await processor(fullDuplex(undefined, { request_headers: {} }));
    const r = await run(t);
    expect(r).toMatchObject({ outcome: 'local-reply', status: 503 });
    expect(r.reason).toMatch(/^no healthy upstream/);
    expect(r.messages.some((m) => m.dir === 'out' && m.type === 'response_headers')).toBe(true);
  });
});

describe('stream failures', () => {
  const errorOnHeaders: Script = (m, call) => m.request === 'request_headers' && call.emit('error', { code: grpc.status.INTERNAL, details: 'boom' });
  const clientDest = { headers: { 'x-gateway-destination-endpoint': DEST } };

  it('gRPC error -> 500; failure_mode_allow continues without the processor', async () => {
    const t = await processor(errorOnHeaders);
    const r = await run(t, { body: undefined });
    expect(r).toMatchObject({ outcome: 'local-reply', status: 500, details: 'ext_proc_error_gRPC_error_13' });
    const r2 = await run(t, { body: undefined, ...clientDest }, { failureModeAllow: true });
    expect(r2).toMatchObject({ outcome: 'forwarded', destination: DEST });
    expect(r2.processorDropped).toMatch(/failure_mode_allow/);
    expect(r2.messages.filter((m) => m.dir === 'out').map((m) => m.type)).toEqual(['request_headers']);
  });

  it('failure to open (nothing listening) -> 500, or continue with failure_mode_allow', async () => {
    const t = await processor(() => undefined);
    servers.pop()!.forceShutdown();
    expect((await run(t, { body: undefined })).status).toBe(500);
    expect(await run(t, { body: undefined, ...clientDest }, { failureModeAllow: true })).toMatchObject({ outcome: 'forwarded' });
  });

  it('full duplex: once a body was sent, failure_mode_allow no longer applies', async () => {
    const t = await processor((m, call) => m.request === 'request_body' && call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'x' }));
    const r = await run(t, clientDest, { failureModeAllow: true });
    expect(r).toMatchObject({ outcome: 'local-reply', status: 500 });
  });

  it('server closing with OK -> Envoy continues without the processor', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' && call.end());
    const r = await run(t, { body: undefined, ...clientDest });
    expect(r).toMatchObject({ outcome: 'forwarded', destination: DEST });
    expect(r.processorDropped).toMatch(/closed the stream with OK/);
    expect(r.messages.filter((m) => m.dir === 'out').length).toBe(1);
  });

  it('message timeout -> 504 (failure_mode_allow continues); no message timeout in full duplex', async () => {
    const t = await processor(() => undefined);
    const opts: StandinOptions = { requestBodyMode: 'BUFFERED', messageTimeoutMs: 100 };
    expect(await run(t, {}, opts)).toMatchObject({ status: 504, details: 'ext_proc_error_per-message_timeout_exceeded' });
    expect(await run(t, clientDest, { ...opts, failureModeAllow: true })).toMatchObject({ outcome: 'forwarded' });
    const slow = await processor(fullDuplex((m, call) => {
      if (m.request !== 'request_body') return false;
      setTimeout(() => fullDuplex()(m, call, 0), 300);
      return true;
    }));
    expect(await run(slow, {}, { messageTimeoutMs: 100 })).toMatchObject({ outcome: 'forwarded', destination: DEST });
  });

  it('override_message_timeout extends the current wait', async () => {
    const t = await processor((m, call) => {
      if (m.request !== 'request_headers') return;
      call.write({ override_message_timeout: { seconds: 1 } });
      setTimeout(() => call.write(destHeaders()), 250);
    });
    const opts: StandinOptions = { requestBodyMode: 'BUFFERED', messageTimeoutMs: 100, responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' };
    expect(await run(t, { body: undefined }, opts)).toMatchObject({ outcome: 'forwarded', destination: DEST });
    // Ignored (not spurious) in full duplex, where no message timer runs.
    expect(await run(t, { body: undefined }, { ...opts, requestBodyMode: 'FULL_DUPLEX_STREAMED' })).toMatchObject({ outcome: 'forwarded' });
  });

  it('a response member beside override_message_timeout is not applied: Envoy still waits for its answer', async () => {
    const t = await processor((m, call) => {
      if (m.request !== 'request_headers') return;
      call.write({ ...destHeaders(), override_message_timeout: { seconds: 1 } });
    });
    const opts: StandinOptions = { requestBodyMode: 'NONE', messageTimeoutMs: 100, responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' };
    expect(await run(t, { body: undefined }, opts)).toMatchObject({ outcome: 'local-reply', status: 504 });
  });

  it('a client reset cancels the ext_proc stream', async () => {
    let cancelled = false;
    const server = await processor((_m, call) => call.on('cancelled', () => (cancelled = true)));
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const r = await run(server, {}, { signal: ac.signal });
    expect(r.outcome).toBe('reset');
    // The RST_STREAM reaches the processor asynchronously: wait for it (a loaded machine may take longer than 50 ms).
    await vi.waitFor(() => expect(cancelled).toBe(true), { timeout: 5000, interval: 20 });
  });
});

describe('immediate_response is accepted at any time', () => {
  const imm = (code: number, extra: object = {}): PbProcessingResponse => ({
    immediate_response: { status: { code }, body: Buffer.from(`status ${code}`), headers: { set_headers: [set('x-why', 'because'), set('x-envoy-ok', '1')] }, ...extra },
    dynamic_metadata: toStruct({ 'envoy.lb': { picked: 'none' } }),
  });
  it('on request headers: status, body, headers (permissive), dynamic metadata; processing ends', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' && call.write(imm(429)));
    const r = await run(t);
    expect(r).toMatchObject({ outcome: 'local-reply', status: 429, reason: 'immediate_response' });
    expect(r.response.body.toString()).toBe('status 429');
    expect(getHeader(r.response.headers, 'x-why')).toBe('because');
    expect(getHeader(r.response.headers, 'x-envoy-ok')).toBe('1');
    expect(r.dynamicMetadata['envoy.lb']).toEqual({ picked: 'none' });
    expect(r.messages.some((m) => m.type.startsWith('response_'))).toBe(false);
  });
  it('after the body in full duplex, and a status below 200 becomes 200', async () => {
    const t = await processor((m, call) => m.request === 'request_body' && m.request_body?.end_of_stream && call.write(imm(100)));
    expect(await run(t)).toMatchObject({ outcome: 'local-reply', status: 200 });
  });
  it('on response headers it replaces the upstream response', async () => {
    const t = await processor(fullDuplex((m, call) => m.request === 'response_headers' && !!call.write(imm(503))));
    const r = await run(t);
    expect(r).toMatchObject({ outcome: 'local-reply', status: 503, destination: DEST });
  });
  it('after response headers went to the client (full duplex), Envoy can only reset', async () => {
    const t = await processor(fullDuplex((m, call) => m.request === 'response_body' && !!call.write(imm(500))));
    const r = await run(t, { response: { status: 200, body: 'x' } });
    expect(r).toMatchObject({ outcome: 'reset', status: 200 });
  });
});

describe('per-mode body handling', () => {
  it('STREAMED: each chunk mutated in order; BUFFERED: body response may mutate held headers', async () => {
    const t = await processor((m, call) => {
      if (m.request === 'request_headers') call.write(destHeaders());
      if (m.request === 'request_body') {
        const up = Buffer.from(m.request_body!.body!.toString().toUpperCase());
        call.write({ request_body: { response: { header_mutation: { set_headers: [set('x-late', '1')] }, body_mutation: { body: up } } } });
      }
    });
    const s = await run(t, { body: ['ab', 'cd'] }, { requestBodyMode: 'STREAMED', responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' });
    expect(s.forwardedBody!.toString()).toBe('ABCD');
    expect(getHeader(s.upstreamHeaders, 'x-late')).toBeUndefined();
    const b = await run(t, { body: ['ab', 'cd'] }, { requestBodyMode: 'BUFFERED', responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' });
    expect(b.forwardedBody!.toString()).toBe('ABCD');
    expect(getHeader(b.upstreamHeaders, 'x-late')).toBe('1');
  });

  it('CONTINUE_AND_REPLACE on headers replaces the body; nothing more is sent', async () => {
    const t = await processor((m, call) => m.request === 'request_headers' &&
      call.write({ request_headers: { response: { status: 1, header_mutation: { set_headers: [set('x-gateway-destination-endpoint', DEST)] }, body_mutation: { body: Buffer.from('new') } } } }));
    const r = await run(t, { body: ['old', 'body'] }, { requestBodyMode: 'BUFFERED', responseHeaderMode: 'SKIP', responseBodyMode: 'NONE' });
    expect(r.forwardedBody!.toString()).toBe('new');
    expect(r.messages.filter((m) => m.dir === 'out').map((m) => m.type)).toEqual(['request_headers']);
  });

  it('full duplex: CONTINUE_AND_REPLACE on headers ends the direction; a later streamed body response is spurious', async () => {
    const replace = { request_headers: { response: { status: 1, header_mutation: { set_headers: [set('x-gateway-destination-endpoint', DEST)] }, body_mutation: { body: Buffer.from('new') } } } };
    const replacing = (echo: boolean) =>
      processor(fullDuplex((m, call) => {
        if (m.request !== 'request_body') return false;
        if (!m.request_body?.end_of_stream) return true;
        call.write(replace);
        if (echo) call.write(streamed('request_body', m.request_body.body, true));
        return true;
      }));
    const ok = await run(await replacing(false), { body: ['old', 'body'] });
    expect(ok.status).toBe(200);
    expect(ok.forwardedBody!.toString()).toBe('new');
    const r = await run(await replacing(true), { body: ['old', 'body'] });
    expect(r).toMatchObject({ outcome: 'local-reply', status: 500 });
    expect(r.reason).toMatch(/spurious/);
  });

  it('full duplex: M streamed responses may answer N chunks; only streamed bytes reach the upstream', async () => {
    const t = await processor(fullDuplex((m, call) => {
      if (m.request !== 'request_body' || !m.request_body?.end_of_stream) return m.request === 'request_body';
      call.write(destHeaders());
      for (const piece of ['x', 'y', 'z']) call.write(streamed('request_body', Buffer.from(piece), false));
      call.write(streamed('request_body', undefined, true));
      return true;
    }));
    const r = await run(t, { body: ['a', 'b'] });
    expect(r.forwardedBody!.toString()).toBe('xyz');
  });
});
