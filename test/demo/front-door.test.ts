/**
 * The demo's front door (Envoy stand-in) against a scripted ext_proc
 * processor: it must behave as Envoy does with envoy/envoy.yaml (protocol
 * notes section 1), or the demo would show things Envoy would not do.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials, status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FrontDoor } from '../../demo/front-door.js';
import { MAX_REQUESTS_PER_CONNECTION } from '../../demo/router-connections.js';
import { routerMaxRequestsPerConnection } from '../envoy/config-fixtures.js';
import { portIsFree } from '../../demo/layout.js';
import type { RequestRecord } from '../../demo/request-record.js';
import { decodeRequest, encodeResponse, headerValue, type ProcessingRequest } from '../../src/protocol/codec.js';
import { destinationHeadersResponse, immediateResponse, streamedBody } from '../../src/protocol/responses.js';
import { fromStruct } from '../../src/protocol/struct.js';
import { extProcRawService } from '../../src/protocol/services.js';

type Script = (msg: ProcessingRequest, call: ServerDuplexStream<Buffer, Buffer>, seen: ProcessingRequest[]) => void;

let script: Script = () => undefined;
const streams: ProcessingRequest[][] = [];
/** The client address (ip:port, so its connection) of every stream, in order. */
const peers: string[] = [];
let grpcServer: Server;
let extProc: string;
let upstream: HttpServer;
let upstreamAddress: string;
const upstreamSeen: { headers: IncomingMessage['headers']; body: string }[] = [];
let frontDoor: FrontDoor | undefined;
let frontPort: number;
const records: RequestRecord[] = [];

async function freePort(): Promise<number> {
  for (;;) {
    const p = 30_000 + Math.floor(Math.random() * 20_000);
    if (await portIsFree(p)) return p;
  }
}

/** A GIE-like answer: after the body, route to the upstream, echo the body; echo the response path. */
const echoTo =
  (destination: string): Script =>
  (msg, call) => {
    switch (msg.request) {
      case 'request_body':
        if (msg.request_body?.end_of_stream) {
          call.write(destinationHeadersResponse('request_headers', destination));
          call.write(streamedBody('request_body', msg.request_body.body, true));
        }
        return;
      case 'response_headers':
        call.write(encodeResponse({ response_headers: { response: { header_mutation: { set_headers: [{ header: { key: 'x-from-processor', raw_value: Buffer.from('yes') } }] } } } }));
        return;
      case 'response_body':
        call.write(streamedBody('response_body', msg.response_body?.body ?? Buffer.alloc(0), msg.response_body?.end_of_stream ?? false));
        return;
      default:
        return;
    }
  };

beforeAll(async () => {
  grpcServer = new Server();
  grpcServer.addService(extProcRawService, {
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
      const seen: ProcessingRequest[] = [];
      streams.push(seen);
      peers.push(call.getPeer());
      call.on('data', (b: Buffer) => {
        const msg = decodeRequest(b);
        seen.push(msg);
        script(msg, call, seen);
      });
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  extProc = `127.0.0.1:${port}`;
  upstream = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      upstreamSeen.push({ headers: req.headers, body });
      if (req.url === '/empty') {
        res.writeHead(200, { 'content-length': '0' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'x-demo-cluster': 'cluster-x', 'x-demo-pod': 'pod-0' });
      res.end(JSON.stringify({ got: body }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamAddress = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  frontPort = await freePort();
  frontDoor = new FrontDoor({ port: frontPort, extProc, onRequest: (r) => records.push(r) });
  await frontDoor.start();
});

afterAll(async () => {
  await frontDoor?.stop(500);
  grpcServer.forceShutdown();
  await new Promise<void>((r) => upstream.close(() => r()));
});

afterEach(() => {
  streams.length = 0;
  peers.length = 0;
  upstreamSeen.length = 0;
  records.length = 0;
});

async function post(
  body: string,
  headers: Record<string, string> = {},
  port = frontPort,
): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  const res = await request(`http://127.0.0.1:${port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
}

describe('demo front door (Envoy stand-in)', () => {
  it('passes an upstream response without a body through, and keeps serving', async () => {
    script = (msg, call) => {
      if (msg.request === 'request_headers') call.write(destinationHeadersResponse('request_headers', upstreamAddress));
      if (msg.request === 'response_headers') call.write(encodeResponse({ response_headers: {} }));
    };
    const empty = await request(`http://127.0.0.1:${frontPort}/empty`);
    expect(empty.statusCode).toBe(200);
    expect(await empty.body.text()).toBe('');
    script = echoTo(upstreamAddress);
    expect((await post('{"model":"m"}')).status).toBe(200);
  });

  it('runs the FULL_DUPLEX_STREAMED exchange both ways and proxies to the chosen endpoint', async () => {
    script = echoTo(upstreamAddress);
    const r = await post('{"model":"m","prompt":"hi"}', { 'x-gateway-destination-endpoint': '10.0.0.1:1' });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ got: '{"model":"m","prompt":"hi"}' });
    expect(r.headers['x-from-processor']).toBe('yes');

    const [first, ...rest] = streams[0]!;
    // Envoy 1.34+: protocol_config on the first message; values in raw_value; pseudo-headers included.
    expect(first!.request).toBe('request_headers');
    expect(first!.protocol_config).toMatchObject({ request_body_mode: 4, response_body_mode: 4 });
    const headers = first!.request_headers!.headers!.headers;
    expect(headers.every((h) => h.value === '' && h.raw_value.length > 0)).toBe(true);
    expect(headerValue(headers, ':path')).toBe('/v1/completions');
    expect(headerValue(headers, ':method')).toBe('POST');
    expect(headerValue(headers, ':authority')).toBe(`127.0.0.1:${frontPort}`);
    // envoy.yaml's header_mutation filter removes a client-sent destination before ext_proc.
    expect(headerValue(headers, 'x-gateway-destination-endpoint')).toBeUndefined();
    expect(first!.request_headers!.end_of_stream).toBe(false);
    const lastRequestBody = rest.filter((m) => m.request === 'request_body').at(-1);
    expect(lastRequestBody?.request_body?.end_of_stream).toBe(true);
    // Response path: the served endpoint and the EPP's envoy.lb metadata come back in metadata_context.
    const respHeaders = rest.find((m) => m.request === 'response_headers')!;
    expect(fromStruct(respHeaders.metadata_context!.filter_metadata['envoy.lb'])).toEqual({
      'x-gateway-destination-endpoint': upstreamAddress,
      'x-gateway-destination-endpoint-served': upstreamAddress,
    });
    expect(headerValue(respHeaders.response_headers!.headers, ':status')).toBe('200');
    expect(upstreamSeen[0]!.headers['x-gateway-destination-endpoint']).toBe(upstreamAddress);
    expect(records[0]).toMatchObject({ status: 200, cluster: 'cluster-x', pod: 'pod-0', destination: upstreamAddress, generated: false });
  });

  it('makes an immediate_response the client response (status below 200 becomes 200)', async () => {
    script = (msg, call) => {
      if (msg.request === 'request_headers') {
        call.write(immediateResponse({ status: 429, body: { error: { message: 'shed' } }, details: 'demo_epp_429' }));
        call.end();
      }
    };
    const r = await post('{"model":"m"}');
    expect(r.status).toBe(429);
    expect(JSON.parse(r.text)).toEqual({ error: { message: 'shed' } });
    expect(r.headers['content-type']).toBe('application/json');
    expect(records[0]).toMatchObject({ status: 429, detail: 'EPP: shed' });

    script = (msg, call) => {
      if (msg.request === 'request_headers') call.write(immediateResponse({ status: 100 }));
    };
    expect((await post('{}')).status).toBe(200);
  });

  it('answers 500 to spurious messages and gRPC errors, as Envoy does', async () => {
    // A body response before the headers response.
    script = (msg, call) => {
      if (msg.request === 'request_body') call.write(streamedBody('request_body', Buffer.from('x'), true));
    };
    expect((await post('{"model":"m"}')).status).toBe(500);
    // A body response that is not streamed_response in full duplex.
    script = (msg, call) => {
      if (msg.request === 'request_body' && msg.request_body?.end_of_stream) {
        call.write(destinationHeadersResponse('request_headers', upstreamAddress));
        call.write(encodeResponse({ request_body: {} }));
      }
    };
    expect((await post('{"model":"m"}')).status).toBe(500);
    // An empty ProcessingResponse.
    script = (msg, call) => {
      if (msg.request === 'request_headers') call.write(encodeResponse({}));
    };
    expect((await post('{"model":"m"}')).status).toBe(500);
    // The processor fails the stream.
    script = (msg, call) => {
      if (msg.request === 'request_headers') call.emit('error', Object.assign(new Error('boom'), { code: GrpcStatus.UNAVAILABLE }));
    };
    const r = await post('{"model":"m"}');
    expect(r.status).toBe(500);
    expect(r.text).toContain('ext_proc_error_gRPC_error_14');
    expect(upstreamSeen).toEqual([]);
  });

  it('routes like ORIGINAL_DST: 503 without exactly one ip:port, and reads only raw_value', async () => {
    const answer = (header: { key: string; value?: string; raw_value?: Buffer }): Script => (msg, call) => {
      if (msg.request === 'request_body' && msg.request_body?.end_of_stream) {
        call.write(encodeResponse({ request_headers: { response: { header_mutation: { set_headers: [{ header }] }, clear_route_cache: true } } }));
        call.write(streamedBody('request_body', msg.request_body.body, true));
      }
    };
    script = answer({ key: 'x-gateway-destination-endpoint', raw_value: Buffer.from(`${upstreamAddress},${upstreamAddress}`) });
    expect((await post('{"model":"m"}')).status).toBe(503);
    // A value-only mutation sets an empty header in Envoy: no host.
    script = answer({ key: 'x-gateway-destination-endpoint', value: upstreamAddress });
    expect((await post('{"model":"m"}')).status).toBe(503);
    // The processor ends the stream with OK before answering: Envoy continues without it, and without a destination.
    script = (msg, call) => {
      if (msg.request === 'request_headers') call.end();
    };
    expect((await post('{"model":"m"}')).status).toBe(503);
    expect(upstreamSeen).toEqual([]);
    // Nothing listens at the destination: an upstream connect error.
    script = echoTo('127.0.0.1:1');
    const r = await post('{"model":"m"}');
    expect(r.status).toBe(503);
    expect(r.text).toContain('upstream connect error');
  });

  it('sends request_headers with end_of_stream and no body messages for a request without a body', async () => {
    script = (msg, call) => {
      if (msg.request === 'request_headers') call.write(destinationHeadersResponse('request_headers', upstreamAddress));
      if (msg.request === 'response_headers') call.write(encodeResponse({ response_headers: {} }));
      if (msg.request === 'response_body') call.write(streamedBody('response_body', msg.response_body!.body, msg.response_body!.end_of_stream));
    };
    const res = await request(`http://127.0.0.1:${frontPort}/v1/models`);
    expect(res.statusCode).toBe(200);
    await res.body.text();
    const seen = streams[0]!;
    expect(seen[0]!.request_headers!.end_of_stream).toBe(true);
    expect(seen.some((m) => m.request === 'request_body')).toBe(false);
  });
});

describe('demo front door: connections to the router, as envoy.yaml', () => {
  /** Streams per connection, in the order the connections were first used. */
  const perConnection = (): number[] => {
    const counts = new Map<string, number>();
    for (const p of peers) counts.set(p, (counts.get(p) ?? 0) + 1);
    return [...counts.values()];
  };

  it("rotates every max_requests_per_connection streams, envoy.yaml's value (Node's HTTP/2 rapid-reset limit)", async () => {
    expect(MAX_REQUESTS_PER_CONNECTION).toBe(routerMaxRequestsPerConnection('envoy.yaml'));
    const port = await freePort();
    const fd = new FrontDoor({ port, extProc, onRequest: () => undefined, maxRequestsPerConnection: 5 });
    await fd.start();
    try {
      script = echoTo(upstreamAddress);
      for (let i = 0; i < 12; i++) expect((await post('{"model":"m"}', {}, port)).status).toBe(200);
      const rs = await Promise.all(Array.from({ length: 8 }, () => post('{"model":"m"}', {}, port)));
      expect(rs.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(perConnection()).toEqual([5, 5, 5, 5]);
    } finally {
      await fd.stop(500);
    }
  });

  it('serves well past 1,000 requests without a failure (each ends with a half-close and RST_STREAM)', async () => {
    script = echoTo(upstreamAddress);
    const total = 2 * MAX_REQUESTS_PER_CONNECTION + 200;
    let next = 0;
    const statuses = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < total) {
          next++;
          const { status } = await post('{"model":"m"}');
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }
      }),
    );
    expect(Object.fromEntries(statuses)).toEqual({ 200: total });
    expect(perConnection().every((n) => n <= MAX_REQUESTS_PER_CONNECTION)).toBe(true);
  }, 60_000);
});
