/**
 * What the data path is given (one object per ext_proc server) and what every
 * relay of that server shares, derived from it once (not per stream).
 */
import type { Logger } from 'pino';
import type { RouterConfig } from '../config/schema.js';
import type { PickerSettings, RandomSource } from '../picker/types.js';
import type { DestinationHeaderMode } from '../protocol/responses.js';
import type { OutcomeSink, SignalSource } from '../signals/types.js';
import type { RoutingSnapshot } from '../snapshot/types.js';
import type { AttemptSettings } from './epp-attempt.js';
import type { EppClient } from './epp-call.js';
import { MemberAnswerRules } from '../config/answer-rules.js';
import { AnswerGuardReport } from './answer-report.js';
import { FailOpenEndpoints } from './fail-open.js';
import { HeldBytes } from './held-bytes.js';
import type { DataPathObserver, StreamTracer } from './observer.js';
import type { PickerPortDeps } from './picker-answers.js';

/** The router config's `extProc` block. */
export type ExtProcSettings = RouterConfig['extProc'];

export interface StreamDeps {
  readonly snapshot: () => RoutingSnapshot | undefined;
  readonly settings: ExtProcSettings;
  readonly random: RandomSource;
  readonly eppClients: EppClient;
  readonly observer: DataPathObserver;
  readonly logger: Logger;
  /** Live pool signals for the pick (absent: every candidate unknown, the plain weighted split). */
  readonly signals?: SignalSource;
  /** Where attempt outcomes go (the outlier detector). */
  readonly outcomes?: OutcomeSink;
  /** The config's `picker` block (absent: the schema's default policy, the view's own saturation flags). */
  readonly picker?: PickerSettings;
  /** FailOpen destinations: static endpoints and the recent-endpoint cache (absent: a cache only). */
  readonly failOpen?: FailOpenEndpoints;
  /** What each member's EPPs may answer (absent: every member gets the schema's defaults). */
  readonly answerRules?: MemberAnswerRules;
  /** Opens a trace per stream (absent: tracing is off and the data path calls nothing for it). */
  readonly tracer?: StreamTracer;
  /** A picker port's server (the Endpoint Picker role): its streams are for the multi-cluster pool bound to the port. */
  readonly endpointPicker?: PickerPortDeps;
  /** The deps whose relay context this server shares (the picker ports share the main server's: one held-bytes budget). */
  readonly sharesRelayWith?: StreamDeps;
}

/** What every relay of a server shares. */
export interface RelayContext extends AttemptSettings {
  readonly pool: EppClient;
  readonly destinationHeader: DestinationHeaderMode;
  readonly outcomes: OutcomeSink;
  readonly failOpen: FailOpenEndpoints;
  readonly random: RandomSource;
  readonly replayBufferBytes: number;
  readonly maxAttempts: number;
  /** After the commit: how long the EPP may owe Envoy something without sending anything (0: no limit). */
  readonly eppStallTimeoutMs: number;
  readonly answerRules: MemberAnswerRules;
  readonly guardReport: AnswerGuardReport;
  /** Body bytes held for EPPs that have not echoed them, per stream and process-wide. */
  readonly held: HeldBytes;
}

const NO_OUTCOMES: OutcomeSink = { reportSuccess() {}, reportFailure() {} };

const relayContexts = new WeakMap<StreamDeps, RelayContext>();

/** The relay context of `deps`, built on first use and cached. */
export function relayContext(deps: StreamDeps): RelayContext {
  if (deps.sharesRelayWith !== undefined) return relayContext(deps.sharesRelayWith);
  let ctx = relayContexts.get(deps);
  if (ctx === undefined) {
    const s = deps.settings;
    ctx = {
      pool: deps.eppClients,
      observer: deps.observer,
      destinationHeader: s.destinationHeader,
      outcomes: deps.outcomes ?? NO_OUTCOMES,
      failOpen: deps.failOpen ?? new FailOpenEndpoints({ ttlMs: s.failOpenCacheTtlMs }),
      random: deps.random,
      attemptTimeoutMs: s.attemptTimeoutMs,
      replayBufferBytes: s.replayBufferBytes,
      maxAttempts: s.maxAttempts,
      eppStallTimeoutMs: s.eppStallTimeoutMs,
      releaseGraceMs: s.releaseGraceMs,
      answerRules: deps.answerRules ?? new MemberAnswerRules(),
      guardReport: new AnswerGuardReport(deps.observer, deps.logger),
      held: new HeldBytes(s.maxHeldBytesPerStream, s.heldBytesBudget),
    };
    relayContexts.set(deps, ctx);
  }
  return ctx;
}
