/**
 * Peers for tests of where the router dials: a gRPC endpoint on node:http2 (h2c or
 * TLS) bound to one address that counts the connections it accepts, echoes ext_proc
 * messages and answers grpc.health.v1.Health/Check with SERVING; and a scripted DNS
 * (the `resolve` the router's guarded lookups take) whose answer a test changes.
 */
import type { LookupAddress } from 'node:dns';
import { createSecureServer, createServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { ResolveName } from '../../src/transport/guarded-lookup.js';

export interface DialPeer {
  readonly host: string;
  readonly port: number;
  /** Connections accepted so far (TCP, before any TLS or HTTP/2 exchange). */
  connections(): number;
  /** Ends every open connection (the client has to reconnect). */
  dropConnections(): void;
  close(): Promise<void>;
}

const HEALTH_CHECK = '/grpc.health.v1.Health/Check';
/** A gRPC message holding HealthCheckResponse { status: SERVING }. */
const SERVING = Buffer.from([0, 0, 0, 0, 2, 0x08, 0x01]);

function answer(stream: ServerHttp2Stream, path: string | undefined): void {
  stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
  if (path === HEALTH_CHECK) {
    stream.resume();
    stream.on('end', () => stream.end(SERVING));
    return;
  }
  stream.on('data', (chunk: Buffer) => stream.write(chunk));
  stream.on('end', () => stream.end());
}

/** Listens on `host` (`port` 0: any free port); TLS with `tls` (ALPN h2), else h2c. */
export async function startDialPeer(host: string, port = 0, tls?: { cert: Buffer; key: Buffer }): Promise<DialPeer> {
  const server: Http2Server = tls ? createSecureServer({ cert: tls.cert, key: tls.key, allowHTTP1: false }) : createServer();
  let accepted = 0;
  const sessions = new Set<Http2Session>();
  server.on('connection', () => accepted++);
  server.on('session', (s: Http2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => answer(stream, headers[':path']));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    host,
    port: (server.address() as AddressInfo).port,
    connections: () => accepted,
    dropConnections() {
      for (const s of sessions) s.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A DNS whose answer for every name is `answer()` at the time of asking; counts the questions. */
export function scriptedDns(answer: () => readonly string[]): { resolve: ResolveName; asked(): number } {
  let asked = 0;
  const resolve: ResolveName = (_hostname, _options, callback) => {
    asked++;
    const list: LookupAddress[] = answer().map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    setImmediate(() => callback(null, list));
  };
  return { resolve, asked: () => asked };
}
