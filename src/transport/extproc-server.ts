/**
 * The ext_proc server (the ExtProcServer surface of src/extproc/server.ts) on
 * node:http2 and our own gRPC framing: `extProc.transport: http2`.
 */
import { lstat, unlink } from 'node:fs/promises';
import { admitStream, type ExtProcServer } from '../extproc/server.js';
import { HealthState } from '../extproc/health.js';
import type { ExtProcStream, StreamDeps } from '../extproc/stream.js';
import { createH2GrpcServer } from './h2-server.js';

/** Envoy resets every finished stream; these stay far above what one connection can serve. */
const STREAM_RESET_BURST = 50_000;
const STREAM_RESET_RATE = 20_000;

export function createH2ExtProcServer(deps: StreamDeps): ExtProcServer {
  const health = new HealthState();
  const streams = new Set<ExtProcStream>();
  const onClosed = (s: ExtProcStream): void => {
    streams.delete(s);
  };
  const server = createH2GrpcServer({
    maxMessageBytes: deps.settings.maxMessageBytes,
    streamResetBurst: STREAM_RESET_BURST,
    streamResetRate: STREAM_RESET_RATE,
    process: (call) => admitStream(call, deps, streams, onClosed),
    healthStatus: (service) => health.status(service),
    watch: (call) => health.handlers.Watch!(call as never, undefined as never),
  });
  let bound = false;
  let stopped: Promise<void> | undefined;

  const forceStop = (): void => {
    server.destroy();
    for (const s of [...streams]) s.close('client_cancelled');
  };

  return {
    async bind(address) {
      if (address.startsWith('unix:')) await removeStaleSocket(address);
      const bound_ = await server.listen(address);
      bound = true;
      return bound_;
    },
    setServing(serving) {
      health.setServing(serving);
    },
    drain(timeoutMs) {
      stopped ??= new Promise<void>((resolve) => {
        health.drain();
        if (!bound) {
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          deps.logger.warn({ streams: streams.size, timeoutMs }, 'drain timeout: cancelling the remaining ext_proc streams');
          forceStop();
          resolve();
        }, timeoutMs);
        void server.shutdown().then(() => {
          clearTimeout(timer);
          resolve();
        });
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
export async function removeStaleSocket(address: string): Promise<void> {
  const path = address.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
  try {
    if ((await lstat(path)).isSocket()) await unlink(path);
  } catch {
    // absent: nothing to do
  }
}
