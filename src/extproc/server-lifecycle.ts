/**
 * What both ext_proc transports (grpc-js and node:http2) share: the open
 * streams and their admission, gRPC health, bind, drain and close. A
 * transport supplies only its listener.
 */
import { lstat, unlink } from 'node:fs/promises';
import type { OnPeerCut } from '../transport/h2-peer-guard.js';
import type { PeerLimits } from '../transport/peer-guard.js';
import { WARN_INTERVAL_MS } from './answer-report.js';
import { ErrorCode, RouterError } from './errors.js';
import { HealthState } from './health.js';
import { ExtProcStream, type EnvoyCall, type StreamDeps } from './stream.js';

/** RST_STREAMs per connection an HTTP/2 server takes at once, and per second after that: Envoy resets every finished stream. */
export const STREAM_RESET_BURST = 50_000;
export const STREAM_RESET_RATE = 20_000;

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

/** A transport's listener. */
export interface ExtProcListener {
  /** Resolves to the bound address (the real port for port 0). */
  listen(address: string): Promise<string>;
  /** GOAWAY to every connection; resolves once they have all closed. */
  shutdown(): Promise<void>;
  /** Cuts every connection at once (which cancels their streams). */
  destroy(): void;
}

/** `listener` is built with the admission of new streams and the health state it serves. */
export function serveExtProc(deps: StreamDeps, listener: (admit: (call: EnvoyCall) => void, health: HealthState) => ExtProcListener): ExtProcServer {
  const health = new HealthState();
  const streams = new Set<ExtProcStream>();
  const onClosed = (s: ExtProcStream): void => {
    streams.delete(s);
  };
  const transport = listener((call) => admitStream(call, deps, streams, onClosed), health);
  let bound = false;
  let stopped: Promise<void> | undefined;

  const forceStop = (): void => {
    transport.destroy();
    // Destroying the connections cancels their calls; close any stream left.
    for (const s of [...streams]) s.close('client_cancelled');
  };

  return {
    async bind(address) {
      if (address.startsWith('unix:')) await removeStaleSocket(address);
      const at = await transport.listen(address);
      bound = true;
      return at;
    },
    setServing(serving) {
      health.setServing(serving);
    },
    drain(timeoutMs) {
      stopped ??= new Promise<void>((resolve) => {
        health.drain();
        if (!bound) {
          transport.destroy();
          resolve();
          return;
        }
        const timer = setTimeout(() => {
          deps.logger.warn({ streams: streams.size, timeoutMs }, 'drain timeout: cancelling the remaining ext_proc streams');
          forceStop();
          resolve();
        }, timeoutMs);
        void transport.shutdown().then(() => {
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

/** The hostile-peer defence of a server of `deps`: its limits, and the report of a cut (metric, and a warning at most every WARN_INTERVAL_MS). */
export function peerDefence(deps: StreamDeps, now: () => number = Date.now): { readonly limits: PeerLimits; readonly onCut: OnPeerCut } {
  let warnedAt = -Infinity;
  let suppressed = 0;
  return {
    limits: deps.settings.peerLimits,
    onCut(reason, remote) {
      deps.observer.peerCut?.(reason);
      const t = now();
      if (t - warnedAt < WARN_INTERVAL_MS) {
        suppressed++;
        return;
      }
      warnedAt = t;
      deps.logger.warn(
        { reason, remote, limits: deps.settings.peerLimits, suppressedSinceLastWarning: suppressed },
        'cut an ext_proc connection (GOAWAY ENHANCE_YOUR_CALM): the peer went past extProc.peerLimits',
      );
      suppressed = 0;
    },
  };
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

/** A unix socket file left by a previous process would make the bind fail: remove it (sockets only). */
async function removeStaleSocket(address: string): Promise<void> {
  const path = address.slice('unix:'.length).replace(/^\/\/(?=\/)/, '');
  try {
    if ((await lstat(path)).isSocket()) await unlink(path);
  } catch {
    // absent: nothing to do
  }
}
