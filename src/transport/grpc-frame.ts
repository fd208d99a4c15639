/**
 * gRPC's length-prefixed messages on an HTTP/2 stream: a 1-byte compressed flag,
 * a 4-byte big-endian length, then the message. DATA frames split and join
 * messages freely, so the reader reassembles them: a message inside one chunk is
 * handed on as a view of that chunk (no copy); only a message spanning chunks is
 * copied, once, into a buffer of its exact size.
 */
import { status as Status } from '@grpc/grpc-js';

export const FRAME_HEADER_BYTES = 5;
/** Below this a message and its prefix are written as one buffer; above, as two (no copy of the message). */
const JOIN_BELOW_BYTES = 16 * 1024;

/** A message the peer may not send: the stream ends with this gRPC status. */
export class FrameError extends Error {
  constructor(
    readonly code: Status,
    message: string,
  ) {
    super(message);
  }
}

/** Writes `msg` with its prefix: one write for a small message, two for a large one (prefix, then the message itself, no copy). Returns the last write's result. */
export function writeMessage(out: { write(chunk: Buffer): boolean }, msg: Buffer): boolean {
  const len = msg.length;
  if (len < JOIN_BELOW_BYTES) {
    const joined = Buffer.allocUnsafe(FRAME_HEADER_BYTES + len);
    joined[0] = 0;
    joined.writeUInt32BE(len, 1);
    msg.copy(joined, FRAME_HEADER_BYTES);
    return out.write(joined);
  }
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  head[0] = 0;
  head.writeUInt32BE(len, 1);
  out.write(head);
  return out.write(msg);
}

/** The buffers writeMessage writes for `msg`. */
export function encodeMessage(msg: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  writeMessage({ write: (chunk) => parts.push(chunk) > 0 }, msg);
  return parts;
}

/**
 * Splits a stream of DATA chunks into messages; push() throws a FrameError on a
 * message it must refuse. pause() stops delivery at once, also of the messages
 * left in the chunk being read: they are kept (no copy) until resume().
 */
export class MessageReader {
  private paused = false;
  /** Inside push(): a resume() from a message handler just lets the loop go on. */
  private delivering = false;
  /** Chunks held back by a pause, the first read from `heldAt`. */
  private held: Buffer[] | undefined;
  private heldAt = 0;

  /** Bytes of a prefix not complete yet (a prefix split across chunks); allocated on the first split, as most streams never see one. */
  private head: Buffer | undefined;
  private headFill = 0;
  /** The message being assembled across chunks, and how much of it has arrived. */
  private body: Buffer | undefined;
  private bodyFill = 0;

  constructor(
    private readonly maxMessageBytes: number,
    private readonly onMessage: (msg: Buffer) => void,
  ) {}

  /** True when no message is partly read (a stream may end here). */
  get idle(): boolean {
    return this.headFill === 0 && this.body === undefined;
  }

  /** A pause holds back bytes not delivered yet. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  pause(): void {
    this.paused = true;
  }

  /** Delivers what the pause held back, until paused again. May throw a FrameError, as push(). */
  resume(): void {
    this.paused = false;
    if (this.delivering) return;
    while (this.held !== undefined && !this.paused) {
      const chunk = this.held.shift()!;
      const at = this.heldAt;
      this.heldAt = 0;
      if (this.held.length === 0) this.held = undefined;
      this.read(chunk, at);
    }
  }

  push(chunk: Buffer): void {
    if (this.held !== undefined) this.held.push(chunk);
    else this.read(chunk, 0);
  }

  private read(chunk: Buffer, from: number): void {
    this.delivering = true;
    try {
      this.readFrom(chunk, from);
    } finally {
      this.delivering = false;
    }
  }

  private readFrom(chunk: Buffer, from: number): void {
    let pos = from;
    const end = chunk.length;
    while (pos < end) {
      if (this.paused) {
        (this.held ??= []).unshift(chunk);
        this.heldAt = pos;
        return;
      }
      if (this.body !== undefined) {
        const take = Math.min(this.body.length - this.bodyFill, end - pos);
        chunk.copy(this.body, this.bodyFill, pos, pos + take);
        this.bodyFill += take;
        pos += take;
        if (this.bodyFill === this.body.length) this.deliver();
        continue;
      }
      let len: number;
      if (this.headFill === 0 && end - pos >= FRAME_HEADER_BYTES) {
        len = this.checkHeader(chunk[pos]!, chunk.readUInt32BE(pos + 1));
        pos += FRAME_HEADER_BYTES;
        if (end - pos >= len) {
          // The whole message is in this chunk: a view, no copy.
          const msg = chunk.subarray(pos, pos + len);
          pos += len;
          this.onMessage(msg);
          continue;
        }
      } else {
        const take = Math.min(FRAME_HEADER_BYTES - this.headFill, end - pos);
        const head = (this.head ??= Buffer.allocUnsafeSlow(FRAME_HEADER_BYTES));
        chunk.copy(head, this.headFill, pos, pos + take);
        this.headFill += take;
        pos += take;
        if (this.headFill < FRAME_HEADER_BYTES) return;
        this.headFill = 0;
        len = this.checkHeader(head[0]!, head.readUInt32BE(1));
        if (len === 0) {
          this.onMessage(Buffer.alloc(0));
          continue;
        }
      }
      this.body = Buffer.allocUnsafeSlow(len); // its own store: a held message pins no shared pool slab
      this.bodyFill = 0;
    }
  }

  private checkHeader(flag: number, len: number): number {
    if (flag !== 0) {
      // We never advertise grpc-accept-encoding, so a compressed message is the peer's error.
      throw new FrameError(flag === 1 ? Status.UNIMPLEMENTED : Status.INTERNAL, 'compressed messages are not supported');
    }
    if (len > this.maxMessageBytes) {
      throw new FrameError(
        Status.RESOURCE_EXHAUSTED,
        `received message larger than max (${len} vs. ${this.maxMessageBytes})`,
      );
    }
    return len;
  }

  private deliver(): void {
    const msg = this.body!;
    this.body = undefined;
    this.bodyFill = 0;
    this.onMessage(msg);
  }
}
