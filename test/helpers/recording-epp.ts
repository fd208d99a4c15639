// A bare ext_proc endpoint over TLS for credential tests: it records what reaches it
// (metadata and the first message's raw bytes) and answers that message with its
// own bytes, then ends. Optionally requires a client certificate (mTLS).
import * as grpc from '@grpc/grpc-js';

export interface RecordedCall {
  readonly metadata: Record<string, unknown>;
  readonly firstMessage: Buffer | undefined;
}

export interface RecordingEpp {
  readonly address: string;
  readonly port: number;
  readonly calls: RecordedCall[];
  stop(): void;
}

const raw = (b: Buffer): Buffer => b;
const PROCESS = {
  Process: {
    path: '/envoy.service.ext_proc.v3.ExternalProcessor/Process',
    requestStream: true,
    responseStream: true,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
} satisfies grpc.ServiceDefinition;

export async function startRecordingEpp(o: { cert: Buffer; key: Buffer; clientCa?: Buffer }): Promise<RecordingEpp> {
  const calls: RecordedCall[] = [];
  const server = new grpc.Server();
  server.addService(PROCESS, {
    Process: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      const rec: { metadata: Record<string, unknown>; firstMessage: Buffer | undefined } = { metadata: call.metadata.getMap(), firstMessage: undefined };
      calls.push(rec);
      call.once('data', (m: Buffer) => {
        rec.firstMessage = m;
        call.write(m);
        call.end();
      });
      call.on('error', () => {});
    },
  });
  const creds = grpc.ServerCredentials.createSsl(o.clientCa ?? null, [{ cert_chain: o.cert, private_key: o.key }], o.clientCa !== undefined);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))));
  return { address: `127.0.0.1:${port}`, port, calls, stop: () => server.forceShutdown() };
}
