/**
 * What the data path is given (one object per ext_proc server) and what every
 * relay of that server shares, derived from it once (not per stream).
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { streamBoundsShape, type RouterConfig } from '../config/schema.js';
import type { PickerSettings, RandomSource } from '../picker/types.js';
import type { DestinationHeaderMode } from '../protocol/responses.js';
import type { OutcomeSink, SignalSource } from '../signals/types.js';
import type { RoutingSnapshot } from '../snapshot/types.js';
import type { AttemptSettings } from './epp-attempt.js';
import type { EppClientPool } from './epp-client.js';
import { AnswerGuardReport, MemberAnswerRules } from './answer-rules.js';
import { FailOpenEndpoints } from './fail-open.js';
import { HeldBytes } from './held-bytes.js';
import type { DataPathObserver } from './observer.js';

type BoundKeys = keyof typeof streamBoundsShape;
type FailoverKeys = 'attemptTimeoutMs' | 'eppStallTimeoutMs' | 'replayBufferBytes' | 'maxAttempts' | 'failOpenCacheTtlMs' | BoundKeys;

export type StreamBounds = z.output<z.ZodObject<typeof streamBoundsShape>>;
let schemaBounds: StreamBounds | undefined;

/** The stream bounds of `settings`, absent ones as the schema defaults them. */
export function streamBounds(settings: ExtProcSettings): StreamBounds {
  const defaults = (schemaBounds ??= z.object(streamBoundsShape).parse({}));
  return {
    maxStreams: settings.maxStreams ?? defaults.maxStreams,
    firstMessageTimeoutMs: settings.firstMessageTimeoutMs ?? defaults.firstMessageTimeoutMs,
    maxHeldBytesPerStream: settings.maxHeldBytesPerStream ?? defaults.maxHeldBytesPerStream,
    heldBytesBudget: settings.heldBytesBudget ?? defaults.heldBytesBudget,
  };
}

/** The router config's `extProc` block; the failover settings default as in the schema when absent. */
export type ExtProcSettings = Omit<RouterConfig['extProc'], FailoverKeys> & Partial<Pick<RouterConfig['extProc'], FailoverKeys>>;

export interface StreamDeps {
  readonly snapshot: () => RoutingSnapshot | undefined;
  readonly settings: ExtProcSettings;
  readonly random: RandomSource;
  readonly eppClients: EppClientPool;
  readonly observer: DataPathObserver;
  readonly logger: Logger;
  /** Live pool signals for the pick (absent: every candidate unknown, the plain weighted split). */
  readonly signals?: SignalSource;
  /** Where attempt outcomes go (the outlier detector). */
  readonly outcomes?: OutcomeSink;
  /** The config's `picker` block (absent: policy 'weighted', the view's own saturation flags). */
  readonly picker?: PickerSettings;
  /** FailOpen destinations: static endpoints and the recent-endpoint cache (absent: a cache only). */
  readonly failOpen?: FailOpenEndpoints;
  /** What each member's EPPs may answer (absent: every member gets the schema's defaults). */
  readonly answerRules?: MemberAnswerRules;
}

/** What every relay of a server shares. */
export interface RelayContext extends AttemptSettings {
  readonly pool: EppClientPool;
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

export const DEFAULT_PICKER: PickerSettings = { defaultPolicy: 'weighted' };
const NO_OUTCOMES: OutcomeSink = { reportSuccess() {}, reportFailure() {} };

const relayContexts = new WeakMap<StreamDeps, RelayContext>();

/** The relay context of `deps`, built on first use and cached. */
export function relayContext(deps: StreamDeps): RelayContext {
  let ctx = relayContexts.get(deps);
  if (ctx === undefined) {
    const s = deps.settings;
    const bounds = streamBounds(s);
    ctx = {
      pool: deps.eppClients,
      observer: deps.observer,
      destinationHeader: s.destinationHeader,
      outcomes: deps.outcomes ?? NO_OUTCOMES,
      failOpen: deps.failOpen ?? new FailOpenEndpoints({ ttlMs: s.failOpenCacheTtlMs ?? 300_000 }),
      random: deps.random,
      attemptTimeoutMs: s.attemptTimeoutMs ?? 10_000,
      replayBufferBytes: s.replayBufferBytes ?? 8 * 1024 * 1024,
      maxAttempts: s.maxAttempts ?? 3,
      eppStallTimeoutMs: s.eppStallTimeoutMs ?? 30_000,
      answerRules: deps.answerRules ?? new MemberAnswerRules(),
      guardReport: new AnswerGuardReport(deps.observer, deps.logger),
      held: new HeldBytes(bounds.maxHeldBytesPerStream, bounds.heldBytesBudget),
    };
    relayContexts.set(deps, ctx);
  }
  return ctx;
}
