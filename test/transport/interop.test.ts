import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { Client, credentials, Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import { H2Channel, type H2Call } from '../../src/transport/h2-channel.js';
import type { H2GrpcServer } from '../../src/transport/h2-server.js';
import { FAIL_DETAILS, pythonGrpcMissing, runPythonClient, startGrpcJsServer, startOurServer, startPythonServer } from './peers.js';

const identity = (b: Buffer): Buffer => b;

interface Outcome {
  messages: string[];
  error?: { code: number; details: string };
}

/** Runs one call to completion: writes `msgs`, half-closes, collects answers and the status. */
function finish(call: H2Call | EventEmitter, msgs: string[], end = true): Promise<Outcome> {
  const c = call as H2Call;
  const out: Outcome = { messages: [] };
  return new Promise((resolve) => {
    c.on('data', (m: Buffer) => out.messages.push(m.toString()));
    c.on('end', () => resolve(out));
    c.on('error', (e: ServiceError) => resolve({ ...out, error: { code: e.code, details: e.details } }));
    for (const m of msgs) c.write(Buffer.from(m));
    if (end) c.end();
  });
}

function channel(address: string): H2Channel {
  return new H2Channel(address, { maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, keepaliveTimeMs: 60_000, keepaliveTimeoutMs: 20_000 });
}

async function clientSuite(address: string): Promise<void> {
  const ch = channel(address);
  await ch.ready();
  const big = 'y'.repeat(70_000);
  expect(await finish(ch.call(EXT_PROC_PROCESS_PATH, {}), ['one', 'two', big])).toEqual({ messages: ['ONE', 'TWO', big.toUpperCase()] });
  expect(await finish(ch.call(EXT_PROC_PROCESS_PATH, {}), ['ok', 'fail'])).toEqual({
    messages: ['OK'],
    error: { code: Status.INVALID_ARGUMENT, details: FAIL_DETAILS },
  });
  const started = Date.now();
  const hung = await finish(ch.call(EXT_PROC_PROCESS_PATH, {}, 300), ['hang'], false);
  expect(hung.error?.code).toBe(Status.DEADLINE_EXCEEDED);
  expect(Date.now() - started).toBeLessThan(5000);
  expect((await finish(ch.call('/no.such.Service/Method', {}), ['x'])).error?.code).toBe(Status.UNIMPLEMENTED);
  ch.close();
}

describe('our server', () => {
  let ours: { server: H2GrpcServer; address: string };
  beforeAll(async () => {
    ours = await startOurServer();
  });
  afterAll(() => ours.server.destroy());

  it('serves a grpc-js client: bidi stream, status with a percent-encoded message, deadline, unknown method, size limit', async () => {
    const client = new Client(ours.address, credentials.createInsecure());
    const call = (path = EXT_PROC_PROCESS_PATH, deadline?: number) =>
      client.makeBidiStreamRequest(path, identity, identity, new Metadata(), deadline ? { deadline: Date.now() + deadline } : {});
    const big = 'z'.repeat(200_000);
    expect(await finish(call() as never, ['a', big, 'b'])).toEqual({ messages: ['A', big.toUpperCase(), 'B'] });
    expect(await finish(call() as never, ['ok', 'fail'])).toEqual({ messages: ['OK'], error: { code: Status.INVALID_ARGUMENT, details: FAIL_DETAILS } });
    expect((await finish(call(EXT_PROC_PROCESS_PATH, 300) as never, ['hang'], false)).error?.code).toBe(Status.DEADLINE_EXCEEDED);
    expect((await finish(call('/no.such.Service/Method') as never, ['x'])).error?.code).toBe(Status.UNIMPLEMENTED);
    const tooBig = await finish(call() as never, ['x'.repeat((1 << 20) + 1)]);
    expect(tooBig.error?.code).toBe(Status.RESOURCE_EXHAUSTED);
    client.close();
  });

  it('answers a deadline the client sets in grpc-timeout with DEADLINE_EXCEEDED (server-side timer)', async () => {
    // Only the header: the client sets no timer of its own, so the status is the server's.
    const ch = channel(ours.address);
    await ch.ready();
    const r = await finish(ch.call(EXT_PROC_PROCESS_PATH, { 'grpc-timeout': '200m' }), ['hang'], false);
    expect(r.error).toEqual({ code: Status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
    ch.close();
  });
});

describe('our client', () => {
  it('against a grpc-js server', async () => {
    const { server, address } = await startGrpcJsServer();
    try {
      await clientSuite(address);
    } finally {
      server.forceShutdown();
    }
  });

  it('fails a call at once with UNAVAILABLE naming the connect error when nothing listens', async () => {
    const ch = channel('127.0.0.1:1');
    await ch.ready();
    const r = await finish(ch.call(EXT_PROC_PROCESS_PATH, {}), ['x']);
    expect(r.error?.code).toBe(Status.UNAVAILABLE);
    expect(r.error?.details).toMatch(/No connection established.*ECONNREFUSED/);
    ch.close();
  });
});

const missing = pythonGrpcMissing();
if (missing !== null) console.warn(`SKIPPED interop with python3-grpcio: ${missing}`);

describe.skipIf(missing !== null)('interop with python3-grpcio (C-core)', () => {
  let python: { child: ChildProcess; address: string };
  let ours: { server: H2GrpcServer; address: string };
  beforeAll(async () => {
    python = await startPythonServer();
    ours = await startOurServer();
  });
  afterAll(() => {
    python.child.stdin?.end();
    python.child.kill();
    ours.server.destroy();
  });

  it('a Python client against our server: bidi stream, trailers with a status, deadline, unknown method, health', async () => {
    expect(await runPythonClient(ours.address)).toEqual({
      echo: ['ONE', 'TWO'],
      fail: ['INVALID_ARGUMENT', FAIL_DETAILS],
      deadline: 'DEADLINE_EXCEEDED',
      unknown: 'UNIMPLEMENTED',
      health: '0801',
    });
  }, 30_000);

  it('our client against a Python server: bidi stream, trailers with a status, deadline, unknown method', async () => {
    await clientSuite(python.address);
  }, 30_000);
});

describe('our client: GOAWAY and reconnects', () => {
  it('opens no new call on a session that received GOAWAY; the open call finishes on it; a later server is reached again', async () => {
    const first = await startOurServer();
    const port = first.address.split(':')[1]!;
    const ch = channel(first.address);
    await ch.ready();
    const open = ch.call(EXT_PROC_PROCESS_PATH, {});
    const done = finish(open, ['still here'], false);
    await new Promise((r) => open.once('data', r)); // the server has the call
    const draining = first.server.shutdown(); // GOAWAY; the listener closes
    await new Promise((r) => setTimeout(r, 100));
    // The new call does not go on the closing session: a new connection, refused (nothing listens now).
    await ch.ready();
    const refused = await finish(ch.call(EXT_PROC_PROCESS_PATH, {}), ['x']);
    expect(refused.error?.code).toBe(Status.UNAVAILABLE);
    expect(refused.error?.details).toMatch(/ECONNREFUSED/);
    // The call that was open before the GOAWAY completes on the old connection.
    open.write(Buffer.from('and done'));
    open.end();
    expect(await done).toEqual({ messages: ['STILL HERE', 'AND DONE'] });
    await draining;
    // A server back on the same port is used once the backoff has passed.
    const second = await startOurServerAt(`127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 600));
    await ch.ready();
    expect(await finish(ch.call(EXT_PROC_PROCESS_PATH, {}), ['back'])).toEqual({ messages: ['BACK'] });
    ch.close();
    second.destroy();
  });
});

async function startOurServerAt(address: string): Promise<H2GrpcServer> {
  const { server } = await startOurServer(1 << 20, address);
  return server;
}
