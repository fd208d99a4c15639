/**
 * A minimal, fast Endpoint Picker for the benchmarks (its own process), built
 * so the EPP is never the bottleneck: raw Buffers, no protobuf decoder, pre-
 * encoded answers. FULL_DUPLEX_STREAMED as a GIE EPP does it: hold request
 * headers until the body ends, then answer the destination and echo the body as
 * streamed_response; CONTINUE response headers; echo the response body.
 *
 * Serves ext_proc on `--ports N` ports (one per pool, like separate EPPs), gRPC
 * health (SERVING for every service) on each, a Prometheus /metrics endpoint
 * for `--pools a,b` and a TCP port standing in for a remote parent Gateway
 * (Parent mode's parent probe). Announces {ports, metricsPort, gatewayPort}.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { Server, ServerCredentials, type ServerDuplexStream, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { extProcRawService, healthService } from '../../src/protocol/services.js';
import { continueHeaders, continueTrailers, destinationHeadersResponse } from '../../src/protocol/responses.js';
import { httpBody, REQ, requestMember, streamedResponse, type Member } from '../lib/wire-lite.js';
import { serveRpc } from '../lib/rpc.js';

const MAX = 16 * 1024 * 1024;

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

const portCount = Number(flag('--ports', '1'));
const pools = flag('--pools', 'llm').split(',');

const CONTINUE_RESPONSE_HEADERS = continueHeaders('response_headers');
const CONTINUE_REQUEST_TRAILERS = continueTrailers('request_trailers');
const CONTINUE_RESPONSE_TRAILERS = continueTrailers('response_trailers');

let openStreams = 0;
let streamsTotal = 0;

/** HttpHeaders.end_of_stream (3) inside a request_headers member. */
function headersEnd(buf: Buffer, m: Member): boolean {
  // end_of_stream is a one-byte varint field (tag 0x18); scan the member's top level for it.
  let pos = m.start;
  while (pos < m.end) {
    const tag = buf[pos]!;
    if (tag === 0x18) return buf[pos + 1] === 1;
    if ((tag & 7) !== 2) return false;
    let len = 0;
    let shift = 0;
    let p = pos + 1;
    for (;;) {
      const b = buf[p++]!;
      len += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
      shift += 7;
    }
    pos = p + len;
  }
  return false;
}

function handler(destination: Buffer) {
  return (call: ServerDuplexStream<Buffer, Buffer>): void => {
    openStreams++;
    streamsTotal++;
    let held: Buffer[] | undefined;
    let answered = false;
    const answer = (bodies: readonly Buffer[], endOfStream: boolean): void => {
      answered = true;
      call.write(destination);
      for (let i = 0; i < bodies.length; i++) call.write(streamedResponse('request', bodies[i]!, endOfStream && i === bodies.length - 1));
    };
    call.on('data', (msg: Buffer) => {
      const m = requestMember(msg);
      switch (m.no) {
        case REQ.requestHeaders:
          if (headersEnd(msg, m)) answer([], false);
          else held = [];
          return;
        case REQ.requestBody: {
          const { body, endOfStream } = httpBody(msg, m);
          if (answered) {
            call.write(streamedResponse('request', body, endOfStream));
          } else {
            (held ??= []).push(body);
            if (endOfStream) {
              answer(held, true);
              held = undefined;
            }
          }
          return;
        }
        case REQ.requestTrailers:
          if (!answered) answer(held ?? [], false);
          held = undefined;
          call.write(CONTINUE_REQUEST_TRAILERS);
          return;
        case REQ.responseHeaders:
          call.write(CONTINUE_RESPONSE_HEADERS);
          return;
        case REQ.responseBody: {
          const { body, endOfStream } = httpBody(msg, m);
          call.write(streamedResponse('response', body, endOfStream));
          return;
        }
        case REQ.responseTrailers:
          call.write(CONTINUE_RESPONSE_TRAILERS);
          return;
        default:
          call.emit('error', Object.assign(new Error('fast-epp: message without a request member'), { code: 3 }));
      }
    });
    let closed = false;
    const close = (): void => {
      if (closed) return;
      closed = true;
      openStreams--;
    };
    call.on('end', () => {
      call.end();
      close();
    });
    call.on('cancelled', close);
    call.on('error', close);
  };
}

const healthImpl = {
  Check(_call: ServerUnaryCall<unknown, unknown>, cb: sendUnaryData<unknown>) {
    cb(null, { status: 'SERVING' });
  },
  Watch(call: ServerDuplexStream<unknown, unknown>) {
    call.write({ status: 'SERVING' });
  },
};

async function main(): Promise<void> {
  const ports: number[] = [];
  const servers: Server[] = [];
  for (let i = 0; i < portCount; i++) {
    // One server per port so each "EPP" has its own endpoint answer.
    const server = new Server({ 'grpc.max_receive_message_length': MAX, 'grpc.max_send_message_length': MAX });
    server.addService(extProcRawService, { Process: handler(destinationHeadersResponse('request_headers', `10.0.${i}.1:8000`)) });
    server.addService(healthService, healthImpl);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    ports.push(port);
    servers.push(server);
  }

  const metricsText = pools
    .map((name, i) =>
      [
        `inference_pool_ready_pods{name="${name}"} ${4 + (i % 3)}`,
        `inference_pool_average_queue_size{name="${name}"} ${(0.5 + i * 0.25).toFixed(2)}`,
        `inference_pool_average_kv_cache_utilization{name="${name}"} ${(0.3 + i * 0.05).toFixed(2)}`,
        `inference_pool_average_running_requests{name="${name}"} ${2 + i}`,
      ].join('\n'),
    )
    .join('\n');
  const metrics = createHttpServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(
      ['# TYPE inference_pool_ready_pods gauge', '# TYPE inference_pool_average_queue_size gauge', metricsText, ''].join('\n'),
    );
  });
  await new Promise<void>((resolve) => metrics.listen(0, '127.0.0.1', resolve));
  const gateway = createTcpServer((s) => s.end());
  await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));

  serveRpc(
    {
      stats: () => ({ openStreams, streamsTotal }),
    },
    {
      ports,
      metricsPort: (metrics.address() as AddressInfo).port,
      gatewayPort: (gateway.address() as AddressInfo).port,
    },
  );
  process.on('SIGTERM', () => {
    for (const s of servers) s.forceShutdown();
    metrics.close();
    gateway.close();
    process.exit(0);
  });
}

void main();
