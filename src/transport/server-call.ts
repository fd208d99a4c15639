/**
 * One gRPC call on the router's HTTP/2 server, with the surface the ext_proc
 * stream uses from a grpc-js server call: 'data' (one message each), 'end'
 * (the client half-closed), 'cancelled' (reset, deadline, or a message we
 * refused), 'error'; write() -> false + 'drain'; pause/resume; end() (status
 * OK); emitting an 'error' that has a gRPC code ends the call with that status.
 */
import { EventEmitter } from 'node:events';
import { constants as h2, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import { Metadata, status as Status } from '@grpc/grpc-js';
import { FrameError, MessageReader, writeMessage } from './grpc-frame.js';
import { encodeGrpcMessage, GRPC_CONTENT_TYPE } from './grpc-status.js';

const RESPONSE_HEADERS = { [h2.HTTP2_HEADER_STATUS]: 200, [h2.HTTP2_HEADER_CONTENT_TYPE]: GRPC_CONTENT_TYPE };

export class H2ServerCall extends EventEmitter {
  private readonly reader: MessageReader;
  private headersSent = false;
  /** The status was sent (or the stream is gone): nothing more goes out. */
  private finished = false;
  private deadline: NodeJS.Timeout | undefined;
  private meta: Metadata | undefined;
  /** The client half-closed while a pause held back messages: 'end' follows them. */
  private endHeld = false;

  constructor(
    private readonly stream: ServerHttp2Stream,
    /** The request headers as received. */
    readonly requestHeaders: IncomingHttpHeaders,
    private readonly maxMessageBytes: number,
    timeoutMs: number | undefined,
  ) {
    super();
    this.reader = new MessageReader(maxMessageBytes, (msg) => this.emit('data', msg));
    stream.on('data', this.onChunk);
    stream.on('end', this.onHalfClose);
    stream.on('close', this.onClose);
    stream.on('drain', () => this.emit('drain'));
    stream.on('error', () => {
      // A stream error is followed by 'close', which reports the call cancelled.
    });
    this.on('error', this.onOwnError);
    if (timeoutMs !== undefined) {
      this.deadline = setTimeout(() => {
        this.deadline = undefined;
        this.sendStatus(Status.DEADLINE_EXCEEDED, 'Deadline exceeded');
        this.emit('cancelled');
      }, timeoutMs);
    }
  }

  /** The request's metadata (built on first use). */
  get metadata(): Metadata {
    this.meta ??= Metadata.fromHttp2Headers(this.requestHeaders);
    return this.meta;
  }

  write(msg: Buffer): boolean {
    if (this.finished) return true;
    if (msg.length > this.maxMessageBytes) {
      this.sendStatus(Status.RESOURCE_EXHAUSTED, `sent message larger than max (${msg.length} vs. ${this.maxMessageBytes})`);
      this.emit('cancelled');
      return true;
    }
    this.sendHeaders();
    return writeMessage(this.stream, msg);
  }

  /** Ends the call with status OK. */
  end(): void {
    this.sendStatus(Status.OK, '');
  }

  /** Stops the messages: also those left in the chunk being read (grpc-frame.ts). */
  pause(): void {
    this.reader.pause();
    this.stream.pause();
  }

  resume(): void {
    if (this.finished) return;
    this.read(() => this.reader.resume());
    if (this.finished || this.reader.holding) return;
    if (this.endHeld) {
      this.endHeld = false;
      this.onHalfClose();
      return;
    }
    this.stream.resume();
  }

  /** Ends the call with `code` (trailers, or trailers-only when nothing was sent yet). */
  sendStatus(code: Status, details: string): void {
    if (this.finished) return;
    this.finished = true;
    this.clearDeadline();
    const stream = this.stream;
    if (stream.destroyed || stream.closed) return;
    const trailers: Record<string, string | number> = { 'grpc-status': code };
    if (details !== '') trailers['grpc-message'] = encodeGrpcMessage(details);
    if (!this.headersSent) {
      this.headersSent = true;
      stream.respond({ ...RESPONSE_HEADERS, ...trailers }, { endStream: true });
      return;
    }
    stream.once('wantTrailers', () => stream.sendTrailers(trailers));
    stream.end();
  }

  private sendHeaders(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    this.stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  }

  private readonly onChunk = (chunk: Buffer): void => {
    if (!this.finished) this.read(() => this.reader.push(chunk));
  };

  /** Runs a step of the reader; a message it must refuse ends the call. */
  private read(step: () => void): void {
    try {
      step();
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      this.sendStatus(err.code, err.message);
      this.emit('cancelled');
    }
  }

  private readonly onHalfClose = (): void => {
    if (this.finished) return;
    if (this.reader.holding) {
      this.endHeld = true; // the half-close comes after the messages a pause holds back
      return;
    }
    if (!this.reader.idle) {
      this.sendStatus(Status.INTERNAL, 'the request ended inside a message');
      this.emit('cancelled');
      return;
    }
    this.emit('end');
  };

  private readonly onClose = (): void => {
    this.clearDeadline();
    if (this.finished) return;
    this.finished = true;
    this.emit('cancelled');
  };

  /** An 'error' with a gRPC code, emitted by the call's user, ends the call with that status. */
  private readonly onOwnError = (err: { code?: unknown; details?: unknown; message?: string }): void => {
    const code = typeof err.code === 'number' ? (err.code as Status) : Status.INTERNAL;
    this.sendStatus(code, typeof err.details === 'string' ? err.details : (err.message ?? ''));
  };

  private clearDeadline(): void {
    if (this.deadline === undefined) return;
    clearTimeout(this.deadline);
    this.deadline = undefined;
  }
}
