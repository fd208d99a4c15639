/**
 * EPP stand-ins for the fleet cell: one HTTP/2 listener per exported pool
 * (127.0.0.1, a port of its own, so every pool is a distinct target as
 * separate EPP Services are), answering gRPC health Check with SERVING and
 * every other call UNIMPLEMENTED. The router connects to each as it would to
 * a member's EPP, so the cell's memory includes one EPP connection per pool.
 */
import { type Http2Server, type ServerHttp2Stream, constants, createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { healthService } from '../../src/protocol/services.js';

const SERVING = (healthService.Check!.responseSerialize as (v: object) => Buffer)({ status: 'SERVING' });
/** The length-prefixed gRPC message: no compression, 4-byte big-endian length. */
const SERVING_FRAME = Buffer.concat([Buffer.from([0, 0, 0, 0, SERVING.length]), SERVING]);
const CHECK_PATH = healthService.Check!.path;

function answer(stream: ServerHttp2Stream, path: string | undefined): void {
  stream.on('error', () => undefined);
  // The request body (the HealthCheckRequest) is read and dropped.
  stream.resume();
  const grpcOk = path === CHECK_PATH;
  stream.respond({ [constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': grpcOk ? '0' : '12' }));
  stream.end(grpcOk ? SERVING_FRAME : undefined);
}

export class HealthFarm {
  private readonly servers: Http2Server[] = [];

  /** A new listener; resolves with its port. */
  async add(): Promise<number> {
    const server = createServer();
    server.on('stream', (stream, headers) => answer(stream, headers[constants.HTTP2_HEADER_PATH] as string | undefined));
    server.on('sessionError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.servers.push(server);
    return (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    this.servers.length = 0;
  }
}
