/**
 * The physical floor: the cheapest grpc-js ext_proc hop there is. A server
 * that relays each stream, raw Buffers both ways, to an upstream (`--target
 * host:port[,...]`, one shared channel each, chosen per stream in the shares of
 * `--weights`: the router's upstream set, see bench/lib/upstreams.ts), with
 * backpressure, half-close and cancel propagated, and nothing else: no
 * routing, no peeking, no metrics.
 *
 * A cancel that arrives after the client half-closed (Envoy's RST_STREAM right
 * after its half-close at the end of every exchange) is not passed on: the
 * upstream call, already half-closed too, is left to end on its own (cancelled
 * after RELEASE_GRACE_MS if it does not), as the router does with its EPP calls
 * (EppRelay.dispose / EppAttempt.release). Passing every reset on would push
 * the EPP's Node HTTP/2 server over its rapid-reset limit (1,000 resets per
 * connection, then 33/s): it would GOAWAY this proxy's one upstream connection
 * and fail every stream on it, so the floor's error count would measure Node's
 * limiter rather than the hop.
 */
import { Client, Metadata, Server, ServerCredentials, credentials, status, type ServerDuplexStream, type ServiceError } from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { extProcRawService } from '../../src/protocol/services.js';
import { serveRpc } from '../lib/rpc.js';
import { upstreamFlags, weightedRotation } from '../lib/upstreams.js';

const MAX = 16 * 1024 * 1024;
/** The router's EppAttempt release grace (DEFAULT_RELEASE_GRACE_MS). */
const RELEASE_GRACE_MS = 5000;
const identity = (b: Buffer): Buffer => b;

const { targets, weights } = upstreamFlags(process.argv);
const upstreams = targets.map(
  (target) =>
    new Client(target, credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX,
      'grpc.max_send_message_length': MAX,
    }),
);
const nextUpstream = weightedRotation(weights);

function relay(down: ServerDuplexStream<Buffer, Buffer>): void {
  const upstream = upstreams[nextUpstream()]!;
  const up = upstream.makeBidiStreamRequest<Buffer, Buffer>(EXT_PROC_PROCESS_PATH, identity, identity, new Metadata());
  let done = false;
  /** The client half-closed (and so did we, upstream). */
  let halfClosed = false;
  /** The client reset the stream: nothing more is written to it. */
  let cancelled = false;
  let grace: NodeJS.Timeout | undefined;
  down.on('data', (msg: Buffer) => {
    if (!up.write(msg)) {
      down.pause();
      up.once('drain', () => down.resume());
    }
  });
  down.on('end', () => {
    halfClosed = true;
    up.end();
  });
  up.on('data', (msg: Buffer) => {
    if (cancelled) return;
    if (!down.write(msg)) {
      up.pause();
      down.once('drain', () => up.resume());
    }
  });
  up.on('end', () => {
    done = true;
    if (grace) clearTimeout(grace);
    if (!cancelled) down.end();
  });
  up.on('error', (err: ServiceError) => {
    if (grace) clearTimeout(grace);
    if (done) return;
    done = true;
    if (err.code !== status.CANCELLED && !cancelled) down.emit('error', err);
  });
  down.on('cancelled', () => {
    cancelled = true;
    if (done) return;
    if (halfClosed) {
      // Finished exchange, both sides half-closed: let the upstream end it (read to its end).
      grace = setTimeout(() => up.cancel(), RELEASE_GRACE_MS);
      up.resume();
      return;
    }
    done = true;
    up.cancel();
  });
  down.on('error', () => {
    cancelled = true;
    if (done) return;
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
    for (const u of upstreams) u.close();
    process.exit(0);
  });
}

void main();
