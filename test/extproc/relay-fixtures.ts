// Fixtures for the EppRelay unit tests: candidates, a Picked, an outcome recorder and a
// relay wired to the scripted fakes (FakeEnvoy, FakePool/FakeEppCall).
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import pino from 'pino';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import { AnswerGuardReport } from '../../src/extproc/answer-report.js';
import { HeldBytes } from '../../src/extproc/held-bytes.js';
import { EppRelay, type EppCandidate, type RelayContext } from '../../src/extproc/epp-relay.js';
import { FailOpenEndpoints } from '../../src/extproc/fail-open.js';
import type { Picked } from '../../src/picker/types.js';
import type { FailureReason } from '../../src/signals/types.js';
import type { Candidate } from '../../src/snapshot/types.js';
import { FakeEnvoy, FakeEppCall, FakePool } from './fakes.js';
import { RecordingObserver } from './scenario.js';

export const TLS = { enabled: false, insecureSkipVerify: true };
export const FD = { request_body_mode: 4, response_body_mode: 4 } as const;
export const BUFFERED = { request_body_mode: 2, response_body_mode: 2 } as const;

export function candidate(name = 'pool-a', o: { failureMode?: 'FailClose' | 'FailOpen'; cluster?: string; port?: number } = {}): EppCandidate {
  const cluster = o.cluster ?? 'cluster-a';
  const port = o.port ?? 9002;
  return {
    id: `${cluster}/default/${name}`,
    cluster,
    namespace: 'default',
    pool: name,
    local: cluster === 'cluster-a',
    failureMode: o.failureMode ?? 'FailClose',
    targetPorts: [8000],
    via: 'epp',
    epp: {
      address: `127.0.0.1:${port}`,
      host: '127.0.0.1',
      port,
      cluster,
      service: { namespace: 'default', name: `${name}-epp` },
      source: 'override',
      tls: TLS,
    },
  };
}

export function picked(primary: Candidate, fallbacks: Candidate[] = []): Picked {
  return { type: 'picked', primary, group: undefined as never, reason: 'weighted', policy: 'weighted', fallbacks };
}

export class Outcomes {
  readonly log: string[] = [];
  reportSuccess(id: string): void {
    this.log.push(`ok ${id}`);
  }
  reportFailure(id: string, reason: FailureReason): void {
    this.log.push(`${reason} ${id}`);
  }
}

export interface SetupOpts {
  mode?: 'primary' | 'list';
  primary?: Candidate;
  fallbacks?: Candidate[];
  protocol?: typeof FD | typeof BUFFERED;
  replayBufferBytes?: number;
  maxAttempts?: number;
  failOpen?: FailOpenEndpoints;
  attemptTimeoutMs?: number;
  eppStallTimeoutMs?: number;
  held?: HeldBytes;
}

export function setup(o: SetupOpts = {}) {
  const held = o.held ?? new HeldBytes(1 << 30, 1 << 30);
  const envoy = new FakeEnvoy({ ...(o.protocol ?? FD), send_body_without_waiting_for_header_response: false }, held);
  envoy.metadata.set('x-route-tag', 'blue');
  envoy.metadata.set('user-agent', 'envoy');
  const pool = new FakePool();
  const observer = new RecordingObserver();
  const outcomes = new Outcomes();
  const ctx: RelayContext = {
    pool: pool.asPool(),
    observer,
    destinationHeader: o.mode ?? 'primary',
    outcomes,
    failOpen: o.failOpen ?? new FailOpenEndpoints(),
    random: () => 0,
    attemptTimeoutMs: o.attemptTimeoutMs ?? 0,
    replayBufferBytes: o.replayBufferBytes ?? 1 << 20,
    maxAttempts: o.maxAttempts ?? 3,
    eppStallTimeoutMs: o.eppStallTimeoutMs ?? 0,
    releaseGraceMs: DEFAULT_EXT_PROC.releaseGraceMs,
    answerRules: new MemberAnswerRules(),
    guardReport: new AnswerGuardReport(observer, pino({ level: 'silent' })),
    held,
  };
  // Driven as the stream drives it: every message booked in the ledger first.
  const relay = envoy.drive(new EppRelay(envoy, picked(o.primary ?? candidate(), o.fallbacks), ctx));
  return { envoy, pool, relay, observer, outcomes, call: new FakeEppCall() };
}

export const LIST = '10.0.0.1:8000,10.0.0.2:8000,10.0.0.3:8000';

export function streamedBodies(envoy: FakeEnvoy): string {
  return envoy
    .responses()
    .filter((r) => r.response === 'request_body')
    .map((r) => r.request_body!.response!.body_mutation!.streamed_response!.body.toString())
    .join('');
}
