/**
 * An HTTP/2 client written frame by frame, for a peer no well-behaved library
 * lets a test be: one that opens ext_proc streams and resets them at once
 * (rapid reset), or opens more streams than the server allows, as fast as the
 * socket takes them. It reads back what the server sends on the connection
 * (SETTINGS, GOAWAY, RST_STREAM) and acks SETTINGS and PINGs.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const FRAME = { DATA: 0, HEADERS: 1, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8 } as const;
const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const;
export const ENHANCE_YOUR_CALM = 0xb;
export const CANCEL = 0x8;
export const NO_ERROR = 0x0;

function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(streamId & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

/** HPACK "literal header field without indexing": an indexed name (static table) or a new name. */
function literal(nameIndexOrName: number | string, value: string): Buffer {
  const v = Buffer.from(value);
  if (v.length > 126) throw new RangeError('value too long for this encoder');
  if (typeof nameIndexOrName === 'number') {
    const idx = nameIndexOrName < 15 ? Buffer.from([nameIndexOrName]) : Buffer.from([0x0f, nameIndexOrName - 15]);
    return Buffer.concat([idx, Buffer.from([v.length]), v]);
  }
  const n = Buffer.from(nameIndexOrName);
  return Buffer.concat([Buffer.from([0, n.length]), n, Buffer.from([v.length]), v]);
}

/** The request headers of a gRPC call to `path` (POST, https/http, content-type application/grpc). */
export function grpcRequestBlock(path: string, tls: boolean): Buffer {
  return Buffer.concat([
    Buffer.from([0x83, tls ? 0x87 : 0x86]), // :method POST, :scheme
    literal(4, path), // :path
    literal(1, 'router.test'), // :authority
    literal(31, 'application/grpc'), // content-type
    literal('te', 'trailers'),
  ]);
}

export interface RawH2Client {
  /**
   * Opens `count` streams (HEADERS only), each reset right after when `reset` (RST_STREAM with
   * `resetCode`, default CANCEL); written in batches. Resolves once written.
   */
  open(count: number, o: { reset: boolean; path?: string; resetCode?: number }): Promise<number>;
  /** Sends a PING and resolves on its ACK (or the connection's close): the server has read everything sent before it. */
  ping(): Promise<void>;
  /** The first GOAWAY the server sent, if any. */
  readonly goaway: { errorCode: number; lastStreamId: number } | undefined;
  /** RST_STREAMs the server sent. */
  readonly resetsReceived: number;
  /** Frames of any kind the server sent (0: closed before its SETTINGS). */
  readonly framesReceived: number;
  /** Resolves when the connection has closed. */
  readonly closed: Promise<void>;
  isClosed(): boolean;
  destroy(): void;
}

export const EXT_PROC_PATH = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';

/**
 * Connects to `host:port` (TLS with ALPN h2 and no verification when `tls`; from `localAddress`,
 * e.g. another loopback address to be another peer), sends the preface and an empty SETTINGS.
 */
export async function rawH2Connect(host: string, port: number, tls = false, localAddress?: string): Promise<RawH2Client> {
  const socket: Socket = await new Promise((resolve, reject) => {
    const from = localAddress === undefined ? {} : { localAddress };
    const s = tls
      ? tlsConnect({ host, port, ...from, ALPNProtocols: ['h2'], rejectUnauthorized: false, servername: 'router.test' }, () => resolve(s))
      : netConnect({ host, port, ...from }, () => resolve(s));
    s.once('error', reject);
  });
  socket.on('error', () => undefined);
  let nextId = 1;
  let pending = Buffer.alloc(0);
  let isClosed = false;
  let pongs: (() => void)[] = [];
  const client = {
    goaway: undefined as RawH2Client['goaway'],
    resetsReceived: 0,
    framesReceived: 0,
    closed: new Promise<void>((r) => socket.once('close', () => {
      isClosed = true;
      r();
    })),
    isClosed: () => isClosed,
    destroy: () => socket.destroy(),
    ping(): Promise<void> {
      if (isClosed) return Promise.resolve();
      return new Promise<void>((r) => {
        pongs.push(r);
        socket.once('close', () => r());
        socket.write(frame(FRAME.PING, 0, 0, Buffer.alloc(8)));
      });
    },
    async open(count: number, o: { reset: boolean; path?: string; resetCode?: number }): Promise<number> {
      const block = grpcRequestBlock(o.path ?? EXT_PROC_PATH, tls);
      const rst = Buffer.alloc(4);
      rst.writeUInt32BE(o.resetCode ?? CANCEL);
      let written = 0;
      while (written < count && !isClosed) {
        const batch: Buffer[] = [];
        for (let i = 0; i < 100 && written < count; i++, written++) {
          batch.push(frame(FRAME.HEADERS, FLAG.END_HEADERS, nextId, block));
          if (o.reset) batch.push(frame(FRAME.RST_STREAM, 0, nextId, rst));
          nextId += 2;
        }
        if (!socket.write(Buffer.concat(batch))) await new Promise<void>((r) => { socket.once('drain', r); socket.once('close', r); });
      }
      return written;
    },
  };
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const len = pending.readUIntBE(0, 3);
      if (pending.length < 9 + len) break;
      const type = pending[3]!;
      const flags = pending[4]!;
      const payload = pending.subarray(9, 9 + len);
      pending = pending.subarray(9 + len);
      client.framesReceived++;
      if (type === FRAME.SETTINGS && !(flags & FLAG.ACK)) socket.write(frame(FRAME.SETTINGS, FLAG.ACK, 0));
      else if (type === FRAME.PING && !(flags & FLAG.ACK)) socket.write(frame(FRAME.PING, FLAG.ACK, 0, payload));
      else if (type === FRAME.PING) {
        const waiting = pongs;
        pongs = [];
        for (const r of waiting) r();
      }
      else if (type === FRAME.GOAWAY) client.goaway ??= { lastStreamId: payload.readUInt32BE(0) & 0x7fffffff, errorCode: payload.readUInt32BE(4) };
      else if (type === FRAME.RST_STREAM) client.resetsReceived++;
    }
  });
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0), frame(FRAME.WINDOW_UPDATE, 0, 0, Buffer.from([0, 0x0f, 0, 0]))]));
  return client;
}
