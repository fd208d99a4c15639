/**
 * SIMULATION: one ext_proc stream of the simulated EPP, handled as a GIE EPP
 * handles it in body mode FULL_DUPLEX_STREAMED: it reads the whole request
 * body, has its EPP pick a model server, answers request_headers with
 * x-gateway-destination-endpoint (raw_value) + clear_route_cache + the
 * envoy.lb dynamic metadata, then echoes the body as streamed_response; errors
 * come back as immediate_response (400 bad body, 503 no ready pods). The
 * response path is echoed the same way. Other body modes get plain CONTINUE.
 */
import { status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { decodeRequest, encodeResponse, headerValue, type ProcessingRequest } from '../src/protocol/codec.js';
import { BodySendMode } from '../src/protocol/constants.js';
import {
  continueBody,
  continueTrailers,
  destinationHeadersResponse,
  headerOption,
  immediateResponse,
  streamedBody,
} from '../src/protocol/responses.js';
import type { SimulatedEpp } from './sim-epp.js';

const ECHO_CHUNK_BYTES = 64 * 1024;

type Phase = 'request_headers' | 'request_body' | 'request_trailers' | 'response_headers' | 'response_body' | 'response_trailers';

/** One ext_proc stream: GIE's request handling in FULL_DUPLEX_STREAMED, plain CONTINUE otherwise. */
export class EppStream {
  private requestMode: number = BodySendMode.FULL_DUPLEX_STREAMED;
  private responseMode: number = BodySendMode.FULL_DUPLEX_STREAMED;
  private first = true;
  private method = '';
  private readonly body: Buffer[] = [];
  private decided = false;
  private done = false;

  constructor(
    private readonly call: ServerDuplexStream<Buffer, Buffer>,
    private readonly epp: SimulatedEpp,
    private readonly onClosed: () => void,
  ) {
    call.on('data', (msg: Buffer) => this.onMessage(msg));
    call.on('end', () => this.finish());
    call.on('cancelled', () => this.close());
    call.on('error', () => this.close());
  }

  /** The server is going away: forget the stream (forceShutdown resets it). */
  abandon(): void {
    this.close();
  }

  private onMessage(buf: Buffer): void {
    if (this.done) return;
    let msg: ProcessingRequest;
    try {
      msg = decodeRequest(buf);
    } catch {
      return this.fail('malformed ProcessingRequest');
    }
    if (this.first) {
      this.first = false;
      // Sent by Envoy 1.34+ on the first message; GIE assumes full duplex when it is absent.
      if (msg.protocol_config) {
        this.requestMode = msg.protocol_config.request_body_mode;
        this.responseMode = msg.protocol_config.response_body_mode;
      }
    }
    const fdRequest = this.requestMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const fdResponse = this.responseMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const phase = msg.request as Phase | undefined;
    switch (phase) {
      case 'request_headers': {
        this.method = headerValue(msg.request_headers?.headers, ':method') ?? '';
        // Without a body (or outside full duplex) the pick cannot wait for it.
        if (!fdRequest || msg.request_headers?.end_of_stream) this.decide(false);
        return;
      }
      case 'request_body': {
        const b = msg.request_body;
        if (!fdRequest) return this.send(continueBody('request_body'));
        if (this.decided) return this.send(streamedBody('request_body', b?.body ?? Buffer.alloc(0), b?.end_of_stream ?? false));
        this.body.push(Buffer.from(b?.body ?? Buffer.alloc(0)));
        if (b?.end_of_stream) this.decide(true);
        return;
      }
      case 'request_trailers':
        // In full duplex, trailers end a body that did not carry end_of_stream.
        if (fdRequest && !this.decided) this.decide(false);
        if (!this.done) this.send(encodeResponse({ request_trailers: {} }));
        return;
      case 'response_headers':
        return this.send(
          encodeResponse({
            response_headers: {
              response: { header_mutation: { set_headers: [headerOption('x-demo-picked-by', `${this.epp.opts.pool}-epp (${this.epp.opts.cluster})`)] } },
            },
          }),
        );
      case 'response_body': {
        const b = msg.response_body;
        if (!fdResponse) return this.send(continueBody('response_body'));
        return this.send(streamedBody('response_body', b?.body ?? Buffer.alloc(0), b?.end_of_stream ?? false));
      }
      case 'response_trailers':
        return this.send(continueTrailers('response_trailers'));
      default:
        return this.fail('ProcessingRequest without a request member');
    }
  }

  /** Checks the body, picks a pod, answers request_headers, then echoes what was read of the body. */
  private decide(bodyEnded: boolean): void {
    if (this.decided || this.done) return;
    this.decided = true;
    const fd = this.requestMode === BodySendMode.FULL_DUPLEX_STREAMED;
    const body = Buffer.concat(this.body);
    if (fd && body.length > 0) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        return this.immediate(400, 'request body is not a JSON object');
      }
      if (typeof (parsed as { model?: unknown }).model !== 'string') return this.immediate(400, 'model not found in request body');
    } else if (fd && this.method === 'POST') {
      return this.immediate(400, 'model not found in request body');
    }
    const pod = this.epp.pick();
    if (!pod) return this.immediate(503, `no ready endpoints in InferencePool ${this.epp.opts.pool} (${this.epp.opts.cluster})`);
    this.send(destinationHeadersResponse('request_headers', pod.endpoint));
    if (fd && body.length > 0) {
      for (let off = 0; off < body.length; off += ECHO_CHUNK_BYTES) {
        const piece = body.subarray(off, off + ECHO_CHUNK_BYTES);
        this.send(streamedBody('request_body', piece, bodyEnded && off + piece.length >= body.length));
      }
    } else if (fd && bodyEnded) {
      this.send(streamedBody('request_body', Buffer.alloc(0), true));
    }
  }

  private immediate(status: number, message: string): void {
    this.send(immediateResponse({ status, body: { error: { message, type: 'epp_error' } }, details: `demo_epp_${status}` }));
    this.finish();
  }

  private send(msg: Buffer): void {
    if (!this.done) this.call.write(msg);
  }

  /** Ends the stream with OK, like an EPP returning from Process. */
  private finish(): void {
    if (this.done) return;
    this.call.end();
    this.close();
  }

  private fail(details: string): void {
    if (this.done) return;
    this.call.emit('error', Object.assign(new Error(details), { code: GrpcStatus.INVALID_ARGUMENT, details }));
    this.close();
  }

  private close(): void {
    if (this.done) return;
    this.done = true;
    this.onClosed();
  }
}
