/**
 * One ext_proc stream (envoy.service.ext_proc.v3.ExternalProcessor/Process)
 * from the front door to mcip-router, as Envoy opens one per HTTP request on
 * its connection to the processor (router-connections.ts rotates connections
 * like envoy.yaml): ProcessingRequests go out; the ProcessingResponses and the
 * way the stream ended come back as one ordered sequence of events.
 */
import { status as GrpcStatus, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import { decodeResponse, encodeRequest, type Init, type ProcessingRequest, type ProcessingResponse } from '../src/protocol/codec.js';
import { EXT_PROC_PROCESS_PATH } from '../src/protocol/constants.js';
import { AsyncQueue } from './async-queue.js';
import type { ConnectionLease, RouterConnections } from './router-connections.js';

export type StreamEvent =
  | { kind: 'message'; message: ProcessingResponse }
  /** The processor ended the stream with OK. */
  | { kind: 'closed-ok' }
  /** The stream failed (or a response could not be decoded). */
  | { kind: 'error'; code: number; details: string };

const identity = (b: Buffer): Buffer => b;

export class ExtProcStream implements AsyncIterable<StreamEvent> {
  private readonly call: ClientDuplexStream<Buffer, Buffer>;
  /** The connection the stream runs on, released when the stream is closed. */
  private readonly connection: ConnectionLease;
  /** Ends only through close(): after closed-ok or error nothing more arrives anyway. */
  private readonly events = new AsyncQueue<StreamEvent>();
  /** The stream has its final status: nothing can be sent any more. */
  private ended = false;
  private closed = false;

  constructor(connections: RouterConnections) {
    this.connection = connections.lease();
    const call = this.connection.client.makeBidiStreamRequest(EXT_PROC_PROCESS_PATH, identity, identity);
    this.call = call;
    call.on('data', (buf: Buffer) => {
      let message: ProcessingResponse;
      try {
        message = decodeResponse(buf);
      } catch {
        this.events.push({ kind: 'error', code: GrpcStatus.INTERNAL, details: 'malformed ProcessingResponse' });
        return;
      }
      this.events.push({ kind: 'message', message });
    });
    call.on('error', () => undefined); // reported through 'status'
    call.on('status', (s: StatusObject) => {
      if (this.ended) return;
      this.ended = true;
      this.events.push(s.code === GrpcStatus.OK ? { kind: 'closed-ok' } : { kind: 'error', code: s.code, details: s.details });
    });
  }

  /** Sends a ProcessingRequest, unless the stream has ended or was closed. */
  send(msg: Init<ProcessingRequest>): void {
    if (!this.ended && !this.closed) this.call.write(encodeRequest(msg));
  }

  [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    return this.events[Symbol.asyncIterator]();
  }

  /** The request is done: half-close then reset the stream (as Envoy does), end the events, release the connection. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.ended) {
      this.call.end();
      this.call.cancel();
    }
    this.events.end();
    this.connection.release();
  }
}
