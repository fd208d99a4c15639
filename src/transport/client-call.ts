/**
 * One gRPC call from the router to an EPP on node:http2, with the surface the
 * relay uses from a grpc-js client call: 'data' (one message each), 'end'
 * (status OK, after every message), 'error' (a ServiceError: code, details),
 * 'drain'; write() -> boolean; end() (half-close); pause/resume; cancel()
 * (RST_STREAM CANCEL).
 */
import { EventEmitter } from 'node:events';
import { constants as h2, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { status as Status } from '@grpc/grpc-js';
import { FrameError, MessageReader, writeMessage } from './grpc-frame.js';
import { callError, GRPC_CONTENT_TYPE, statusFromHttp, statusFromTrailers } from './grpc-status.js';

interface CallStatus {
  readonly code: Status;
  readonly details: string;
}

export class H2ClientCall extends EventEmitter {
  private readonly reader: MessageReader;
  private status: CallStatus | undefined;
  /** The call's outcome was reported ('end' or 'error'). */
  private reported = false;
  private readEnded = false;
  private closeSeen = false;
  private deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: ClientHttp2Stream,
    private readonly maxMessageBytes: number,
    timeoutMs?: number,
  ) {
    super();
    this.reader = new MessageReader(maxMessageBytes, (msg) => this.emit('data', msg));
    stream.on('response', this.onResponse);
    stream.on('data', this.onChunk);
    stream.on('trailers', (trailers: IncomingHttpHeaders) => {
      this.status ??= statusFromTrailers(trailers) ?? { code: Status.INTERNAL, details: 'trailers without grpc-status' };
    });
    stream.on('end', this.onReadEnd);
    stream.on('close', this.onClose);
    stream.on('drain', () => this.emit('drain'));
    stream.on('error', (err: Error) => {
      this.status ??= { code: Status.UNAVAILABLE, details: err.message };
    });
    if (timeoutMs !== undefined) {
      this.deadline = setTimeout(() => this.abort(Status.DEADLINE_EXCEEDED, 'Deadline exceeded'), timeoutMs);
    }
  }

  /** A call that fails on the next tick without reaching the peer (no connection). */
  static failed(code: Status, details: string): EventEmitter & Pick<H2ClientCall, 'write' | 'end' | 'pause' | 'resume' | 'cancel'> {
    const call = Object.assign(new EventEmitter(), {
      write: () => true,
      end() {},
      pause() {},
      resume() {},
      cancel() {},
    });
    process.nextTick(() => call.emit('error', callError(code, details)));
    return call;
  }

  write(msg: Buffer): boolean {
    if (this.reported || this.stream.destroyed) return true;
    if (msg.length > this.maxMessageBytes) {
      this.abort(Status.RESOURCE_EXHAUSTED, `sent message larger than max (${msg.length} vs. ${this.maxMessageBytes})`);
      return true;
    }
    return writeMessage(this.stream, msg);
  }

  /** Half-closes the call. */
  end(): void {
    if (!this.stream.destroyed) this.stream.end();
  }

  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    this.stream.resume();
  }

  /** RST_STREAM(CANCEL); the call reports CANCELLED. */
  cancel(): void {
    this.abort(Status.CANCELLED, 'Cancelled on client');
  }

  private abort(code: Status, details: string): void {
    if (this.reported) return;
    this.status = { code, details };
    if (!this.stream.destroyed) this.stream.close(h2.NGHTTP2_CANCEL);
    else this.report();
  }

  private readonly onResponse = (headers: IncomingHttpHeaders): void => {
    const httpStatus = Number(headers[h2.HTTP2_HEADER_STATUS]);
    const contentType = headers[h2.HTTP2_HEADER_CONTENT_TYPE];
    if (httpStatus !== 200) {
      this.status ??= { code: statusFromHttp(httpStatus), details: `HTTP status ${httpStatus} from the EPP` };
    } else if (typeof contentType !== 'string' || !contentType.startsWith(GRPC_CONTENT_TYPE)) {
      this.status ??= { code: Status.UNKNOWN, details: `content-type "${String(contentType)}" is not gRPC` };
    } else {
      // Trailers-only: the status comes with the headers.
      const s = statusFromTrailers(headers);
      if (s !== undefined) this.status ??= s;
      return;
    }
    this.stream.close(h2.NGHTTP2_CANCEL);
  };

  private readonly onChunk = (chunk: Buffer): void => {
    if (this.reported || this.status !== undefined) return;
    try {
      this.reader.push(chunk);
    } catch (err) {
      if (!(err instanceof FrameError)) throw err;
      this.abort(err.code, err.message);
    }
  };

  private readonly onReadEnd = (): void => {
    this.readEnded = true;
    if (this.closeSeen) {
      this.report();
      return;
    }
    // The EPP ended its side (status in the trailers) while ours may still be open: the call
    // is over (every message was read), and our side ends too.
    this.status ??= { code: Status.INTERNAL, details: 'the EPP ended the stream without a gRPC status' };
    this.report();
    this.endOwnSide();
  };

  /**
   * After the EPP's end: with nothing of ours still queued, an END_STREAM (no RST_STREAM, whose
   * native submit cost more than the rest of the call's close); with writes queued, which the
   * EPP will never read, RST_STREAM(NO_ERROR).
   */
  private endOwnSide(): void {
    const stream = this.stream;
    if (stream.closed || stream.destroyed || stream.writableFinished) return;
    if (stream.writableLength === 0 && !stream.writableEnded) stream.end();
    else stream.close(h2.NGHTTP2_NO_ERROR);
  }

  private readonly onClose = (): void => {
    this.closeSeen = true;
    if (this.deadline !== undefined) clearTimeout(this.deadline);
    if (this.status === undefined) {
      const code = this.stream.rstCode;
      this.status =
        code === h2.NGHTTP2_REFUSED_STREAM
          ? { code: Status.UNAVAILABLE, details: 'stream refused by the EPP (REFUSED_STREAM)' }
          : code === h2.NGHTTP2_CANCEL
            ? { code: Status.CANCELLED, details: 'stream cancelled by the EPP' }
            : { code: Status.INTERNAL, details: `stream closed without a gRPC status (HTTP/2 code ${code ?? 'none'})` };
    }
    // An OK status is reported once every message was read (a paused call may still hold some).
    if (this.status.code !== Status.OK || this.readEnded || !this.reader.idle) this.report();
  };

  private report(): void {
    if (this.reported) return;
    this.reported = true;
    const s = this.status!;
    if (s.code === Status.OK && !this.reader.idle) {
      this.emit('error', callError(Status.INTERNAL, 'the response ended inside a message'));
    } else if (s.code === Status.OK) {
      this.emit('end');
    } else {
      this.emit('error', callError(s.code, s.details));
    }
  }
}
