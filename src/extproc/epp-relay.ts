/**
 * Relays one ext_proc stream between Envoy and a pool's EPP, byte for byte.
 *
 * Envoy's messages (the first included) go to the EPP in order; while the EPP
 * call opens they wait, and Envoy is paused. Every EPP response goes to Envoy
 * unchanged, except a request_headers response whose destination header is a
 * list, rewritten per `destinationHeader`. Each side is paused while the other
 * cannot take more. Half-close and cancel propagate. An EPP failure before
 * anything reached Envoy becomes the pool's failure-mode answer (503); after,
 * a gRPC error (Envoy answers 500).
 */
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { peekResponseCase } from '../protocol/codec.js';
import { rewriteDestination, type DestinationHeaderMode } from '../protocol/responses.js';
import type { Candidate } from '../snapshot/types.js';
import type { EppCall, EppClientPool } from './epp-client.js';
import { forwardedMetadata } from './epp-client.js';
import { ErrorCode, RouterError } from './errors.js';
import type { EnvoySide, Processor } from './processor.js';

export type EppCandidate = Extract<Candidate, { via: 'epp' }>;

export interface RelayOptions {
  readonly pool: EppClientPool;
  readonly destinationHeader: DestinationHeaderMode;
}

export class EppRelay implements Processor {
  private call: EppCall | undefined;
  /** Envoy messages waiting for the EPP call to open. */
  private pending: Buffer[] | undefined = [];
  private envoyEnded = false;
  /** Something from the EPP reached Envoy: a failure can no longer be answered with a 503. */
  private relayed = false;
  /** The EPP's answer to request headers (or an immediate response) was seen. */
  private decided = false;
  private done = false;
  private envoyPaused = false;
  private eppPaused = false;

  constructor(
    private readonly envoy: EnvoySide,
    private readonly candidate: EppCandidate,
    private readonly options: RelayOptions,
  ) {
    this.envoy.pause();
    options.pool.ready(candidate.epp).then(
      () => this.opened(),
      (err: unknown) => this.eppFailed(err),
    );
  }

  requestHeaders(msg: Buffer): void {
    this.forward(msg);
  }
  requestBody(msg: Buffer): void {
    this.forward(msg);
  }
  requestTrailers(msg: Buffer): void {
    this.forward(msg);
  }
  responseHeaders(msg: Buffer): void {
    this.forward(msg);
  }
  responseBody(msg: Buffer): void {
    this.forward(msg);
  }
  responseTrailers(msg: Buffer): void {
    this.forward(msg);
  }

  endOfInput(): void {
    this.envoyEnded = true;
    if (this.call && !this.done) this.call.end();
  }

  dispose(): void {
    if (this.done) return;
    this.done = true;
    this.pending = undefined;
    // Cancelling a call that already ended is a no-op; an open one is reset.
    this.call?.cancel();
  }

  private opened(): void {
    if (this.done) return;
    let call: EppCall;
    try {
      call = this.options.pool.call(this.candidate.epp, forwardedMetadata(this.envoy.metadata));
    } catch (err) {
      this.eppFailed(err);
      return;
    }
    this.call = call;
    // Listeners go on in the same tick: grpc-js may fail the call on the next one.
    call.on('data', this.onEppMessage);
    call.on('end', this.onEppEnd);
    call.on('error', this.onEppError);
    const pending = this.pending ?? [];
    this.pending = undefined;
    for (const msg of pending) this.forward(msg);
    if (this.envoyEnded) call.end();
    if (!this.envoyPaused) this.envoy.resume();
  }

  private forward(msg: Buffer): void {
    if (this.done) return;
    if (this.pending) {
      this.pending.push(msg);
      return;
    }
    if (this.call!.write(msg) || this.envoyPaused) return;
    // The EPP is not keeping up: stop reading Envoy until the call drains.
    this.envoyPaused = true;
    this.envoy.pause();
    this.call!.once('drain', this.onEppDrain);
  }

  private readonly onEppDrain = (): void => {
    this.envoyPaused = false;
    if (!this.done) this.envoy.resume();
  };

  private readonly onEppMessage = (msg: Buffer): void => {
    if (this.done) return;
    let out = msg;
    if (!this.decided) {
      let kind: ReturnType<typeof peekResponseCase>;
      try {
        kind = peekResponseCase(msg);
      } catch (err) {
        this.eppFailed(new RouterError(ErrorCode.EppStream, `malformed message from the EPP`, { cause: err }));
        return;
      }
      if (kind === 'immediate_response' || kind === 'streamed_immediate_response') {
        this.decided = true;
        this.envoy.decided('epp_immediate');
      } else if (kind === 'request_headers') {
        this.decided = true;
        this.envoy.decided('relayed');
        if (this.options.destinationHeader === 'primary') {
          try {
            out = rewriteDestination(msg, 'primary');
          } catch (err) {
            this.eppFailed(new RouterError(ErrorCode.EppStream, 'malformed request_headers response from the EPP', { cause: err }));
            return;
          }
        }
      }
    }
    this.relayed = true;
    if (this.envoy.send(out) || this.eppPaused) return;
    // Envoy is not keeping up: stop reading the EPP until Envoy's side drains.
    this.eppPaused = true;
    this.call!.pause();
    this.envoy.onDrain(this.onEnvoyDrain);
  };

  private readonly onEnvoyDrain = (): void => {
    this.eppPaused = false;
    if (!this.done) this.call?.resume();
  };

  /** The EPP ended its stream with OK, after everything it sent was relayed: so does the router. */
  private readonly onEppEnd = (): void => {
    if (this.done) return;
    this.done = true;
    this.envoy.finish('relayed');
  };

  private readonly onEppError = (err: ServiceError): void => {
    this.eppFailed(err);
  };

  private eppFailed(err: unknown): void {
    if (this.done) return;
    this.done = true;
    this.pending = undefined;
    this.call?.cancel();
    const c = this.candidate;
    const reason = describe(err);
    if (this.relayed) {
      this.envoy.fail(new RouterError(ErrorCode.EppStream, `EPP of pool ${c.id} (${c.epp.address}) failed: ${reason}`, { cause: err }));
      return;
    }
    const note = c.failureMode === 'FailOpen' ? ' (failureMode FailOpen is not supported yet: failing closed)' : '';
    this.envoy.fail(
      new RouterError(ErrorCode.EppUnavailable, `EPP of pool ${c.id} at ${c.epp.address} is unavailable: ${reason}${note}`, {
        cause: err,
      }),
    );
  }
}

function describe(err: unknown): string {
  if (err instanceof RouterError) return err.message;
  const e = err as Partial<ServiceError> | undefined;
  if (e && typeof e.code === 'number') {
    const name = GrpcStatus[e.code] ?? String(e.code);
    return `gRPC ${name}: ${e.details ?? e.message ?? ''}`;
  }
  return err instanceof Error ? err.message : String(err);
}
