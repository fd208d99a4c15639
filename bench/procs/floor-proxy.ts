/**
 * The physical floor: the cheapest grpc-js ext_proc hop there is. A server
 * that relays each stream, raw Buffers both ways, to one upstream (`--target
 * host:port`) over one shared channel, with backpressure, half-close and
 * cancel propagated, and nothing else: no routing, no peeking, no metrics.
 */
import { Client, Metadata, Server, ServerCredentials, credentials, status, type ServerDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { extProcRawService } from '../../src/protocol/services.js';
import { serveRpc } from '../lib/rpc.js';

const MAX = 16 * 1024 * 1024;
const identity = (b: Buffer): Buffer => b;

function flag(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`floor-proxy: ${name} is required`);
  return v;
}

const upstream = new Client(flag('--target'), credentials.createInsecure(), {
  'grpc.max_receive_message_length': MAX,
  'grpc.max_send_message_length': MAX,
});

function relay(down: ServerDuplexStream<Buffer, Buffer>): void {
  const up = upstream.makeBidiStreamRequest<Buffer, Buffer>(EXT_PROC_PROCESS_PATH, identity, identity, new Metadata());
  let done = false;
  down.on('data', (msg: Buffer) => {
    if (!up.write(msg)) {
      down.pause();
      up.once('drain', () => down.resume());
    }
  });
  down.on('end', () => up.end());
  up.on('data', (msg: Buffer) => {
    if (!down.write(msg)) {
      up.pause();
      down.once('drain', () => up.resume());
    }
  });
  up.on('end', () => {
    done = true;
    down.end();
  });
  up.on('error', (err: ServiceError) => {
    if (done) return;
    done = true;
    if (err.code !== status.CANCELLED) down.emit('error', err);
  });
  down.on('cancelled', () => {
    done = true;
    up.cancel();
  });
  down.on('error', () => {
    done = true;
    up.cancel();
  });
}

async function main(): Promise<void> {
  const server = new Server({ 'grpc.max_receive_message_length': MAX, 'grpc.max_send_message_length': MAX });
  server.addService(extProcRawService, { Process: relay });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  serveRpc({}, { address: `127.0.0.1:${port}` });
  process.on('SIGTERM', () => {
    server.forceShutdown();
    upstream.close();
    process.exit(0);
  });
}

void main();
