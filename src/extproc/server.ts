/**
 * The Envoy-facing gRPC server: ExternalProcessor/Process with raw (Buffer)
 * messages, and grpc.health.v1.Health, on one TCP or unix socket address.
 */
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { extProcRawService, healthService } from '../protocol/services.js';
import { ErrorCode, RouterError } from './errors.js';
import { HealthState } from './health.js';
import { createH2ExtProcServer, removeStaleSocket } from '../transport/extproc-server.js';
import { ExtProcStream, type EnvoyCall, type StreamDeps } from './stream.js';

export type ExtProcDeps = StreamDeps;

/** RST_STREAMs per connection the HTTP/2 server takes at once, and per second after that (see acceptEnvoyResets). */
const STREAM_RESET_BURST = 50_000;
const STREAM_RESET_RATE = 20_000;

export interface ExtProcServer {
  /** Binds "host:port" (port 0 picks one) or "unix:/path"; resolves to "host:port" with the real port, or the unix address. */
  bind(address: string): Promise<string>;
  /** gRPC health SERVING / NOT_SERVING (NOT_SERVING until called with true; a draining server stays NOT_SERVING). */
  setServing(serving: boolean): void;
  /** Stops accepting streams, waits for in-flight ones up to `timeoutMs`, then cuts what is left. */
  drain(timeoutMs: number): Promise<void>;
  activeStreams(): number;
  /** Stops at once: every open stream is cancelled (and with it its EPP call). */
  close(): Promise<void>;
}

export function createExtProcServer(deps: ExtProcDeps): ExtProcServer {
  if (deps.settings.transport === 'http2') return createH2ExtProcServer(deps);
  const max = deps.settings.maxMessageBytes;
  const server = new Server({
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
    // Channelz stays on here: with it off, grpc-js's forceShutdown no longer reaches open
    // sessions, and a drain that times out could not cut the streams that are left.
  });
  if (!acceptEnvoyResets(server)) {
    deps.logger.warn('grpc-js no longer exposes its HTTP/2 server options: Envoy connections are cut after 1,000 streams');
  }
  const health = new HealthState();
  const streams = new Set<ExtProcStream>();
  const onClosed = (s: ExtProcStream): void => {
    streams.delete(s);
  };
  let bound = false;
  let stopped: Promise<void> | undefined;
  /** Resolves a drain in progress. */
  let finishDrain: (() => void) | undefined;

  server.addService(extProcRawService, {
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => admitStream(call, deps, streams, onClosed),
  });
  server.addService(healthService, health.handlers);

  const forceStop = (): void => {
    server.forceShutdown();
    // forceShutdown resets every session, which cancels their calls; close any stream left.
    for (const s of [...streams]) s.close('client_cancelled');
    finishDrain?.();
  };

  return {
    async bind(address) {
      if (address.startsWith('unix:')) await removeStaleSocket(address);
      const port = await new Promise<number>((resolve, reject) => {
        server.bindAsync(address, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
      });
      bound = true;
      return address.startsWith('unix:') ? address : address.replace(/:\d+$/, `:${port}`);
    },

    setServing(serving) {
      health.setServing(serving);
    },

    drain(timeoutMs) {
      stopped ??= new Promise<void>((resolve) => {
        health.drain();
        if (!bound) {
          server.forceShutdown();
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          deps.logger.warn({ streams: streams.size, timeoutMs }, 'drain timeout: cancelling the remaining ext_proc streams');
          forceStop();
        }, timeoutMs);
        finishDrain = () => {
          finishDrain = undefined;
          clearTimeout(timer);
          resolve();
        };
        // GOAWAY to every connection; the callback runs once they have all closed.
        server.tryShutdown(() => finishDrain?.());
      });
      return stopped;
    },

    activeStreams() {
      return streams.size;
    },

    close() {
      health.drain();
      forceStop();
      stopped ??= Promise.resolve();
      return stopped;
    },
  };
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

const shed = (): void => {};

/** A new stream from Envoy: held in `streams`, or answered with a 503 when extProc.maxStreams are open (either transport). */
export function admitStream(call: EnvoyCall, deps: StreamDeps, streams: Set<ExtProcStream>, onClosed: (s: ExtProcStream) => void): void {
  const bounds = deps.settings;
  if (streams.size >= bounds.maxStreams) {
    // Answered (immediate 503) and counted like any stream, but never held.
    new ExtProcStream(call, deps, shed).fail(
      new RouterError(ErrorCode.OverCapacity, `the router is serving extProc.maxStreams (${bounds.maxStreams}) streams`),
    );
    return;
  }
  streams.add(new ExtProcStream(call, deps, onClosed, bounds.firstMessageTimeoutMs));
}
