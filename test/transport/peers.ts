/**
 * The peers of the transport's interop tests: one behaviour (echo upper-cased,
 * "fail" -> INVALID_ARGUMENT with a message that needs percent-encoding, "hang"
 * -> no answer) served by our node:http2 server and by grpc-js, and the
 * python3-grpcio (C-core) peer in grpc_peer.py.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Server, ServerCredentials, status as Status, type ServerDuplexStream } from '@grpc/grpc-js';
import { extProcRawService } from '../../src/protocol/services.js';
import { createH2GrpcServer, type H2GrpcServer } from '../../src/transport/h2-server.js';
import type { H2ServerCall } from '../../src/transport/server-call.js';

export const FAIL_DETAILS = 'bad input: 100% wrong ü';
const PYTHON = '/usr/bin/python3';
const PEER = fileURLToPath(new URL('./grpc_peer.py', import.meta.url));

/** Null when python3-grpcio is usable, else why not. */
export function pythonGrpcMissing(): string | null {
  const r = spawnSync(PYTHON, ['-c', 'import grpc'], { encoding: 'utf8' });
  return r.status === 0 ? null : `python3-grpcio is not installed (apt-get install -y python3-grpcio): ${r.error?.message ?? r.stderr.trim()}`;
}

type Call = Pick<H2ServerCall, 'write' | 'end' | 'on'> & { emit(event: 'error', err: Error): boolean };

function behave(call: Call): void {
  let hung = false;
  call.on('data', (msg: Buffer) => {
    const text = msg.toString();
    if (text === 'fail') {
      call.emit('error', Object.assign(new Error(FAIL_DETAILS), { code: Status.INVALID_ARGUMENT, details: FAIL_DETAILS }));
    } else if (text === 'hang') {
      hung = true;
    } else {
      call.write(Buffer.from(text.toUpperCase()));
    }
  });
  call.on('end', () => {
    if (!hung) call.end();
  });
}

export async function startOurServer(maxMessageBytes = 1 << 20, listen = '127.0.0.1:0'): Promise<{ server: H2GrpcServer; address: string }> {
  const server = createH2GrpcServer({
    maxMessageBytes,
    streamResetBurst: 1000,
    streamResetRate: 33,
    process: (call) => behave(call),
    healthStatus: (service) => (service === '' ? 1 : undefined),
    watch: () => {},
  });
  return { server, address: await server.listen(listen) };
}

export async function startGrpcJsServer(): Promise<{ server: Server; address: string }> {
  const server = new Server();
  server.addService(extProcRawService, { Process: (call: ServerDuplexStream<Buffer, Buffer>) => behave(call as never) });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return { server, address: `127.0.0.1:${port}` };
}

export async function startPythonServer(): Promise<{ child: ChildProcess; address: string }> {
  const child = spawn(PYTHON, [PEER, 'server'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
  });
  return { child, address: `127.0.0.1:${port}` };
}

/** Runs the Python client against `address`; resolves to what it printed. */
export function runPythonClient(address: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [PEER, 'client', address], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`python client exited ${code}: ${err}`))));
  });
}
