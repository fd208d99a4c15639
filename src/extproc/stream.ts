/**
 * One ext_proc stream from Envoy: reads each of Envoy's messages once, routes
 * the first (route match, then the picker over the live signal view), chooses
 * the processor once (EppRelay for an EPP candidate, RouterAnswers for a
 * parent or pass-through) and hands it every message, booked first in its
 * writer's ledger (the one record of what Envoy sent). One idempotent
 * close(outcome), reached on end, error and cancel, releases the processor and
 * reports the stream exactly once. Every write to Envoy goes through its
 * EnvoyWriter.
 */
import { DEFAULT_PICKER } from '../config/defaults.js';
import { pickWith } from '../picker/pick.js';
import { decodeRequest, type ProcessingRequest } from '../protocol/codec.js';
import { readEnvoyMessage, type EnvoyMessage } from '../protocol/envoy-message.js';
import { parentHeadersResponse } from '../protocol/responses.js';
import type { RouterDecision } from '../protocol/router-metadata.js';
import { EMPTY_SIGNAL_VIEW } from '../signals/types.js';
import { matchRequest } from '../snapshot/match.js';
import type { Candidate, RouteRule, RoutingSnapshot } from '../snapshot/types.js';
import { requestAttributes } from './attributes.js';
import { relayContext, type StreamDeps } from './deps.js';
import { forwardedHeaders, type EppRequestHeaders } from './epp-call.js';
import { EnvoyWriter, type EnvoyCall } from './envoy-writer.js';
import { EppRelay } from './epp-relay.js';
import { ErrorCode, RouterError } from './errors.js';
import { candidateLabels, routeLabel } from './labels.js';
import type { StreamInfo, StreamOutcome, StreamTrace } from './observer.js';
import type { EnvoySide, Processor } from './processor.js';
import { RouterAnswers } from './router-answers.js';
import { pickerPoolOn, pickerShaper, unanswerable } from './picker-answers.js';

export type { EnvoyCall } from './envoy-writer.js';
export type { ExtProcSettings, StreamDeps } from './deps.js';

type Phase =
  | { readonly t: 'first' }
  | { readonly t: 'active'; readonly processor: Processor }
  | { readonly t: 'closed'; readonly outcome: StreamOutcome };

const FIRST: Phase = { t: 'first' };
/** Without a `picker` block: the schema's default policy; saturation as the signal view flags it. */
const NO_THRESHOLDS_PICKER = { defaultPolicy: DEFAULT_PICKER.defaultPolicy };

export class ExtProcStream implements EnvoySide {
  readonly writer: EnvoyWriter;
  private phase: Phase = FIRST;
  private readonly startedAt = performance.now();
  private route: string | undefined;
  private pool: string | undefined;
  private cluster: string | undefined;
  private via: Candidate['via'] | undefined;
  private attempts = 0;
  private decidedOutcome: StreamOutcome | undefined;
  private forwarded: EppRequestHeaders | undefined;
  /** Opened at the first message when tracing is on and the stream is sampled. */
  trace: StreamTrace | undefined;
  /** Runs until the first message (extProc.firstMessageTimeoutMs). */
  private firstTimer: NodeJS.Timeout | undefined;

  /** `firstMessageTimeoutMs`: the stream is ended when no message came by then (absent: no deadline). */
  constructor(
    private readonly call: EnvoyCall,
    private readonly deps: StreamDeps,
    private readonly onClosed: (stream: ExtProcStream) => void,
    firstMessageTimeoutMs?: number,
  ) {
    this.writer = new EnvoyWriter(call, this.decision);
    deps.observer.streamStarted();
    if (firstMessageTimeoutMs !== undefined) {
      this.firstTimer = setTimeout(() => {
        this.firstTimer = undefined;
        this.fail(new RouterError(ErrorCode.FirstMessageTimeout, `no message within extProc.firstMessageTimeoutMs (${firstMessageTimeoutMs} ms)`));
      }, firstMessageTimeoutMs);
    }
    call.on('data', this.onMessage);
    call.on('end', this.onHalfClose);
    call.on('cancelled', this.onCancel);
    call.on('error', this.onError);
  }

  get closed(): boolean {
    return this.phase.t === 'closed';
  }

  // ---- EnvoySide ------------------------------------------------------------------

  forwardedHeaders(): EppRequestHeaders {
    const call = this.call;
    return (this.forwarded ??= forwardedHeaders(call.requestHeaders ?? call.metadata.toHttp2Headers()));
  }

  pause(): void {
    this.writer.input.pause();
  }

  resume(): void {
    this.writer.input.resume();
  }

  decided(outcome: StreamOutcome, replace = false): void {
    if (replace) this.decidedOutcome = outcome;
    else this.decidedOutcome ??= outcome;
  }

  routed(candidate: Candidate): void {
    const labels = candidateLabels(candidate);
    this.pool = labels.pool;
    this.cluster = labels.cluster;
    this.via = candidate.via;
  }

  attemptStarted(candidate: Candidate): void {
    this.attempts += 1;
    this.trace?.attemptStarted(candidate);
  }

  finish(outcome: StreamOutcome): void {
    if (this.phase.t === 'closed') return;
    this.close(this.decidedOutcome ?? outcome);
    this.writer.end();
  }

  fail(err: RouterError): void {
    if (this.phase.t === 'closed') return;
    this.close(err.outcome, err);
    this.writer.endWith(err);
  }

  /** The decision the answer to Envoy's request headers carries (served-by dynamic metadata). */
  private readonly decision = (error?: StreamOutcome): RouterDecision | undefined => {
    if (this.route === undefined && error === undefined) return undefined;
    const outcome = this.decidedOutcome ?? error ?? (this.via === 'parent' ? 'parent' : 'relayed');
    return {
      cluster: this.cluster,
      pool: this.pool,
      route: this.route,
      mode: this.via === undefined ? undefined : this.via === 'parent' ? 'Parent' : 'Endpoint',
      attempts: this.attempts,
      outcome: servedOutcome(outcome, this.attempts),
    };
  };

  // ---- Envoy's events ---------------------------------------------------------------

  private readonly onMessage = (raw: Buffer): void => {
    let phase = this.phase;
    if (phase.t === 'closed') return;
    let m: EnvoyMessage;
    try {
      m = readEnvoyMessage(raw);
    } catch (err) {
      this.fail(new RouterError(ErrorCode.Protocol, 'malformed ProcessingRequest', { cause: err }));
      return;
    }
    if (m.case === 'none') {
      this.fail(new RouterError(ErrorCode.Protocol, 'ProcessingRequest without a request member').withContext('none'));
      return;
    }
    try {
      if (phase.t === 'first') {
        this.stopFirstTimer();
        const processor = this.choose(m);
        if (processor === undefined) return;
        if (this.phase.t === 'closed') {
          processor.dispose();
          return;
        }
        phase = this.phase = { t: 'active', processor };
      }
      // Booked here, once, before the processor sees it (throws when out of Envoy's order).
      phase.processor.message(m, this.writer.record(m));
    } catch (err) {
      this.fail(RouterError.from(err).withContext(m.case));
    }
  };

  private readonly onHalfClose = (): void => {
    switch (this.phase.t) {
      case 'first':
        this.finish('passthrough');
        return;
      case 'active':
        this.writer.inputEnded();
        this.phase.processor.endOfInput();
        return;
      case 'closed':
        return;
    }
  };

  private readonly onCancel = (): void => {
    this.close(this.decidedOutcome ?? 'client_cancelled');
  };

  private readonly onError = (err: Error): void => {
    if (this.phase.t === 'closed') return;
    this.close('internal_error', RouterError.from(err));
  };

  // ---- routing ----------------------------------------------------------------------

  /** Routes the first message (decoded whole, once) and returns its processor, or undefined after answering Envoy itself. */
  private choose(m: EnvoyMessage): Processor | undefined {
    const req = decodeRequest(m.raw);
    const deps = this.deps;
    const ctx = relayContext(deps);
    this.writer.open(req.protocol_config, ctx.held);
    if (deps.tracer !== undefined) this.trace = deps.tracer.open(req.request_headers?.headers?.headers ?? []);
    // Request headers are not sent to the router: nothing to route on.
    if (m.case !== 'request_headers') return new RouterAnswers(this, 'passthrough');
    const snapshot = deps.snapshot();
    if (snapshot === undefined) {
      this.fail(new RouterError(ErrorCode.NotReady, 'the router has not built its routing table yet'));
      return undefined;
    }
    const started = performance.now();
    const rule = this.ruleFor(req, snapshot);
    if (rule instanceof RouterError) {
      deps.observer.picked((performance.now() - started) / 1000);
      this.fail(rule);
      return undefined;
    }
    this.route = routeLabel(rule);
    const view = deps.signals?.view() ?? EMPTY_SIGNAL_VIEW;
    const result = pickWith(rule, view, deps.random, deps.picker ?? NO_THRESHOLDS_PICKER);
    deps.observer.picked((performance.now() - started) / 1000);
    switch (result.type) {
      case 'unavailable':
      case 'invalid-backend':
        this.fail(new RouterError(ErrorCode.InvalidBackend, result.message));
        return undefined;
      case 'picked':
        break;
      default: {
        const never: never = result;
        throw new Error(`unknown pick result ${String(never)}`);
      }
    }
    deps.observer.pickedFor(result.reason);
    this.writer.mutateRequestHeaders(rule.requestHeaderModifier?.fragment);
    this.trace?.picked(this.route, result);
    const candidate = result.primary;
    this.routed(candidate);
    if (candidate.via === 'parent') return new RouterAnswers(this, 'parent', parentHeadersResponse(candidate.parent.address));
    return new EppRelay(this, result, ctx);
  }

  /**
   * The rule the stream is routed by: the HTTPRoute rule its request matches or, on a
   * picker port (the Endpoint Picker role), the rule of the multi-cluster pool bound to
   * the port, whose answers are then shaped for the gateway. Or the error the stream
   * is answered with (no route, no pool on the port).
   */
  private ruleFor(req: ProcessingRequest, snapshot: RoutingSnapshot): RouteRule | RouterError {
    const picker = this.deps.endpointPicker;
    if (picker === undefined) {
      const attrs = requestAttributes(req.request_headers?.headers?.headers ?? []);
      const match = matchRequest(snapshot, attrs);
      if (match.type === 'matched') return match.rule;
      return new RouterError(ErrorCode.NoRoute, `no HTTPRoute rule matches host "${attrs.authority}" path "${attrs.path}" method ${attrs.method}`);
    }
    const pool = pickerPoolOn(snapshot, picker.port);
    if (pool === undefined) return new RouterError(ErrorCode.NoPickerPool, `no multi-cluster InferencePool is bound to picker port ${picker.port}`);
    const why = unanswerable(pool, picker.relay);
    if (why !== undefined) return new RouterError(ErrorCode.InvalidBackend, why);
    this.writer.shapeRequestHeaders(pickerShaper(pool.answer, picker.relay, () => this.cluster));
    return pool.rule;
  }

  // ---- the one way out ----------------------------------------------------------------

  /** Idempotent: disposes the processor (cancels its EPP call) and reports the stream once. */
  close(outcome: StreamOutcome, err?: RouterError): void {
    const phase = this.phase;
    if (phase.t === 'closed') return;
    this.phase = { t: 'closed', outcome };
    this.stopFirstTimer();
    if (phase.t === 'active') phase.processor.dispose();
    this.writer.close();
    const durationSeconds = (performance.now() - this.startedAt) / 1000;
    const info: StreamInfo = { route: this.route, pool: this.pool, cluster: this.cluster, outcome, durationSeconds };
    this.deps.observer.streamFinished(info);
    this.trace?.finished(info);
    const log = this.deps.logger;
    if (log.isLevelEnabled('debug')) {
      log.debug(
        { route: this.route, pool: this.pool, cluster: this.cluster, outcome, durationSeconds, err: err?.message },
        'ext_proc stream closed',
      );
    }
    this.onClosed(this);
  }

  private stopFirstTimer(): void {
    if (this.firstTimer === undefined) return;
    clearTimeout(this.firstTimer);
    this.firstTimer = undefined;
  }
}

/** The served-by outcome of a stream outcome: how the request reached its destination, or why it did not. */
function servedOutcome(outcome: StreamOutcome, attempts: number): string {
  switch (outcome) {
    case 'relayed':
      return attempts > 1 ? 'failed_over' : 'routed';
    case 'fail_open':
      return 'fell_open';
    default:
      return outcome;
  }
}
