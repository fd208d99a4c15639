/**
 * The router answering Envoy itself, correctly for the processing mode:
 * - Parent mode, remote candidate: the request_headers response routes to the
 *   remote parent Gateway (x-gateway-destination-endpoint in raw_value,
 *   x-mcip-destination-kind: parent, clear_route_cache, envoy.lb metadata).
 * - Pass-through after the router took a stream over from an EPP (failover to
 *   a parent, FailOpen, an EPP that failed after answering): every later
 *   message answered per mode, bodies echoed in FULL_DUPLEX_STREAMED.
 * - Pass-through (request headers not sent to the router): plain CONTINUE.
 *
 * The processing mode comes from protocol_config on the first message (absent:
 * an Envoy before 1.34, which has no FULL_DUPLEX_STREAMED). In
 * FULL_DUPLEX_STREAMED the request headers response waits for the whole body
 * (as EPPs do), then the held body is echoed back as streamed_response; past
 * `maxHeldBodyBytes` the headers response goes early and the body streams
 * through. Other modes answer every message at once with CONTINUE.
 */
import { BodySendMode, DESTINATION_KIND_HEADER, DESTINATION_KIND_PARENT } from '../protocol/constants.js';
import { decodeRequest, type BodyPhase, type ProtocolConfiguration } from '../protocol/codec.js';
import {
  continueBody,
  continueHeaders,
  continueTrailers,
  destinationHeadersResponse,
  streamedBody,
} from '../protocol/responses.js';
import type { StreamOutcome } from './observer.js';
import type { EnvoySide, Processor } from './processor.js';

/** Default bound on the request body held before the headers response in FULL_DUPLEX_STREAMED. */
export const MAX_HELD_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Request-path state in FULL_DUPLEX_STREAMED:
 * 'headers': no request headers seen; 'holding': headers answered later, body held;
 * 'streaming': headers answered, body echoed as it comes; 'done': request path complete.
 */
type RequestState = 'headers' | 'holding' | 'streaming' | 'done';

export interface ResponderOptions {
  /** Parent address for the destination header; undefined = pass-through (CONTINUE). */
  readonly destination?: string;
  /** The destination is a parent Gateway: also set x-mcip-destination-kind: parent. */
  readonly parent?: boolean;
  readonly maxHeldBodyBytes?: number;
}

/** The extra header of answers routing to a parent Gateway (built once). */
export const PARENT_KIND_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  [DESTINATION_KIND_HEADER]: DESTINATION_KIND_PARENT,
});

export class ModeResponder implements Processor {
  private readonly requestDuplex: boolean;
  private readonly responseDuplex: boolean;
  private readonly outcome: StreamOutcome;
  private readonly maxHeld: number;
  private state: RequestState = 'headers';
  private held: Buffer[] = [];
  private heldBytes = 0;
  private paused = false;

  constructor(
    private readonly envoy: EnvoySide,
    protocol: ProtocolConfiguration | null,
    private readonly options: ResponderOptions = {},
  ) {
    this.requestDuplex = protocol?.request_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    this.responseDuplex = protocol?.response_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
    this.outcome = options.destination === undefined ? 'passthrough' : 'parent';
    this.maxHeld = options.maxHeldBodyBytes ?? MAX_HELD_BODY_BYTES;
    // Pass-through makes no routing decision: its outcome holds however the stream ends.
    if (options.destination === undefined) envoy.decided('passthrough');
  }

  requestHeaders(_msg: Buffer, endOfStream: boolean): void {
    if (this.state !== 'headers') return; // Envoy sends request headers once, first.
    if (this.requestDuplex && !endOfStream) {
      this.state = 'holding';
      return;
    }
    this.sendHeadersResponse();
    this.state = 'done';
  }

  requestBody(msg: Buffer, endOfStream: boolean): void {
    if (!this.requestDuplex) {
      this.send(continueBody('request_body'));
      return;
    }
    const body = bodyOf(msg, 'request_body');
    switch (this.state) {
      case 'holding':
        this.held.push(body);
        this.heldBytes += body.length;
        if (endOfStream) {
          this.sendHeadersResponse();
          this.flushHeld(true);
          this.state = 'done';
        } else if (this.heldBytes > this.maxHeld) {
          this.sendHeadersResponse();
          this.flushHeld(false);
          this.state = 'streaming';
        }
        return;
      case 'headers': // request headers were skipped: nothing to hold for
      case 'streaming':
        this.send(streamedBody('request_body', body, endOfStream));
        this.state = endOfStream ? 'done' : 'streaming';
        return;
      case 'done':
        return; // nothing is expected after the end of the body
      default: {
        const never: never = this.state;
        throw new Error(`unknown request state ${String(never)}`);
      }
    }
  }

  requestTrailers(_msg: Buffer): void {
    if (this.state === 'holding') {
      // Trailers end the body: route now, echo the body (not ended: the trailers end the stream).
      this.sendHeadersResponse();
      this.flushHeld(false);
    }
    this.state = 'done';
    this.send(continueTrailers('request_trailers'));
  }

  responseHeaders(_msg: Buffer, _endOfStream: boolean): void {
    this.send(continueHeaders('response_headers'));
  }

  responseBody(msg: Buffer, endOfStream: boolean): void {
    this.send(
      this.responseDuplex
        ? streamedBody('response_body', bodyOf(msg, 'response_body'), endOfStream)
        : continueBody('response_body'),
    );
  }

  responseTrailers(_msg: Buffer): void {
    this.send(continueTrailers('response_trailers'));
  }

  endOfInput(): void {
    this.envoy.finish(this.outcome);
  }

  dispose(): void {
    this.held = [];
    this.heldBytes = 0;
  }

  private sendHeadersResponse(): void {
    const dest = this.options.destination;
    this.send(
      dest === undefined
        ? continueHeaders('request_headers')
        : destinationHeadersResponse('request_headers', dest, this.options.parent ? { extraHeaders: PARENT_KIND_HEADERS } : {}),
    );
    this.envoy.decided(this.outcome);
  }

  private flushHeld(endOfStream: boolean): void {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (let i = 0; i < held.length; i++) {
      this.send(streamedBody('request_body', held[i]!, endOfStream && i === held.length - 1));
    }
  }

  /** Sends in order; when Envoy's side backs up, stop reading Envoy until it drains. */
  private send(msg: Buffer): void {
    if (this.envoy.send(msg) || this.paused) return;
    this.paused = true;
    this.envoy.pause();
    this.envoy.onDrain(() => {
      this.paused = false;
      this.envoy.resume();
    });
  }
}

function bodyOf(msg: Buffer, phase: BodyPhase): Buffer {
  return decodeRequest(msg)[phase]?.body ?? EMPTY;
}

const EMPTY = Buffer.alloc(0);
