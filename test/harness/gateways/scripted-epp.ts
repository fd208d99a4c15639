// A tiny ext_proc server for the gateway stand-ins' tests: each received message is answered
// with what a script returns for it; the stream ends with OK on the client's half-close.
// It records every stream's messages and the :authority it was called with.
import * as grpc from '@grpc/grpc-js';
import { ExternalProcessorService, toStruct, type JsonObject, type PbProcessingRequest, type PbProcessingResponse } from '../protos.js';

export type Script = (m: PbProcessingRequest, seen: readonly PbProcessingRequest[]) => PbProcessingResponse[];

export interface ScriptedStream {
  authority: string;
  received: PbProcessingRequest[];
}

export interface ScriptedEpp {
  readonly address: string;
  readonly streams: ScriptedStream[];
  setScript(s: Script): void;
  stop(): void;
}

export async function startScriptedEpp(script: Script, tls?: { cert: Buffer; key: Buffer }): Promise<ScriptedEpp> {
  let current = script;
  const streams: ScriptedStream[] = [];
  const server = new grpc.Server();
  server.addService(ExternalProcessorService, {
    Process: (call: grpc.ServerDuplexStream<PbProcessingRequest, PbProcessingResponse>) => {
      const rec: ScriptedStream = { authority: call.getHost(), received: [] };
      streams.push(rec);
      call.on('data', (m: PbProcessingRequest) => {
        rec.received.push(m);
        for (const r of current(m, rec.received)) call.write(r);
      });
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  const creds = tls ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: tls.cert, private_key: tls.key }]) : grpc.ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', creds, (e, p) => (e ? reject(e) : resolve(p))));
  return { address: `127.0.0.1:${port}`, streams, setScript: (s) => (current = s), stop: () => server.forceShutdown() };
}

/** How the destination goes out in a request_headers answer. */
export interface PickAnswer {
  header?: string;
  /** Put the header in `value` instead of `raw_value`. */
  headerAsValue?: boolean;
  metadata?: string;
  /** More request headers the answer sets (raw_value), e.g. a router's relay token. */
  headers?: Record<string, string>;
}

/** A request_headers answer carrying a pick (header and/or envoy.lb metadata). */
export function pickAnswer(a: PickAnswer): PbProcessingResponse {
  const key = 'x-gateway-destination-endpoint';
  const header = a.header === undefined ? undefined : a.headerAsValue ? { key, value: a.header } : { key, raw_value: Buffer.from(a.header) };
  const md: JsonObject | undefined = a.metadata === undefined ? undefined : { 'envoy.lb': { [key]: a.metadata } };
  const set = [...(header ? [{ header }] : []), ...Object.entries(a.headers ?? {}).map(([k, v]) => ({ header: { key: k, raw_value: Buffer.from(v) } }))];
  return {
    request_headers: { response: set.length > 0 ? { header_mutation: { set_headers: set } } : {} },
    ...(md ? { dynamic_metadata: toStruct(md) } : {}),
  };
}

/**
 * A picker answering like a GIE EPP in the gateway's processing mode: the pick in the
 * request_headers answer once the request's end is seen (headers with end_of_stream, the
 * body's last chunk, or trailers), then the body echoed back; response phases continue
 * unchanged (full duplex bodies echoed).
 */
export function pickingScript(pick: () => PickAnswer): Script {
  let fullDuplex = false;
  return (m) => {
    // The stream's first message tells its mode; none announced (a one-shot client) is not full duplex.
    if (m.request === 'request_headers') fullDuplex = m.protocol_config?.request_body_mode === 4;
    switch (m.request) {
      case 'request_headers':
        return m.request_headers?.end_of_stream || !fullDuplex ? [pickAnswer(pick())] : [];
      case 'request_body':
        if (!fullDuplex) return [{ request_body: { response: {} } }];
        return [
          ...(m.request_body?.end_of_stream ? [pickAnswer(pick())] : []),
          { request_body: { response: { body_mutation: { streamed_response: { body: m.request_body?.body ?? Buffer.alloc(0), end_of_stream: m.request_body?.end_of_stream ?? false } } } } },
        ];
      case 'request_trailers':
        return [{ request_trailers: {} }];
      case 'response_headers':
        return [{ response_headers: { response: {} } }];
      case 'response_body':
        if (!fullDuplex) return [{ response_body: { response: {} } }];
        return [{ response_body: { response: { body_mutation: { streamed_response: { body: m.response_body?.body ?? Buffer.alloc(0), end_of_stream: m.response_body?.end_of_stream ?? false } } } } }];
      case 'response_trailers':
        return [{ response_trailers: {} }];
      default:
        return [];
    }
  };
}
