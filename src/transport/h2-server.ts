/**
 * The router's ext_proc server on node:http2 (h2c, TCP or unix socket): the
 * ExternalProcessor/Process data path on our own gRPC framing, and
 * grpc.health.v1.Health (Check, Watch) on the same port, since Envoy probes
 * the router there. Unknown methods get UNIMPLEMENTED.
 */
import { EventEmitter } from 'node:events';
import {
  constants as h2,
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2';
import { status as Status } from '@grpc/grpc-js';
import { EXT_PROC_PROCESS_PATH, HEALTH_SERVICE } from '../protocol/constants.js';
import { healthService, type HealthCheckRequest } from '../protocol/services.js';
import { GRPC_CONTENT_TYPE, parseGrpcTimeout } from './grpc-status.js';
import { guardHttp2Server, wasCut, type OnPeerCut } from './h2-peer-guard.js';
import type { PeerLimits } from './peer-guard.js';
import { H2ServerCall } from './server-call.js';
import type { ServedCertificate } from './server-tls.js';

/** What the Envoy-facing server needs from its host (the ext_proc server). */
export interface H2ServerHandlers {
  readonly maxMessageBytes: number;
  /** RST_STREAMs per connection taken at once, and per second after that. */
  readonly streamResetBurst: number;
  readonly streamResetRate: number;
  /** Advertised SETTINGS_MAX_CONCURRENT_STREAMS (nghttp2 ends a connection that opens more with GOAWAY PROTOCOL_ERROR); absent: unbounded. */
  readonly maxConcurrentStreams?: number;
  /** The hostile-peer defence (peer-guard.ts); absent: none. */
  readonly peerLimits?: PeerLimits;
  /** A connection was cut by the defence (after its GOAWAY ENHANCE_YOUR_CALM). */
  readonly onPeerCut?: OnPeerCut;
  /** Serve TLS (ALPN h2) with this certificate, following its changes; absent: h2c. */
  readonly tls?: ServedCertificate;
  /** A new ExternalProcessor/Process call. */
  process(call: H2ServerCall): void;
  /** grpc.health.v1 status of `service`, or undefined for an unknown service. */
  healthStatus(service: string): number | undefined;
  /** Registers a Watch call (the same shape grpc-js gives HealthState). */
  watch(call: HealthWatchCall): void;
}

const CHECK_PATH = `/${HEALTH_SERVICE}/Check`;
const WATCH_PATH = `/${HEALTH_SERVICE}/Watch`;
const check = healthService.Check!;
const watch = healthService.Watch!;

export interface H2GrpcServer {
  listen(address: string): Promise<string>;
  /** GOAWAY to every connection, then resolves once they have all closed. */
  shutdown(): Promise<void>;
  /** Destroys every connection at once. */
  destroy(): void;
}

export function createH2GrpcServer(handlers: H2ServerHandlers): H2GrpcServer {
  const sessions = new Set<Http2Session>();
  const options = {
    maxSessionMemory: 64,
    // Envoy resets every finished stream: see the grpc-js server's limits (src/extproc/server.ts).
    ...({ streamResetBurst: handlers.streamResetBurst, streamResetRate: handlers.streamResetRate } as object),
    ...(handlers.maxConcurrentStreams === undefined ? {} : { settings: { maxConcurrentStreams: handlers.maxConcurrentStreams } }),
  };
  const tls = handlers.tls;
  const server: Http2Server | Http2SecureServer = tls
    ? createSecureServer({ ...options, ...tls.current(), ALPNProtocols: ['h2'], allowHTTP1: false, minVersion: 'TLSv1.2' })
    : createServer(options);
  if (tls) {
    const secure = server as Http2SecureServer;
    // New connections get the new certificate; open ones keep the one they shook hands with.
    tls.onChange((pair) => secure.setSecureContext({ ...pair, minVersion: 'TLSv1.2' }));
  }
  // Before the server's own 'stream' listener: a cut session's streams are not served.
  if (handlers.peerLimits) guardHttp2Server(server, handlers.peerLimits, handlers.onPeerCut ?? (() => {}));
  server.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {
      // The session closes; its streams report themselves cancelled.
    });
  });
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    // Reset in the same read it was opened in, or its connection cut: nothing to serve. Its error (the
    // cut session's destroy refuses it) is expected: unheard, it would be an uncaught exception.
    if (stream.closed || stream.destroyed || stream.session?.destroyed || wasCut(stream.session)) {
      stream.on('error', ignoreStreamError);
      return;
    }
    onStream(stream, headers, handlers);
  });
  let closed: Promise<void> | undefined;

  return {
    listen(address) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        const done = (): void => {
          server.off('error', reject);
          const a = server.address();
          resolve(typeof a === 'object' && a !== null ? address.replace(/:\d+$/, `:${a.port}`) : address);
        };
        if (address.startsWith('unix:')) {
          server.listen(address.slice('unix:'.length).replace(/^\/\/(?=\/)/, ''), done);
        } else {
          const i = address.lastIndexOf(':');
          server.listen(Number(address.slice(i + 1)), address.slice(0, i).replace(/^\[|\]$/g, ''), done);
        }
      });
    },
    shutdown() {
      closed ??= new Promise<void>((resolve) => {
        if (!server.listening) {
          resolve();
          return;
        }
        server.close(() => {
          tls?.close();
          resolve();
        });
        for (const s of sessions) s.close();
      });
      return closed;
    },
    destroy() {
      if (server.listening) server.close();
      for (const s of [...sessions]) s.destroy();
      tls?.close();
    },
  };
}

/** Reset by the peer or the session going away: the call (if any) reports it. */
function ignoreStreamError(): void {}

function onStream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, handlers: H2ServerHandlers): void {
  stream.on('error', ignoreStreamError);
  const path = headers[h2.HTTP2_HEADER_PATH];
  const contentType = headers[h2.HTTP2_HEADER_CONTENT_TYPE];
  if (headers[h2.HTTP2_HEADER_METHOD] !== 'POST' || typeof contentType !== 'string' || !contentType.startsWith(GRPC_CONTENT_TYPE)) {
    stream.respond({ [h2.HTTP2_HEADER_STATUS]: 415 }, { endStream: true });
    return;
  }
  let timeoutMs: number | undefined;
  try {
    timeoutMs = parseGrpcTimeout(headers['grpc-timeout'] as string | undefined);
  } catch (err) {
    new H2ServerCall(stream, headers, handlers.maxMessageBytes, undefined).sendStatus(Status.INTERNAL, (err as Error).message);
    return;
  }
  const call = new H2ServerCall(stream, headers, handlers.maxMessageBytes, timeoutMs);
  switch (path) {
    case EXT_PROC_PROCESS_PATH:
      handlers.process(call);
      return;
    case CHECK_PATH:
    case WATCH_PATH:
      onHealth(call, path === WATCH_PATH, handlers);
      return;
    default:
      call.sendStatus(Status.UNIMPLEMENTED, `unknown method ${String(path)}`);
  }
}

/** A health Watch call in the shape HealthState keeps: request, write(response), end(), events. */
export interface HealthWatchCall extends EventEmitter {
  readonly request: HealthCheckRequest;
  write(response: object): boolean;
  end(): void;
}

function onHealth(call: H2ServerCall, isWatch: boolean, handlers: H2ServerHandlers): void {
  let request: HealthCheckRequest | undefined;
  call.on('data', (msg: Buffer) => {
    if (request !== undefined) {
      call.sendStatus(Status.INTERNAL, 'more than one request message for a unary or server-streaming method');
      return;
    }
    try {
      request = check.requestDeserialize(msg) as HealthCheckRequest;
    } catch {
      call.sendStatus(Status.INTERNAL, 'malformed HealthCheckRequest');
      return;
    }
    if (isWatch) startWatch(call, request, handlers);
  });
  call.on('end', () => {
    if (isWatch) return;
    if (request === undefined) {
      call.sendStatus(Status.INTERNAL, 'no request message');
      return;
    }
    const status = handlers.healthStatus(request.service ?? '');
    if (status === undefined) {
      call.sendStatus(Status.NOT_FOUND, `unknown service "${request.service}"`);
      return;
    }
    call.write(check.responseSerialize({ status }));
    call.end();
  });
}

function startWatch(call: H2ServerCall, request: HealthCheckRequest, handlers: H2ServerHandlers): void {
  const w = Object.assign(new EventEmitter(), {
    request,
    write: (response: object) => call.write(watch.responseSerialize(response)),
    end: () => {
      call.end();
      w.emit('finish');
    },
  });
  call.on('cancelled', () => w.emit('cancelled'));
  handlers.watch(w);
}
