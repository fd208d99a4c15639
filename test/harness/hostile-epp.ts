// A hostile EPP on real sockets: a grpc-js ext_proc server that answers the request headers
// (in full duplex: once the request body is complete) with a ProcessingResponse the test
// chooses, then behaves like an EPP (echoes bodies as streamed_response, CONTINUE for headers
// and trailers) so the request can complete when the router relays the answer.
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { encodeResponse, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { readEnvoyMessage } from '../../src/protocol/envoy-message.js';
import { extProcRawService } from '../../src/protocol/services.js';

export interface HostileEppOptions {
  /** The answer to the request headers (a Buffer: sent as these exact wire bytes). */
  answer: () => Init<ProcessingResponse> | Buffer;
  /** The answer to the response headers (default CONTINUE). */
  responseHeaders?: () => Init<ProcessingResponse>;
}

export interface HostileEpp {
  readonly address: string;
  /** Streams opened so far. */
  readonly streams: number;
  stop(): Promise<void>;
}

export async function startHostileEpp(o: HostileEppOptions): Promise<HostileEpp> {
  const server = new Server();
  let streams = 0;
  server.addService(extProcRawService, {
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
      streams++;
      const send = (r: Init<ProcessingResponse> | Buffer) => call.write(Buffer.isBuffer(r) ? r : encodeResponse(r));
      let answered = false;
      const held: Buffer[] = [];
      const answer = () => {
        answered = true;
        send(o.answer());
        if (held.length > 0) send({ request_body: { response: { body_mutation: { streamed_response: { body: Buffer.concat(held), end_of_stream: true } } } } });
      };
      call.on('data', (msg: Buffer) => {
        const p = readEnvoyMessage(msg);
        switch (p.case) {
          case 'request_headers':
            if (p.endOfStream) answer();
            return;
          case 'request_body':
            held.push(Buffer.from(p.body));
            if (p.endOfStream && !answered) answer();
            return;
          case 'request_trailers':
            if (!answered) answer();
            send({ request_trailers: {} });
            return;
          case 'response_headers':
            send(o.responseHeaders?.() ?? { response_headers: {} });
            return;
          case 'response_body':
            send({ response_body: { response: { body_mutation: { streamed_response: { body: p.body, end_of_stream: p.endOfStream } } } } });
            return;
          case 'response_trailers':
            send({ response_trailers: {} });
            return;
          default:
            return;
        }
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    address: `127.0.0.1:${port}`,
    get streams() {
      return streams;
    },
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
