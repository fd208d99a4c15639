/**
 * The relay's side of a relay answer, as the relay's Envoy (envoy/relay.yaml) drives it: one
 * ext_proc stream to the router's relay verifier (listen.relay) per forwarded request, carrying
 * the request headers with the token the router put in its answer, the answer read, half-closed.
 * Used by bench/relay-hop.ts and by the Endpoint Picker role cell (bench/picker-role.ts).
 */
import { connect, type ClientHttp2Session } from 'node:http2';
import { decodeResponse, encodeRequest, headerValue } from '../../src/protocol/codec.js';
import { EXT_PROC_PROCESS_PATH, RELAY_TOKEN_HEADER } from '../../src/protocol/constants.js';
import { encodeMessage } from '../../src/transport/grpc-frame.js';
import { peekAnswer } from './wire-lite.js';

/** Envoy's request headers as the relay's Envoy sends them (after the gateway's), with `token`. */
export function verifierRequestHeaders(token: string): Buffer {
  const h = (key: string, v: string) => ({ key, raw_value: Buffer.from(v) });
  return encodeRequest({
    request_headers: {
      headers: {
        headers: [
          h(':authority', 'llm.example'), h(':path', '/v1/chat/completions'), h(':method', 'POST'), h(':scheme', 'http'),
          h('content-type', 'application/json'), h('content-length', '2048'), h('user-agent', 'openai-python/1.40.0'),
          h('authorization', `Bearer ${'t'.repeat(40)}`), h('x-forwarded-for', '10.0.0.7'), h('x-forwarded-proto', 'http'),
          h('x-request-id', '2b1f9e2c-8f7a-4c1e-9d4e-2f6c7a1b3c5d'), h(RELAY_TOKEN_HEADER, token),
        ],
      },
      end_of_stream: false,
    },
  });
}

/** The relay token a picker port's request-headers answer sets, if any. */
export function relayTokenOf(answer: Buffer): string | undefined {
  return headerValue(decodeResponse(answer).request_headers?.response?.header_mutation?.set_headers.map((o) => o.header!).filter((h) => h !== null), RELAY_TOKEN_HEADER);
}

/** ProcessingResponse.request_headers: the verifier's "forward" answer (a refusal is an immediate_response). */
const REQUEST_HEADERS_MEMBER = 1;

/** One plaintext HTTP/2 connection to a relay verifier, one ext_proc stream per `exchange`. */
export class VerifierClient {
  private readonly session: ClientHttp2Session;

  constructor(address: string) {
    this.session = connect(`http://${address}`);
    this.session.on('error', () => undefined);
  }

  /** Resolves undefined when the verifier answered "forward" with gRPC status 0, else why not. */
  exchange(token: string): Promise<string | undefined> {
    return new Promise((resolve) => {
      const s = this.session.request({ ':method': 'POST', ':path': EXT_PROC_PROCESS_PATH, 'content-type': 'application/grpc', te: 'trailers' });
      const chunks: Buffer[] = [];
      let result: string | undefined = 'the verifier ended the stream without a status';
      s.on('data', (c: Buffer) => chunks.push(c));
      s.on('trailers', (t) => {
        if (t['grpc-status'] !== '0') {
          result = `verifier status ${String(t['grpc-status'])}: ${String(t['grpc-message'] ?? '')}`;
          return;
        }
        const body = Buffer.concat(chunks);
        // One gRPC message: 5-byte prefix, then the ProcessingResponse.
        const member = body.length > 5 ? peekAnswer(body.subarray(5, 5 + body.readUInt32BE(1))).member : 0;
        result = member === REQUEST_HEADERS_MEMBER ? undefined : `the verifier refused the token (answer member ${member})`;
      });
      s.on('close', () => resolve(result));
      s.on('error', () => undefined);
      for (const part of encodeMessage(verifierRequestHeaders(token))) s.write(part);
      s.end();
    });
  }

  close(): void {
    this.session.close();
  }
}
