/**
 * The front door as a gateway calling its Endpoint Picker (the demo's byo shape): ext_proc
 * over TLS to a processor serving a self-signed certificate, which it does not verify (as
 * Envoy AI Gateway does), with the :authority Envoy AI Gateway gives the call; then
 * ORIGINAL_DST on the answered header. The same processor refuses a plaintext front door.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrontDoor, type FrontDoorOptions } from '../../demo/front-door.js';
import { portIsFree } from '../../demo/layout.js';
import type { RequestRecord } from '../../demo/request-record.js';
import { decodeRequest, encodeResponse } from '../../src/protocol/codec.js';
import { destinationHeadersResponse, streamedBody } from '../../src/protocol/responses.js';
import { extProcRawService } from '../../src/protocol/services.js';
import { selfSignedLeaf } from '../helpers/pki.js';

const AUTHORITY = 'mcip-router.default.svc:8083';
let grpcServer: Server;
let picker: string;
let upstream: HttpServer;
let upstreamAddress: string;
/** The :authority of every ext_proc stream the processor accepted. */
const authorities: string[] = [];
const doors: FrontDoor[] = [];
const cert = selfSignedLeaf('demo picker');

async function freePort(): Promise<number> {
  for (;;) {
    const p = 30_000 + Math.floor(Math.random() * 20_000);
    if (await portIsFree(p)) return p;
  }
}

async function frontDoor(o: Pick<FrontDoorOptions, 'routerTransport' | 'authority'>): Promise<{ port: number; records: RequestRecord[] }> {
  const port = await freePort();
  const records: RequestRecord[] = [];
  const door = new FrontDoor({ port, extProc: picker, ...o, onRequest: (r) => records.push(r) });
  await door.start();
  doors.push(door);
  return { port, records };
}

beforeAll(async () => {
  grpcServer = new Server();
  grpcServer.addService(extProcRawService, {
    // An EPP-like answer: after the whole body, the destination and the body back; the response passed through.
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
      authorities.push(call.getHost());
      call.on('data', (b: Buffer) => {
        const msg = decodeRequest(b);
        if (msg.request === 'request_body' && msg.request_body?.end_of_stream) {
          call.write(destinationHeadersResponse('request_headers', upstreamAddress));
          call.write(streamedBody('request_body', msg.request_body.body, true));
        } else if (msg.request === 'response_headers') {
          call.write(encodeResponse({ response_headers: { response: {} } }));
        } else if (msg.request === 'response_body') {
          call.write(streamedBody('response_body', msg.response_body?.body ?? Buffer.alloc(0), msg.response_body?.end_of_stream ?? false));
        }
      });
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    },
  });
  const creds = ServerCredentials.createSsl(null, [{ cert_chain: cert.cert, private_key: cert.key }], false);
  const port = await new Promise<number>((resolve, reject) => grpcServer.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))));
  picker = `127.0.0.1:${port}`;
  upstream = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-demo-cluster': 'cluster-x', 'x-demo-pod': 'pod-0' });
      res.end(JSON.stringify({ got: body }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', () => r()));
  upstreamAddress = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const d of doors) await d.stop(500);
  grpcServer?.forceShutdown();
  await new Promise<void>((r) => upstream.close(() => r()));
  cert.remove();
});

const post = (port: number) =>
  request(`http://127.0.0.1:${port}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","prompt":"hi"}' });

describe('the front door calling an Endpoint Picker over TLS', () => {
  it('connects without verifying the self-signed certificate, with the Service authority, and routes to the answered endpoint (plaintext cannot)', async () => {
    const { port, records } = await frontDoor({ routerTransport: 'skip-verify', authority: AUTHORITY });
    const res = await post(port);
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ got: '{"model":"m","prompt":"hi"}' });
    expect(authorities.at(-1)).toBe(AUTHORITY);
    expect(records.at(-1)).toMatchObject({ status: 200, destination: upstreamAddress, cluster: 'cluster-x' });

    // The processor really requires TLS: the own-Envoy transport (plaintext) gets no answer, a 500, nothing forwarded.
    const before = authorities.length;
    const plain = await frontDoor({});
    const refused = await post(plain.port);
    expect(refused.statusCode).toBe(500);
    await refused.body.dump();
    expect(authorities.length).toBe(before);
    expect(plain.records.at(-1)?.destination).toBeUndefined();
  });
});
