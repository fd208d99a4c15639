/**
 * The floor beneath the floor: an ext_proc hop on Node's HTTP/2 alone, no
 * grpc-js. Each incoming stream is relayed to an upstream (`--target
 * host:port[,...]`, one shared HTTP/2 session each, chosen per stream in the
 * shares of `--weights`: the router's upstream set, see bench/lib/upstreams.ts):
 * request headers copied, DATA
 * piped both ways untouched (gRPC length prefixes included, no message
 * framing), response headers and trailers passed back. Reset after a
 * half-close is not passed on (as the floor proxy and the router do).
 *
 * It is a measuring stick, not a design: it shows how much of a Node hop's
 * cost is grpc-js and how much is Node's HTTP/2 itself.
 */
import http2 from 'node:http2';
import { serveRpc } from '../lib/rpc.js';
import { upstreamFlags, weightedRotation } from '../lib/upstreams.js';

const RELEASE_GRACE_MS = 5000;
const { HTTP2_HEADER_STATUS, HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_SCHEME, HTTP2_HEADER_AUTHORITY } = http2.constants;

const { targets, weights } = upstreamFlags(process.argv);
const sessions: (http2.ClientHttp2Session | undefined)[] = targets.map(() => undefined);
const nextUpstream = weightedRotation(weights);

/** The shared session to upstream `i` (a new one after it closed or received GOAWAY). */
function upstream(i: number): http2.ClientHttp2Session {
  const current = sessions[i];
  if (current && !current.closed && !current.destroyed) return current;
  const s = http2.connect(`http://${targets[i]}`);
  s.on('error', () => undefined);
  s.on('close', () => {
    if (sessions[i] === s) sessions[i] = undefined;
  });
  s.on('goaway', () => {
    if (sessions[i] === s) sessions[i] = undefined;
  });
  sessions[i] = s;
  return s;
}

function relay(down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  const i = nextUpstream();
  const out: http2.OutgoingHttpHeaders = {
    [HTTP2_HEADER_METHOD]: 'POST',
    [HTTP2_HEADER_PATH]: headers[HTTP2_HEADER_PATH],
    [HTTP2_HEADER_SCHEME]: 'http',
    [HTTP2_HEADER_AUTHORITY]: targets[i],
    'content-type': headers['content-type'] ?? 'application/grpc',
    te: 'trailers',
  };
  const up = upstream(i).request(out, { waitForTrailers: false });
  let halfClosed = false;
  let cancelled = false;
  let grace: NodeJS.Timeout | undefined;
  down.pipe(up);
  down.on('end', () => {
    halfClosed = true;
  });
  up.on('response', (h) => {
    if (cancelled || down.destroyed) return;
    const status = h[HTTP2_HEADER_STATUS];
    const pass: http2.OutgoingHttpHeaders = { [HTTP2_HEADER_STATUS]: status, 'content-type': h['content-type'] ?? 'application/grpc' };
    // A trailers-only answer arrives as the response headers with the stream ended.
    if (h['grpc-status'] !== undefined && up.readableEnded) {
      down.respond({ ...pass, 'grpc-status': h['grpc-status'], 'grpc-message': h['grpc-message'] ?? '' }, { endStream: true });
      return;
    }
    down.respond(pass, { waitForTrailers: true });
  });
  up.on('data', (chunk: Buffer) => {
    if (cancelled || down.destroyed) return;
    if (!down.write(chunk)) {
      up.pause();
      down.once('drain', () => up.resume());
    }
  });
  let trailers: http2.OutgoingHttpHeaders = {};
  up.on('trailers', (t) => {
    trailers = { 'grpc-status': t['grpc-status'] ?? '0', 'grpc-message': t['grpc-message'] ?? '' };
  });
  down.on('wantTrailers', () => down.sendTrailers(trailers));
  up.on('end', () => {
    if (grace) clearTimeout(grace);
    if (!cancelled && !down.destroyed && down.headersSent) down.end();
  });
  up.on('error', () => {
    if (grace) clearTimeout(grace);
    if (!down.destroyed) down.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
  });
  down.on('close', () => {
    if (up.closed) return;
    cancelled = true;
    if (halfClosed) {
      grace = setTimeout(() => up.close(http2.constants.NGHTTP2_CANCEL), RELEASE_GRACE_MS);
      up.resume();
      return;
    }
    up.close(http2.constants.NGHTTP2_CANCEL);
  });
  down.on('error', () => undefined);
}

const server = http2.createServer({ maxSessionMemory: 64 });
server.on('stream', relay);
server.listen(0, '127.0.0.1', () => {
  const addr = server.address() as { port: number };
  serveRpc({}, { address: `127.0.0.1:${addr.port}` });
});
process.on('SIGTERM', () => {
  server.close();
  for (const s of sessions) s?.destroy();
  process.exit(0);
});
