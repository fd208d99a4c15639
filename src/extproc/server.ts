/**
 * The Envoy-facing gRPC server: ExternalProcessor/Process with raw (Buffer)
 * messages, and grpc.health.v1.Health, on one TCP or unix socket address.
 */
import { Server, type ServerDuplexStream } from '@grpc/grpc-js';
import { extProcRawService, healthService } from '../protocol/services.js';
import { ServedCertificate, type ServerTls } from '../transport/server-tls.js';
import { guardGrpcJsServer, grpcJsCredentials } from './grpc-js-transport.js';
import { createH2ExtProcServer } from './h2-extproc-server.js';
import { peerDefence, serveExtProc, STREAM_RESET_BURST, STREAM_RESET_RATE, type ExtProcServer } from './server-lifecycle.js';
import type { StreamDeps } from './stream.js';

export type ExtProcDeps = StreamDeps;
export type { ExtProcServer } from './server-lifecycle.js';
export type { ServerTls } from '../transport/server-tls.js';

export interface ExtProcServerOptions {
  /** TLS on this server (certificate files re-read on change, or self-signed); absent or plaintext: no TLS. */
  readonly tls?: ServerTls;
}

/**
 * The ext_proc server on the configured transport. With `tls` (not plaintext) the certificate
 * files are read now: throws an Error naming the file when they are not a usable pair.
 */
export function createExtProcServer(deps: ExtProcDeps, options: ExtProcServerOptions = {}): ExtProcServer {
  const cert = options.tls === undefined || options.tls.kind === 'plaintext' ? undefined : ServedCertificate.start(options.tls, deps.logger);
  if (deps.settings.transport === 'http2') return createH2ExtProcServer(deps, cert);
  const peer = peerDefence(deps);
  return serveExtProc(deps, (admit, health) => {
    const max = deps.settings.maxMessageBytes;
    const server = new Server({
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      'grpc.max_concurrent_streams': deps.settings.peerLimits.maxStreamsPerConnection,
      // Channelz stays on here: with it off, grpc-js's forceShutdown no longer reaches open
      // sessions, and a drain that times out could not cut the streams that are left.
    });
    if (!acceptEnvoyResets(server)) {
      deps.logger.warn('grpc-js no longer exposes its HTTP/2 server options: Envoy connections are cut after 1,000 streams');
    }
    server.addService(extProcRawService, { Process: (call: ServerDuplexStream<Buffer, Buffer>) => admit(call) });
    server.addService(healthService, health.handlers);
    return {
      async listen(address) {
        const port = await new Promise<number>((resolve, reject) => {
          server.bindAsync(address, grpcJsCredentials(cert), (err, p) => (err ? reject(err) : resolve(p)));
        });
        if (!guardGrpcJsServer(server, peer.limits, peer.onCut)) {
          deps.logger.warn('grpc-js no longer exposes its HTTP/2 servers: the hostile-peer defence (extProc.peerLimits) is off on this server');
        }
        return address.startsWith('unix:') ? address : address.replace(/:\d+$/, `:${port}`);
      },
      shutdown: () =>
        new Promise<void>((resolve) =>
          server.tryShutdown(() => {
            cert?.close();
            resolve();
          }),
        ),
      destroy: () => {
        cert?.close();
        server.forceShutdown();
      },
    };
  });
}

/**
 * Envoy ends every ext_proc stream with an RST_STREAM, so on one connection the resets
 * arrive at Envoy's request rate. nghttp2's rapid-reset guard (a burst of 1,000 resets per
 * connection, refilled at 33/s) would answer GOAWAY(INTERNAL_ERROR) as soon as Envoy sends
 * more than that, and every stream in flight on the connection would fail: the requests an
 * EPP failure is failing over, too. Node 22+ lets a server raise the limit (streamResetBurst,
 * streamResetRate); grpc-js does not pass them through, so they go on the options it creates
 * its HTTP/2 servers with. The limit stays far above what the router can serve on one
 * connection, so a client that resets faster than that is still cut off.
 * Returns false when grpc-js has no such options (a grpc-js change: tests catch it).
 */
function acceptEnvoyResets(server: Server): boolean {
  const options = (server as unknown as { commonServerOptions?: Record<string, unknown> }).commonServerOptions;
  if (typeof options !== 'object' || options === null) return false;
  options.streamResetBurst = STREAM_RESET_BURST;
  options.streamResetRate = STREAM_RESET_RATE;
  return true;
}
