/**
 * The floor beneath the floor: an ext_proc hop on Node's HTTP/2 alone, no
 * grpc-js. Each incoming stream is relayed to one upstream (`--target
 * host:port`) over one shared HTTP/2 session: request headers copied, DATA
 * piped both ways untouched (gRPC length prefixes included, no message
 * framing), response headers and trailers passed back. Reset after a
 * half-close is not passed on (as the floor proxy and the router do).
 *
 * It is a measuring stick, not a design: it shows how much of a Node hop's
 * cost is grpc-js and how much is Node's HTTP/2 itself.
 */
import http2 from 'node:http2';
import { serveRpc } from '../lib/rpc.js';

const RELEASE_GRACE_MS = 5000;
const { HTTP2_HEADER_STATUS, HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_SCHEME, HTTP2_HEADER_AUTHORITY } = http2.constants;

function flag(name: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : undefined;
  if (v === undefined) throw new Error(`h2-floor-proxy: ${name} is required`);
  return v;
}

const target = flag('--target');
let session: http2.ClientHttp2Session | undefined;
function upstream(): http2.ClientHttp2Session {
  if (!session || session.closed || session.destroyed) {
    const s = http2.connect(`http://${target}`);
    s.on('error', () => undefined);
    s.on('close', () => {
      if (session === s) session = undefined;
    });
    s.on('goaway', () => {
      if (session === s) session = undefined;
    });
    session = s;
  }
  return session;
}

function relay(down: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  const out: http2.OutgoingHttpHeaders = {
    [HTTP2_HEADER_METHOD]: 'POST',
    [HTTP2_HEADER_PATH]: headers[HTTP2_HEADER_PATH],
    [HTTP2_HEADER_SCHEME]: 'http',
    [HTTP2_HEADER_AUTHORITY]: target,
    'content-type': headers['content-type'] ?? 'application/grpc',
    te: 'trailers',
  };
  const up = upstream().request(out, { waitForTrailers: false });
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
  session?.destroy();
  process.exit(0);
});
