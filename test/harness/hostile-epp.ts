// A hostile EPP on real sockets: a grpc-js ext_proc server that answers the request headers with a
// ProcessingResponse the test chooses, and otherwise behaves like an EPP in the stream's processing
// mode (read from the first message's protocol_config): in FULL_DUPLEX_STREAMED it holds the headers
// answer until the request body is complete and echoes bodies as streamed_response; in the other
// modes it answers each message at once (CONTINUE). `inject` scripts spurious answers: messages it
// sends just before it reacts to one of Envoy's messages.
import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { decodeRequest, encodeResponse, type Init, type ProcessingResponse } from '../../src/protocol/codec.js';
import { BodySendMode } from '../../src/protocol/constants.js';
import { readEnvoyMessage } from '../../src/protocol/envoy-message.js';
import type { PhaseName } from '../../src/protocol/phases.js';
import { extProcRawService } from '../../src/protocol/services.js';

export type EppReply = Init<ProcessingResponse> | Buffer;

export interface HostileEppOptions {
  /** The answer to the request headers (a Buffer: sent as these exact wire bytes). */
  answer: () => EppReply;
  /** The answer to the response headers (default CONTINUE). */
  responseHeaders?: () => Init<ProcessingResponse>;
  /** Sent when Envoy's message of a phase arrives, before the EPP's own reaction to it (once per stream). */
  inject?: Partial<Record<PhaseName, () => EppReply[]>>;
}

export interface HostileEpp {
  readonly address: string;
  /** Streams opened so far. */
  readonly streams: number;
  stop(): Promise<void>;
}

const streamed = (phase: 'request_body' | 'response_body', body: Buffer, eos: boolean): Init<ProcessingResponse> => ({
  [phase]: { response: { body_mutation: { streamed_response: { body, end_of_stream: eos } } } },
});

export async function startHostileEpp(o: HostileEppOptions): Promise<HostileEpp> {
  const server = new Server();
  let streams = 0;
  server.addService(extProcRawService, {
    Process: (call: ServerDuplexStream<Buffer, Buffer>) => {
      streams++;
      const send = (r: EppReply) => call.write(Buffer.isBuffer(r) ? r : encodeResponse(r));
      let first = true;
      let duplexRequest = false;
      let duplexResponse = false;
      let answered = false;
      const injected = new Set<PhaseName>();
      const held: Buffer[] = [];
      const answer = () => {
        answered = true;
        send(o.answer());
        if (held.length > 0) send(streamed('request_body', Buffer.concat(held), true));
      };
      call.on('data', (msg: Buffer) => {
        if (first) {
          first = false;
          const pc = decodeRequest(msg).protocol_config;
          duplexRequest = pc?.request_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
          duplexResponse = pc?.response_body_mode === BodySendMode.FULL_DUPLEX_STREAMED;
        }
        const p = readEnvoyMessage(msg);
        if (p.case === 'none') return;
        const script = o.inject?.[p.case];
        if (script !== undefined && !injected.has(p.case)) {
          injected.add(p.case);
          for (const r of script()) send(r);
        }
        switch (p.case) {
          case 'request_headers':
            if (p.endOfStream || !duplexRequest) answer();
            return;
          case 'request_body':
            if (!duplexRequest) return void send({ request_body: {} });
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
            send(duplexResponse ? streamed('response_body', p.body, p.endOfStream) : { response_body: {} });
            return;
          case 'response_trailers':
            send({ response_trailers: {} });
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
