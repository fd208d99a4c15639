/**
 * How our client call ends its side when the server sends its status first (an
 * EPP that answers and ends before the router half-closes), over a real
 * node:http2 connection.
 */
import { once } from 'node:events';
import { constants as h2, createServer, type Http2Server, type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { encodeMessage } from '../../src/transport/grpc-frame.js';
import { H2Channel } from '../../src/transport/h2-channel.js';
import { eventually } from '../helpers/eventually.js';

const PREFACE_BYTES = 24;
const RST_STREAM = 0x3;

/** A TCP relay to `target` that counts the HTTP/2 frame types the client sends (h2c, prior knowledge). */
async function frameCounter(target: string): Promise<{ address: string; sent: Map<number, number>; server: TcpServer }> {
  const sent = new Map<number, number>();
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const server = createTcpServer((client) => {
    const upstream = connect(port, host);
    let pending = Buffer.alloc(0);
    let skip = PREFACE_BYTES;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (skip > 0) {
          const n = Math.min(skip, pending.length);
          pending = pending.subarray(n);
          skip -= n;
          if (skip > 0) return;
        }
        if (pending.length < 9) return;
        const type = pending[3]!;
        sent.set(type, (sent.get(type) ?? 0) + 1);
        skip = 9 + pending.readUIntBE(0, 3);
      }
    });
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, sent, server };
}

interface Seen {
  /** The client's END_STREAM arrived (the request side ended cleanly). */
  clientEnded: boolean;
  /** The client reset the stream (RST_STREAM) instead. */
  aborted: boolean;
  rstCode: number | undefined;
}

let server: Http2Server | undefined;
let relay: TcpServer | undefined;
let channel: H2Channel | undefined;
const sessions = new Set<ServerHttp2Session>();

afterEach(async () => {
  channel?.close();
  relay?.close();
  for (const session of sessions) session.destroy();
  sessions.clear();
  if (server) await new Promise((r) => server!.close(r));
  server = channel = relay = undefined;
});

/**
 * A server that answers the first message with one message and status OK without waiting
 * for the client's end; with `stopReading`, it reads nothing more (its flow-control window closes).
 */
async function answerFirst(stopReading = false): Promise<{ address: string; seen: Promise<Seen> }> {
  let report!: (s: Seen) => void;
  const seen = new Promise<Seen>((r) => (report = r));
  server = createServer();
  server.on('session', (session) => sessions.add(session));
  server.on('stream', (stream: ServerHttp2Stream) => {
    const s: Seen = { clientEnded: false, aborted: false, rstCode: undefined };
    stream.on('end', () => (s.clientEnded = true));
    stream.on('aborted', () => (s.aborted = true));
    stream.on('error', () => {});
    stream.on('close', () => report({ ...s, rstCode: stream.rstCode }));
    stream.once('data', () => {
      if (stopReading) stream.pause();
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': 0 }));
      for (const part of encodeMessage(Buffer.from('answer'))) stream.write(part);
      stream.end();
    });
    stream.resume();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { address: `127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function callOnce(address: string, writeMore: boolean): Promise<{ messages: string[]; outcome: string }> {
  channel = new H2Channel(address, { maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, keepaliveTimeMs: 60_000, keepaliveTimeoutMs: 20_000 });
  await channel.ready();
  const call = channel.call(EXT_PROC_PROCESS_PATH, {});
  const messages: string[] = [];
  call.on('data', (m: Buffer) => messages.push(m.toString()));
  const outcome = new Promise<string>((resolve) => {
    call.on('end', () => resolve('end'));
    call.on('error', (e: { code: number }) => resolve(`error ${e.code}`));
  });
  call.write(Buffer.from('question'));
  if (writeMore) {
    // Far more than the server's flow-control window: most of it stays queued on our side.
    for (let i = 0; i < 8; i++) call.write(Buffer.alloc(256 * 1024, i));
  }
  return { messages, outcome: await outcome };
}

describe('H2ClientCall after the server ended first', () => {
  it('ends its own side with END_STREAM, not RST_STREAM, when nothing of its own is queued', async () => {
    const { address, seen } = await answerFirst();
    const counter = await frameCounter(address);
    relay = counter.server;
    const { messages, outcome } = await callOnce(counter.address, false);
    expect(messages).toEqual(['answer']);
    expect(outcome).toBe('end');
    expect(await seen).toEqual({ clientEnded: true, aborted: false, rstCode: h2.NGHTTP2_NO_ERROR });
    expect(counter.sent.get(RST_STREAM) ?? 0).toBe(0);
  });

  it('resets the stream (NO_ERROR) when its writes are still queued, so the stream does not wait for a reader that is gone', async () => {
    const { address } = await answerFirst(true);
    const counter = await frameCounter(address);
    relay = counter.server;
    const { messages, outcome } = await callOnce(counter.address, true);
    expect(messages).toEqual(['answer']);
    expect(outcome).toBe('end');
    await eventually(() => expect(counter.sent.get(RST_STREAM)).toBe(1));
  });
});

describe('H2Channel.call with headers node:http2 refuses to send', () => {
  it('fails that call only: the connection stays in use for the next calls, and no second one is opened', async () => {
    const { address } = await answerFirst();
    channel = new H2Channel(address, { maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, keepaliveTimeMs: 60_000, keepaliveTimeoutMs: 20_000 });
    await channel.ready();
    // A single-value header twice: session.request() throws ERR_HTTP2_HEADER_SINGLE_VALUE.
    const twice: Record<string, string[]> = { authorization: ['a', 'b'] };
    const bad = channel.call(EXT_PROC_PROCESS_PATH, twice);
    const [err] = (await once(bad, 'error')) as [{ details: string }];
    expect(err.details).toContain('authorization');
    await channel.ready();
    const good = channel.call(EXT_PROC_PROCESS_PATH, {});
    const messages: string[] = [];
    good.on('data', (m: Buffer) => messages.push(m.toString()));
    const ended = once(good, 'end');
    good.write(Buffer.from('question'));
    await ended;
    expect(messages).toEqual(['answer']);
    expect(sessions.size).toBe(1);
  });
});
