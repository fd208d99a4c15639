/**
 * The Envoy-facing gRPC server: ExternalProcessor/Process with raw (Buffer)
 * messages, and grpc.health.v1.Health, on one TCP or unix socket address.
 */
import { lstat, unlink } from 'node:fs/promises';
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { extProcRawService, healthService } from '../protocol/services.js';
import { streamBounds } from './deps.js';
import { ErrorCode, RouterError } from './errors.js';
import { HealthState } from './health.js';
import { ExtProcStream, type StreamDeps } from './stream.js';

export type ExtProcDeps = StreamDeps;

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
  const max = deps.settings.maxMessageBytes;
  const server = new Server({
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
    // Channelz stays on here: with it off, grpc-js's forceShutdown no longer reaches open
    // sessions, and a drain that times out could not cut the streams that are left.
  });
  const health = new HealthState();
  const streams = new Set<ExtProcStream>();
  const onClosed = (s: ExtProcStream): void => {
    streams.delete(s);
  };
  let bound = false;
  let stopped: Promise<void> | undefined;
  /** Resolves a drain in progress. */
  let finishDrain: (() => void) | undefined;

  const bounds = streamBounds(deps.settings);
  const shed = (): void => {};
  server.addService(extProcRawService, {
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
      if (streams.size >= bounds.maxStreams) {
        // Answered (immediate 503) and counted like any stream, but never held.
        new ExtProcStream(call, deps, shed).fail(
          new RouterError(ErrorCode.OverCapacity, `the router is serving extProc.maxStreams (${bounds.maxStreams}) streams`),
        );
        return;
      }
      streams.add(new ExtProcStream(call, deps, onClosed, bounds.firstMessageTimeoutMs));
    },
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

/** A unix socket file left by a previous process would make the bind fail: remove it (sockets only). */
async function removeStaleSocket(address: string): Promise<void> {
  const path = address.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
  try {
    if ((await lstat(path)).isSocket()) await unlink(path);
  } catch {
    // absent: nothing to do
  }
}
