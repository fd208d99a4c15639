/**
 * The data path's traces: one SERVER span per traced ext_proc stream, a child of the
 * trace in the request's traceparent/tracestate when present, carrying the route, the
 * pick and the outcome; one CLIENT span per EPP attempt under it; failover and FailOpen
 * as events. Only sampled streams get a trace object: an unsampled stream costs one
 * sampler call and nothing after it.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type TextMapGetter, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import type { AttemptEnd, StreamInfo, StreamOutcome, StreamTrace, StreamTracer } from '../extproc/observer.js';
import { candidateLabels } from '../extproc/labels.js';
import type { Picked } from '../picker/types.js';
import { headerText, type HeaderValue } from '../protocol/codec.js';
import type { FailureReason } from '../signals/types.js';
import type { Candidate } from '../snapshot/types.js';

/** Span and attribute names (docs/operations.md lists them). */
export const SPAN_STREAM = 'mcip-router ext_proc';
export const SPAN_ATTEMPT = 'mcip-router epp attempt';
export const EVENT_FAILOVER = 'failover';
export const EVENT_FAIL_OPEN = 'fail_open';
export const EVENT_ANSWERED = 'epp_answered';

/** Candidates listed on a span at most (a backendRef rarely has more; the count is always given). */
const MAX_LISTED_CANDIDATES = 32;

/** Outcomes that mark the stream span as an error (the router, an EPP or the protocol failed). */
const ERROR_OUTCOMES: ReadonlySet<StreamOutcome> = new Set<StreamOutcome>([
  'not_ready',
  'invalid_backend',
  'epp_unavailable',
  'epp_error',
  'epp_overloaded',
  'protocol_error',
  'over_capacity',
  'internal_error',
]);

interface Carrier {
  traceparent?: string;
  tracestate?: string;
}

const getter: TextMapGetter<Carrier> = {
  keys: (c) => Object.keys(c),
  get: (c, key) => (key === 'traceparent' ? c.traceparent : key === 'tracestate' ? c.tracestate : undefined),
};

const w3c = new W3CTraceContextPropagator();

/** The request's W3C trace context (its first traceparent), or the root context when the request carries none. */
function parentContext(headers: readonly HeaderValue[]): typeof ROOT_CONTEXT {
  let carrier: Carrier | undefined;
  for (const h of headers) {
    if (h.key.length !== 11 && h.key.length !== 10) continue;
    const key = h.key.toLowerCase();
    if (key === 'traceparent') (carrier ??= {}).traceparent ??= headerText(h);
    else if (key === 'tracestate') {
      // Several tracestate fields are one list (W3C Trace Context): joined in order.
      const c = (carrier ??= {});
      c.tracestate = c.tracestate === undefined ? headerText(h) : `${c.tracestate},${headerText(h)}`;
    }
  }
  return carrier === undefined ? ROOT_CONTEXT : w3c.extract(ROOT_CONTEXT, carrier, getter);
}

export class OtelStreamTracer implements StreamTracer {
  constructor(private readonly tracer: Tracer) {}

  open(headers: readonly HeaderValue[]): StreamTrace | undefined {
    const span = this.tracer.startSpan(SPAN_STREAM, { kind: SpanKind.SERVER, attributes: { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.ext_proc.v3.ExternalProcessor', 'rpc.method': 'Process' } }, parentContext(headers));
    if (!span.isRecording()) return undefined;
    return new OtelStreamTrace(this.tracer, span);
  }
}

class OtelStreamTrace implements StreamTrace {
  private attempt: Span | undefined;
  /** The open attempt's EPP answered: its span ends with the stream, without error. */
  private answered = false;
  private attempts = 0;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
  ) {}

  picked(route: string, picked: Picked): void {
    const primary = candidateLabels(picked.primary);
    const candidates = picked.group.candidates;
    const listed: string[] = [];
    for (let i = 0; i < candidates.length && i < MAX_LISTED_CANDIDATES; i++) listed.push(candidates[i]!.id);
    const ref = picked.group.ref;
    this.span.setAttributes({
      'mcip.route': route,
      'mcip.pick.reason': picked.reason,
      'mcip.pick.policy': picked.policy,
      'mcip.pick.backend_ref': `${ref.kind} ${ref.namespace}/${ref.name}`,
      'mcip.pick.candidate_count': candidates.length,
      'mcip.pick.candidates': listed,
      'mcip.pick.cluster': primary.cluster,
      'mcip.pick.pool': primary.pool,
      'mcip.pick.via': picked.primary.via,
    });
  }

  attemptStarted(candidate: Candidate): void {
    this.endAttempt('abandoned');
    this.attempts += 1;
    const labels = candidateLabels(candidate);
    const attributes: Attributes = { 'mcip.cluster': labels.cluster, 'mcip.pool': labels.pool, 'mcip.attempt': this.attempts, 'rpc.system': 'grpc' };
    if (candidate.epp !== undefined) attributes['server.address'] = candidate.epp.address;
    this.attempt = this.tracer.startSpan(SPAN_ATTEMPT, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, this.span));
  }

  attemptEnded(end: AttemptEnd, detail?: string): void {
    const a = this.attempt;
    if (a === undefined) return;
    if (end === 'answered') {
      // The committed EPP keeps relaying: its span ends with the stream.
      this.answered = true;
      a.setAttribute('mcip.attempt.outcome', 'answered');
      a.addEvent(EVENT_ANSWERED);
      return;
    }
    this.endAttempt(end, detail);
  }

  failover(from: Candidate, to: Candidate, reason: FailureReason): void {
    const f = candidateLabels(from);
    const t = candidateLabels(to);
    this.span.addEvent(EVENT_FAILOVER, {
      'mcip.failover.from.cluster': f.cluster,
      'mcip.failover.from.pool': f.pool,
      'mcip.failover.to.cluster': t.cluster,
      'mcip.failover.to.pool': t.pool,
      'mcip.failover.reason': reason,
    });
  }

  failOpen(candidate: Candidate): void {
    const labels = candidateLabels(candidate);
    this.span.addEvent(EVENT_FAIL_OPEN, { 'mcip.cluster': labels.cluster, 'mcip.pool': labels.pool });
  }

  finished(info: StreamInfo): void {
    this.endAttempt(this.answered ? undefined : 'abandoned');
    const attributes: Attributes = { 'mcip.outcome': info.outcome, 'mcip.attempts': this.attempts };
    if (info.cluster !== undefined) attributes['mcip.cluster'] = info.cluster;
    if (info.pool !== undefined) attributes['mcip.pool'] = info.pool;
    this.span.setAttributes(attributes);
    if (ERROR_OUTCOMES.has(info.outcome)) {
      this.span.setAttribute(ATTR_ERROR_TYPE, info.outcome);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: info.outcome });
    }
    this.span.end();
  }

  /** Ends the open attempt span; `end` undefined: it answered and ends with the stream. */
  private endAttempt(end: Exclude<AttemptEnd, 'answered'> | undefined, detail?: string): void {
    const a = this.attempt;
    if (a === undefined) return;
    this.attempt = undefined;
    this.answered = false;
    if (end !== undefined) {
      a.setAttribute('mcip.attempt.outcome', end);
      if (end !== 'abandoned') {
        a.setAttribute(ATTR_ERROR_TYPE, end);
        a.setStatus({ code: SpanStatusCode.ERROR, ...(detail === undefined ? {} : { message: detail }) });
      }
    }
    a.end();
  }
}
