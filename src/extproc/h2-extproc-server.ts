/**
 * The ext_proc server on node:http2 and our own gRPC framing
 * (`extProc.transport: http2`); streams, health and drain are the shared
 * lifecycle of server-lifecycle.ts.
 */
import { createH2GrpcServer } from '../transport/h2-server.js';
import type { ServedCertificate } from '../transport/server-tls.js';
import { peerDefence, serveExtProc, STREAM_RESET_BURST, STREAM_RESET_RATE, type ExtProcServer } from './server-lifecycle.js';
import type { StreamDeps } from './stream.js';

/** `tls`: serve TLS with this certificate (following its changes); absent: h2c. */
export function createH2ExtProcServer(deps: StreamDeps, tls?: ServedCertificate): ExtProcServer {
  const peer = peerDefence(deps);
  return serveExtProc(deps, (admit, health) =>
    createH2GrpcServer({
      maxMessageBytes: deps.settings.maxMessageBytes,
      streamResetBurst: STREAM_RESET_BURST,
      streamResetRate: STREAM_RESET_RATE,
      maxConcurrentStreams: deps.settings.peerLimits.maxStreamsPerConnection,
      peerLimits: peer.limits,
      onPeerCut: peer.onCut,
      ...(tls ? { tls } : {}),
      process: admit,
      healthStatus: (service) => health.status(service),
      watch: (call) => health.handlers.Watch!(call as never, undefined as never),
    }),
  );
}
