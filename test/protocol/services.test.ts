import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXT_PROC_PROCESS_PATH, HEALTH_CHECK_PATH } from '../../src/protocol/constants.js';
import { encodeRequest } from '../../src/protocol/codec.js';
import { HealthStatus, extProcRawService, healthService, type HealthCheckResponse } from '../../src/protocol/services.js';

describe('service definitions over a real socket', () => {
  const server = new grpc.Server();
  let address = '';
  const received: Buffer[] = [];

  beforeAll(async () => {
    server.addService(extProcRawService, {
      Process: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (b: Buffer) => {
          received.push(b);
          call.write(Buffer.from(b).reverse());
        });
        call.on('end', () => call.end());
      },
    });
    server.addService(healthService, {
      Check: (call: grpc.ServerUnaryCall<{ service: string }, HealthCheckResponse>, cb: grpc.sendUnaryData<HealthCheckResponse>) => {
        if (call.request.service === 'missing') cb({ code: grpc.status.NOT_FOUND });
        else cb(null, { status: call.request.service === '' ? HealthStatus.SERVING : HealthStatus.NOT_SERVING });
      },
      Watch: (call: grpc.ServerWritableStream<unknown, HealthCheckResponse>) => call.end(),
    });
    const port = await new Promise<number>((res, rej) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? rej(e) : res(p))),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  it('Process relays raw bytes unchanged both ways, even bytes that are not canonical protobuf', async () => {
    expect(extProcRawService.Process.path).toBe(EXT_PROC_PROCESS_PATH);
    const Client = grpc.makeGenericClientConstructor(extProcRawService, 'ExternalProcessor');
    const client = new Client(address, grpc.credentials.createInsecure());
    // A valid message followed by an unknown field and an over-long varint: re-encoding would change it.
    const odd = Buffer.concat([encodeRequest({ request_body: { end_of_stream: true } }), Buffer.from('a806ff8080808000', 'hex')]);
    const big = Buffer.alloc(1024 * 1024, 1);
    const call = client.makeBidiStreamRequest(EXT_PROC_PROCESS_PATH, (b: Buffer) => b, (b: Buffer) => b);
    const replies: Buffer[] = [];
    const done = new Promise<void>((res, rej) => {
      call.on('data', (b: Buffer) => replies.push(b));
      call.on('error', rej);
      call.on('end', res);
    });
    call.write(odd);
    call.write(big);
    call.end();
    await done;
    client.close();
    expect(received.map((b) => b.toString('hex'))).toEqual([odd.toString('hex'), big.toString('hex')]);
    expect(replies[0]!.equals(Buffer.from(odd).reverse())).toBe(true);
    expect(replies[1]!.length).toBe(big.length);
  });

  it('Health/Check answers with numeric serving states', async () => {
    expect(healthService['Check']!.path).toBe(HEALTH_CHECK_PATH);
    const Client = grpc.makeGenericClientConstructor(healthService, 'Health');
    const client = new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Check(req: { service: string }, cb: (e: grpc.ServiceError | null, r?: HealthCheckResponse) => void): void;
    };
    const check = (service: string) =>
      new Promise<HealthCheckResponse>((res, rej) => client.Check({ service }, (e, r) => (e ? rej(e) : res(r!))));
    await expect(check('')).resolves.toEqual({ status: HealthStatus.SERVING });
    await expect(check('inference-extension')).resolves.toEqual({ status: HealthStatus.NOT_SERVING });
    await expect(check('missing')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    client.close();
  });
});
