/**
 * One ext_proc stream from Envoy: the per-stream state object. It owns Envoy's
 * call, routes the first message (route match, then the picker over the live
 * signal view: a primary and its failover order), chooses the processor once
 * (EppRelay for an EPP candidate, ModeResponder for a parent), dispatches every
 * message to it by request phase, and has ONE idempotent close(outcome),
 * reached on end, error and cancel, that releases the processor (and its EPP
 * call) and reports the stream exactly once.
 */
import type { Metadata } from '@grpc/grpc-js';
import { DEFAULT_PICKER } from '../config/defaults.js';
import { pickWith } from '../picker/pick.js';
import { decodeRequest, peekRequest, type RequestPeek } from '../protocol/codec.js';
import { immediateResponse } from '../protocol/responses.js';
import { EMPTY_SIGNAL_VIEW } from '../signals/types.js';
import { matchRequest } from '../snapshot/match.js';
import type { Candidate } from '../snapshot/types.js';
import { requestAttributes } from './attributes.js';
import { relayContext, type StreamDeps } from './deps.js';
import { EnvoyOrder } from './envoy-order.js';
import { EppRelay } from './epp-relay.js';
import { ErrorCode, RouterError } from './errors.js';
import { candidateLabels, routeLabel } from './labels.js';
import type { StreamOutcome } from './observer.js';
import type { EnvoySide, Processor } from './processor.js';
import { ModeResponder } from './responder.js';

/** Envoy's call as the stream uses it: a grpc-js server call, or the node:http2 transport's (src/transport/). */
export interface EnvoyCall {
  readonly metadata: Metadata;
  write(msg: Buffer): boolean;
  end(): void;
  pause(): unknown;
  resume(): unknown;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  on(event: 'data' | 'end' | 'cancelled' | 'error', listener: (...args: any[]) => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
  emit(event: 'error', err: Error): boolean;
}

export type { ExtProcSettings, StreamDeps } from './deps.js';

type Phase =
  | { readonly t: 'first' }
  | { readonly t: 'active'; readonly processor: Processor }
  | { readonly t: 'closed'; readonly outcome: StreamOutcome };

const FIRST: Phase = { t: 'first' };
/** Without a `picker` block: the schema's default policy; saturation as the signal view flags it. */
const NO_THRESHOLDS_PICKER = { defaultPolicy: DEFAULT_PICKER.defaultPolicy };

export class ExtProcStream implements EnvoySide {
  private phase: Phase = FIRST;
  private readonly startedAt = performance.now();
  private route: string | undefined;
  private pool: string | undefined;
  private cluster: string | undefined;
  private decidedOutcome: StreamOutcome | undefined;
  private readonly order = new EnvoyOrder();
  /** Runs until the first message (extProc.firstMessageTimeoutMs). */
  private firstTimer: NodeJS.Timeout | undefined;

  /** `firstMessageTimeoutMs`: the stream is ended when no message came by then (absent: no deadline). */
  constructor(
    private readonly call: EnvoyCall,
    private readonly deps: StreamDeps,
    private readonly onClosed: (stream: ExtProcStream) => void,
    firstMessageTimeoutMs?: number,
  ) {
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

  get metadata(): Metadata {
    return this.call.metadata;
  }

  send(msg: Buffer): boolean {
    if (this.phase.t === 'closed') return true;
    return this.call.write(msg);
  }

  onDrain(cb: () => void): void {
    this.call.once('drain', cb);
  }

  pause(): void {
    this.call.pause();
  }

  resume(): void {
    if (this.phase.t !== 'closed') this.call.resume();
  }

  decided(outcome: StreamOutcome, replace = false): void {
    if (replace) this.decidedOutcome = outcome;
    else this.decidedOutcome ??= outcome;
  }

  routed(candidate: Candidate): void {
    const labels = candidateLabels(candidate);
    this.pool = labels.pool;
    this.cluster = labels.cluster;
  }

  finish(outcome: StreamOutcome): void {
    if (this.phase.t === 'closed') return;
    this.close(this.decidedOutcome ?? outcome);
    this.call.end();
  }

  fail(err: RouterError): void {
    if (this.phase.t === 'closed') return;
    this.close(err.outcome, err);
    if (err.userFacing) {
      this.call.write(
        immediateResponse({
          status: err.httpStatus,
          body: err.responseBody(),
          details: `mcip_router_${err.code}`,
          ...(err.headers ? { headers: err.headers } : {}),
        }),
      );
      this.call.end();
    } else {
      // grpc-js turns an 'error' event on a server stream into the call's status.
      this.call.emit('error', Object.assign(new Error(err.message), { code: err.grpcCode, details: err.message }));
    }
  }

  // ---- Envoy's events ---------------------------------------------------------------

  private readonly onMessage = (msg: Buffer): void => {
    let phase = this.phase;
    if (phase.t === 'closed') return;
    let peek: RequestPeek;
    try {
      peek = peekRequest(msg);
    } catch (err) {
      this.fail(new RouterError(ErrorCode.Protocol, 'malformed ProcessingRequest', { cause: err }));
      return;
    }
    if (peek.case !== 'none') {
      const violation = this.order.check(peek.case, peek.endOfStream);
      if (violation !== undefined) {
        this.fail(new RouterError(ErrorCode.Protocol, `out of order: ${violation}`));
        return;
      }
    }
    try {
      if (phase.t === 'first') {
        this.stopFirstTimer();
        const processor = this.choose(msg, peek);
        if (processor === undefined) return;
        if (this.phase.t === 'closed') {
          processor.dispose();
          return;
        }
        phase = this.phase = { t: 'active', processor };
      }
      this.dispatch(phase.processor, msg, peek);
    } catch (err) {
      this.fail(RouterError.from(err).withContext(peek.case));
    }
  };

  private readonly onHalfClose = (): void => {
    switch (this.phase.t) {
      case 'first':
        this.finish('passthrough');
        return;
      case 'active':
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

  // ---- routing and dispatch ---------------------------------------------------------

  private dispatch(p: Processor, msg: Buffer, peek: RequestPeek): void {
    const c = peek.case;
    switch (c) {
      case 'request_headers':
        return p.requestHeaders(msg, peek.endOfStream);
      case 'request_body':
        return p.requestBody(msg, peek.endOfStream);
      case 'request_trailers':
        return p.requestTrailers(msg);
      case 'response_headers':
        return p.responseHeaders(msg, peek.endOfStream);
      case 'response_body':
        return p.responseBody(msg, peek.endOfStream);
      case 'response_trailers':
        return p.responseTrailers(msg);
      case 'none':
        throw new RouterError(ErrorCode.Protocol, 'ProcessingRequest without a request member');
      default: {
        const never: never = c;
        throw new RouterError(ErrorCode.Protocol, `unknown request member ${String(never)}`);
      }
    }
  }

  /** Routes the first message and returns its processor, or undefined after answering Envoy itself. */
  private choose(msg: Buffer, peek: RequestPeek): Processor | undefined {
    if (peek.case !== 'request_headers') {
      // Request headers are not sent to the router: nothing to route on.
      return new ModeResponder(this, decodeRequest(msg).protocol_config);
    }
    const req = decodeRequest(msg);
    const snapshot = this.deps.snapshot();
    if (snapshot === undefined) {
      this.fail(new RouterError(ErrorCode.NotReady, 'the router has not built its routing table yet'));
      return undefined;
    }
    const started = performance.now();
    const attrs = requestAttributes(req.request_headers?.headers?.headers ?? []);
    const match = matchRequest(snapshot, attrs);
    if (match.type === 'no-route') {
      this.deps.observer.picked((performance.now() - started) / 1000);
      this.fail(
        new RouterError(
          ErrorCode.NoRoute,
          `no HTTPRoute rule matches host "${attrs.authority}" path "${attrs.path}" method ${attrs.method}`,
        ),
      );
      return undefined;
    }
    this.route = routeLabel(match.rule);
    const deps = this.deps;
    const view = deps.signals?.view() ?? EMPTY_SIGNAL_VIEW;
    const result = pickWith(match.rule, view, deps.random, deps.picker ?? NO_THRESHOLDS_PICKER);
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
    const candidate = result.primary;
    this.routed(candidate);
    if (candidate.via === 'parent') {
      return new ModeResponder(this, req.protocol_config, { destination: candidate.parent.address, parent: true });
    }
    return new EppRelay(this, result, req.protocol_config, relayContext(deps));
  }

  // ---- the one way out ----------------------------------------------------------------

  /** Idempotent: disposes the processor (cancels its EPP call) and reports the stream once. */
  close(outcome: StreamOutcome, err?: RouterError): void {
    const phase = this.phase;
    if (phase.t === 'closed') return;
    this.phase = { t: 'closed', outcome };
    this.stopFirstTimer();
    if (phase.t === 'active') phase.processor.dispose();
    const durationSeconds = (performance.now() - this.startedAt) / 1000;
    this.deps.observer.streamFinished({
      route: this.route,
      pool: this.pool,
      cluster: this.cluster,
      outcome,
      durationSeconds,
    });
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
