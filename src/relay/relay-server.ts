/**
 * The relay verifier: the ext_proc server (node:http2, our gRPC framing) the
 * relay listener of the router pod's Envoy calls on `listen.relay` for every
 * request a gateway sends to the relay. It verifies the request's relay token
 * (keys from endpointPicker.relay.keyFile, re-read on change), checks the
 * token's member and target against the current snapshot and that member's
 * eppAnswers.destinations, and tells the Envoy where to forward it, or to
 * answer 403. gRPC health on the same port, like the ext_proc server.
 */
import { status as Status } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { MemberAnswerRules } from '../config/answer-rules.js';
import type { RelayConfig } from '../config/relay-schema.js';
import type { CredentialFiles } from '../credentials/credential-files.js';
import { readRelayKeys, relayKeyFileProblem } from '../credentials/relay-keys.js';
import { RelayVerifier } from '../credentials/relay-token.js';
import { HealthState } from '../extproc/health.js';
import { STREAM_RESET_BURST, STREAM_RESET_RATE, type ExtProcServer } from '../extproc/server-lifecycle.js';
import type { RoutingSnapshot } from '../snapshot/types.js';
import { createH2GrpcServer } from '../transport/h2-server.js';
import { RelayReport } from './relay-report.js';
import { RelayStream } from './relay-stream.js';

export interface RelayServerDeps {
  /** endpointPicker.relay, with the key file the tokens are verified with. */
  readonly relay: RelayConfig & { readonly keyFile: string };
  readonly files: CredentialFiles;
  readonly snapshot: () => RoutingSnapshot | undefined;
  readonly rules: MemberAnswerRules;
  readonly registry: Registry;
  readonly logger: Pick<Logger, 'warn'>;
  /** extProc's bounds: message size, open streams (more are refused: Envoy answers 500), first-message deadline. */
  readonly bounds: { readonly maxMessageBytes: number; readonly maxStreams: number; readonly firstMessageTimeoutMs: number };
  /** Injectable clock for tests. */
  readonly now?: () => number;
}

/** The same surface as the ext_proc server: bind, health, drain, close. */
export type RelayServer = ExtProcServer;

/** Reads the key file once (throws RelayKeyError: the router does not start without keys) and builds the server. */
export function createRelayServer(deps: RelayServerDeps): RelayServer {
  const { relay, files } = deps;
  const keys = () => readRelayKeys(files, relay.keyFile);
  keys();
  const verifier = new RelayVerifier({ keys, ttlMs: relay.tokenTtlMs, maxSkewMs: relay.maxSkewMs, maxNonces: relay.maxNonces });
  const streamDeps = {
    verify: (token: string | undefined, nowMs: number) => verifier.verify(token, nowMs),
    snapshot: deps.snapshot,
    rules: deps.rules,
    report: new RelayReport(deps.registry, deps.logger),
    keyFileProblem: () => relayKeyFileProblem(files, relay.keyFile),
    firstMessageTimeoutMs: deps.bounds.firstMessageTimeoutMs,
    ...(deps.now ? { now: deps.now } : {}),
  };
  const health = new HealthState();
  const streams = new Set<RelayStream>();
  const closed = (s: RelayStream): void => {
    streams.delete(s);
  };
  const server = createH2GrpcServer({
    maxMessageBytes: deps.bounds.maxMessageBytes,
    streamResetBurst: STREAM_RESET_BURST,
    streamResetRate: STREAM_RESET_RATE,
    process: (call) => {
      if (streams.size >= deps.bounds.maxStreams) {
        call.sendStatus(Status.RESOURCE_EXHAUSTED, `the relay verifier is serving extProc.maxStreams (${deps.bounds.maxStreams}) streams`);
        return;
      }
      streams.add(new RelayStream(call, streamDeps, closed));
    },
    healthStatus: (service) => health.status(service),
    watch: (call) => health.handlers.Watch!(call as never, undefined as never),
  });
  let stopping: Promise<void> | undefined;
  return {
    bind: (address) => server.listen(address),
    setServing: (serving) => health.setServing(serving),
    drain(timeoutMs) {
      stopping ??= new Promise<void>((resolve) => {
        health.drain();
        const timer = setTimeout(() => {
          server.destroy();
          resolve();
        }, timeoutMs);
        void server.shutdown().then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return stopping;
    },
    activeStreams: () => streams.size,
    close() {
      health.drain();
      server.destroy();
      stopping ??= Promise.resolve();
      return stopping;
    },
  };
}
