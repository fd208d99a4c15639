/**
 * An OTLP trace receiver for tests, over real sockets: OTLP/HTTP (POST /v1/traces,
 * application/x-protobuf) and OTLP/gRPC (TraceService/Export). Each request is decoded
 * with protobufjs from the OTLP proto (test/fixtures/otlp) into plain spans.
 */
import * as grpc from '@grpc/grpc-js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const PROTO = fileURLToPath(new URL('../fixtures/otlp/trace-service.proto', import.meta.url));
const root = protobuf.loadSync(PROTO);
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const Response = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

export type AttrValue = string | number | boolean | AttrValue[];

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Record<string, AttrValue>;
  readonly events: { readonly name: string; readonly attributes: Record<string, AttrValue> }[];
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string };
  readonly resource: Record<string, AttrValue>;
}

interface RawKv {
  key: string;
  value?: RawAny;
}
interface RawAny {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: RawAny[] };
}

function anyValue(v: RawAny | undefined): AttrValue {
  if (v === undefined) return '';
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(anyValue);
  return '';
}

function attrs(kvs: RawKv[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of kvs ?? []) out[kv.key] = anyValue(kv.value);
  return out;
}

const hex = (b: Uint8Array | undefined): string => Buffer.from(b ?? []).toString('hex');

/** The spans of one encoded ExportTraceServiceRequest. */
export function decodeExport(body: Uint8Array): ReceivedSpan[] {
  const msg = Request.toObject(Request.decode(body), { longs: String, defaults: false }) as {
    resourceSpans?: { resource?: { attributes?: RawKv[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
  };
  const out: ReceivedSpan[] = [];
  for (const rs of msg.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const status = (s.status ?? {}) as { code?: number; message?: string };
        out.push({
          traceId: hex(s.traceId as Uint8Array),
          spanId: hex(s.spanId as Uint8Array),
          parentSpanId: hex(s.parentSpanId as Uint8Array | undefined),
          name: s.name as string,
          kind: (s.kind as number | undefined) ?? 0,
          attributes: attrs(s.attributes as RawKv[] | undefined),
          events: ((s.events as { name: string; attributes?: RawKv[] }[] | undefined) ?? []).map((e) => ({ name: e.name, attributes: attrs(e.attributes) })),
          status: { code: status.code ?? 0, message: status.message ?? '' },
          resource,
        });
      }
    }
  }
  return out;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT: the base URL (OTLP/HTTP posts to /v1/traces; OTLP/gRPC dials it). */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Export requests received. */
  readonly requests: number;
  close(): Promise<void>;
}

/** OTLP/HTTP with protobuf bodies, as a collector's otlp receiver on 4318 (here on `port`, by default a free one). */
export async function startOtlpHttpReceiver(port = 0): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/x-protobuf') {
        res.writeHead(404).end();
        return;
      }
      requests += 1;
      spans.push(...decodeExport(Buffer.concat(chunks)));
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(Response.encode(Response.create({})).finish()));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    spans,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** OTLP/gRPC, as a collector's otlp receiver on 4317 (plaintext). */
export async function startOtlpGrpcReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  const server = new grpc.Server();
  const passThrough = (b: Buffer): Buffer => b;
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: passThrough,
        requestDeserialize: passThrough,
        responseSerialize: passThrough,
        responseDeserialize: passThrough,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        requests += 1;
        spans.push(...decodeExport(call.request));
        callback(null, Buffer.from(Response.encode(Response.create({})).finish()));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get requests() {
      return requests;
    },
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}
