/**
 * Envoy's ext_proc filter for one HTTP request, as envoy/envoy.yaml configures
 * it (headers SEND, bodies FULL_DUPLEX_STREAMED, trailers SEND,
 * failure_mode_allow false): the state machine of the exchange, after the
 * docs/protocol.md, section 1. It sends the ProcessingRequests the HTTP side
 * hands it, knows which response Envoy is waiting for, and turns each
 * ProcessingResponse into what Envoy would do: apply its mutation, pass on its
 * streamed_response bytes, or, for a response of the wrong type or order, a
 * body response without streamed_response or an empty one, a spurious-message
 * 500. A gRPC error is a 500 too; a stream the processor ends with OK is left
 * behind (Envoy continues without it).
 *
 * The HTTP side of the request (client and upstream) is its FilterTarget.
 */
import type { ImmediateResponse, ProcessingResponse } from '../src/protocol/codec.js';
import { BodySendMode, DESTINATION_ENDPOINT_SERVED_KEY, LB_METADATA_NAMESPACE } from '../src/protocol/constants.js';
import { fromStruct, toStruct, type JsonObject } from '../src/protocol/struct.js';
import { applyMutation, toHeaderValues, type HeaderList } from './envoy-headers.js';
import { ExtProcStream, type StreamEvent } from './ext-proc-stream.js';
import type { RouterConnections } from './router-connections.js';

/** What the filter has the HTTP side of the request do. */
export interface FilterTarget {
  /** The request headers are final (the request_headers response arrived): route the request upstream. */
  forwardUpstream(): void;
  /** Request body bytes the processor returned, for the upstream; `end`: the body is complete. */
  writeUpstreamBody(chunk: Buffer, end: boolean): void;
  /** The response headers are final: write the client's response head. */
  writeClientHead(): void;
  /** Response body bytes for the client; `end`: the response is complete. */
  writeClientBody(chunk: Buffer, end: boolean): void;
  /** The processor answered in the gateway's place (immediate_response). */
  immediateResponse(status: number, headers: HeaderList, body: Buffer, details: string): void;
  /** A reply Envoy generates itself (or a reset, once the client response has started). */
  localReply(status: number, detail: string): void;
}

export class ExtProcFilter {
  private readonly stream: ExtProcStream;
  private closed = false;

  // Request path.
  private requestHeaders: HeaderList = [];
  private hasBody = false;
  private requestHeadersAnswered = false;
  private requestBodyEnded = false;
  private lbMetadata: JsonObject = {};

  // Response path.
  private responseHeaders: HeaderList = [];
  private responseHeadersSent = false;
  private responseHeadersAnswered = false;
  private responseBodySent = false;
  /** The end of the upstream response went to the processor (or past it). */
  private responseEndSent = false;
  /** The processor went away during the response: the rest bypasses it (Envoy continues without it). */
  private bypass = false;

  constructor(
    connections: RouterConnections,
    private readonly target: FilterTarget,
  ) {
    this.stream = new ExtProcStream(connections);
  }

  /** The first message (it opens the exchange): `headers` is the list the processor's mutation is then applied to. */
  sendRequestHeaders(headers: HeaderList, hasBody: boolean): void {
    this.requestHeaders = headers;
    this.hasBody = hasBody;
    this.stream.send({
      request_headers: { headers: { headers: toHeaderValues(headers) }, end_of_stream: !hasBody },
      protocol_config: {
        request_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
        response_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
      },
    });
  }

  /** A chunk of the client's request body, sent as it arrives; the last one with `last`. */
  sendRequestBody(chunk: Buffer, last: boolean): void {
    this.stream.send({ request_body: { body: chunk, end_of_stream: last } });
  }

  /** The upstream response's headers (`headers` is the list the processor's mutation is then applied to). */
  sendResponseHeaders(headers: HeaderList, endOfStream: boolean, servedEndpoint: string): void {
    this.responseHeaders = headers;
    this.responseHeadersSent = true;
    this.responseEndSent = endOfStream;
    if (this.bypass) {
      this.responseHeadersAnswered = true;
      this.target.writeClientHead();
      return;
    }
    const metadata = { ...this.lbMetadata, [DESTINATION_ENDPOINT_SERVED_KEY]: servedEndpoint };
    this.stream.send({
      response_headers: { headers: { headers: toHeaderValues(headers) }, end_of_stream: endOfStream },
      metadata_context: { filter_metadata: { [LB_METADATA_NAMESPACE]: toStruct(metadata) } },
    });
  }

  /** A chunk of the upstream response body; the last one with `last`. */
  sendResponseBody(chunk: Buffer, last: boolean): void {
    if (last) this.responseEndSent = true;
    if (this.bypass) return this.target.writeClientBody(chunk, last);
    this.responseBodySent = true;
    this.stream.send({ response_body: { body: chunk, end_of_stream: last } });
  }

  /** Handles the processor's answers, in order, until close(). */
  async run(): Promise<void> {
    for await (const ev of this.stream) {
      if (this.closed) break;
      this.onEvent(ev);
    }
  }

  /** The request is done: half-close then reset the stream, stop handling answers. */
  close(): void {
    this.closed = true;
    this.stream.close();
  }

  private onEvent(ev: StreamEvent): void {
    switch (ev.kind) {
      case 'error':
        // status_on_error: 500 (failure_mode_allow: false in envoy.yaml).
        return this.target.localReply(500, `ext_proc_error_gRPC_error_${ev.code}{${ev.details}}`);
      case 'closed-ok':
        return this.processorGone();
      case 'message':
        return this.onMessage(ev.message);
    }
  }

  private onMessage(m: ProcessingResponse): void {
    switch (m.response) {
      case 'immediate_response':
        return this.immediateResponse(m.immediate_response!);
      case 'request_headers': {
        if (this.requestHeadersAnswered) return this.spurious('a second request_headers response');
        this.requestHeadersAnswered = true;
        applyMutation(this.requestHeaders, m.request_headers?.response?.header_mutation, true);
        const lb = m.dynamic_metadata?.fields?.[LB_METADATA_NAMESPACE];
        if (lb?.structValue) this.lbMetadata = { ...this.lbMetadata, ...fromStruct(lb.structValue) };
        return this.target.forwardUpstream();
      }
      case 'request_body': {
        const mutation = m.request_body?.response?.body_mutation;
        if (!this.requestHeadersAnswered) return this.spurious('a request_body response before the request_headers response');
        if (mutation?.mutation !== 'streamed_response' || !mutation.streamed_response) {
          return this.spurious('a request_body response without streamed_response in FULL_DUPLEX_STREAMED');
        }
        if (!this.hasBody || this.requestBodyEnded) return this.spurious('a request_body response after the body ended');
        const sr = mutation.streamed_response;
        if (sr.end_of_stream) this.requestBodyEnded = true;
        return this.target.writeUpstreamBody(Buffer.from(sr.body), sr.end_of_stream);
      }
      case 'response_headers': {
        if (!this.responseHeadersSent || this.responseHeadersAnswered) return this.spurious('an unexpected response_headers response');
        this.responseHeadersAnswered = true;
        applyMutation(this.responseHeaders, m.response_headers?.response?.header_mutation, false);
        return this.target.writeClientHead();
      }
      case 'response_body': {
        const mutation = m.response_body?.response?.body_mutation;
        if (!this.responseHeadersAnswered || !this.responseBodySent) return this.spurious('an unexpected response_body response');
        if (mutation?.mutation !== 'streamed_response' || !mutation.streamed_response) {
          return this.spurious('a response_body response without streamed_response in FULL_DUPLEX_STREAMED');
        }
        const sr = mutation.streamed_response;
        return this.target.writeClientBody(Buffer.from(sr.body), sr.end_of_stream);
      }
      default:
        // request_trailers / response_trailers were never sent; an empty response is spurious too.
        return this.spurious(`an unexpected ${m.response ?? 'empty'} response`);
    }
  }

  /** Accepted at any time; the client's response (a status below 200 becomes 200). */
  private immediateResponse(ir: ImmediateResponse): void {
    const headers: HeaderList = [];
    applyMutation(headers, ir.headers, false);
    const status = Math.max(200, ir.status?.code || 200);
    this.target.immediateResponse(status, headers, Buffer.from(ir.body ?? Buffer.alloc(0)), ir.details);
  }

  /** Envoy closes the stream and answers 500 (or resets a response already under way). */
  private spurious(what: string): void {
    this.target.localReply(500, `spurious ext_proc message: ${what}`);
  }

  /** The processor ended the stream with OK: Envoy continues without it. */
  private processorGone(): void {
    if (!this.requestHeadersAnswered) {
      // No destination header: the ORIGINAL_DST cluster has no host.
      return this.target.localReply(503, 'no healthy upstream (ext_proc stream closed before the headers response)');
    }
    if (this.hasBody && !this.requestBodyEnded) {
      return this.target.localReply(500, 'ext_proc stream closed before the request body was returned');
    }
    this.bypass = true;
    if (this.responseHeadersSent && !this.responseHeadersAnswered) {
      this.responseHeadersAnswered = true;
      this.target.writeClientHead();
    }
    // Body chunks already handed to the processor and not returned are lost, as with Envoy: the response ends here.
    if (this.responseEndSent && this.responseHeadersAnswered) this.target.writeClientBody(Buffer.alloc(0), true);
  }
}
