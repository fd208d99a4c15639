/**
 * STAND-IN FOR ENVOY. Production runs Envoy with envoy/envoy.yaml; this small
 * HTTP server does, for one process on a laptop, what that Envoy config does:
 *
 * - strips any client-sent x-gateway-destination-endpoint (the header_mutation
 *   filter), then opens one ext_proc stream to mcip-router per request with the
 *   processing mode envoy.yaml sets: headers SEND, bodies FULL_DUPLEX_STREAMED,
 *   trailers SEND (the client requests here never carry trailers);
 * - sends request_headers (values in raw_value, pseudo-headers included,
 *   protocol_config on the first message), then every body chunk as it arrives
 *   without waiting, the last one with end_of_stream;
 * - applies the headers response's mutation the way Envoy does (raw_value
 *   only; append unset/false overwrites; :authority, host, :method, :scheme
 *   and x-envoy-* skipped), keeps the envoy.lb dynamic metadata, and forwards
 *   only the streamed_response body bytes upstream;
 * - routes like the ORIGINAL_DST cluster: exactly one ip:port in
 *   x-gateway-destination-endpoint, else 503; proxies with undici (HTTP/1.1);
 * - runs the response path through the same stream (response_headers with
 *   envoy.lb metadata_context incl. x-gateway-destination-endpoint-served,
 *   body chunks answered by streamed_response);
 * - treats immediate_response as the client's response, a spurious message
 *   (wrong type, body before headers response, non-streamed body mutation,
 *   empty response) or a gRPC error as a 500, and half-closes then resets the
 *   stream when the request is done.
 *
 * What it does not do: HTTP/2 to clients, retries, timeouts, access logs,
 * stats, TLS, anything of Envoy beyond this one filter chain.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { Client, credentials, status as GrpcStatus, type ClientDuplexStream, type StatusObject } from '@grpc/grpc-js';
import { Agent, request as undiciRequest, type Dispatcher } from 'undici';
import { decodeResponse, encodeRequest, type HeaderMutation, type HeaderValue, type ProcessingResponse } from '../src/protocol/codec.js';
import { BodySendMode, DESTINATION_ENDPOINT_HEADER, DESTINATION_ENDPOINT_SERVED_KEY, EXT_PROC_PROCESS_PATH, LB_METADATA_NAMESPACE } from '../src/protocol/constants.js';
import { fromStruct, toStruct, type JsonObject } from '../src/protocol/struct.js';
import { HOST } from './layout.js';

/** What the front door saw of one request (for the live view). */
export interface RequestRecord {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** From the model server's answer; absent when no model server answered. */
  readonly cluster?: string;
  readonly pod?: string;
  /** The x-gateway-destination-endpoint the router/EPP chose. */
  readonly destination?: string;
  readonly ms: number;
  /** Sent by the demo's own load generator (header x-demo-load). */
  readonly generated: boolean;
  /** Who answered when it was not a model server, e.g. "router: mcip_router_epp_unavailable". */
  readonly detail?: string;
}

export interface FrontDoorOptions {
  readonly port: number;
  /** mcip-router's ext_proc address, host:port. */
  readonly extProc: string;
  readonly onRequest: (r: RequestRecord) => void;
}

type HeaderList = [string, string][];

const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const identity = (b: Buffer): Buffer => b;
/** Hop-by-hop headers Envoy's HTTP connection manager removes. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);
/** Request headers Envoy's default mutation rules never let a processor set or remove. */
const PROTECTED_REQUEST_HEADERS = new Set([':authority', 'host', ':method', ':scheme']);
/** Header the load generator marks its requests with. */
export const LOAD_HEADER = 'x-demo-load';

export class FrontDoor {
  private server: Server | undefined;
  private readonly client: Client;
  private readonly agent = new Agent({ keepAliveTimeout: 4000, connect: { timeout: 2000 } });
  private readonly active = new Set<Promise<void>>();

  constructor(private readonly opts: FrontDoorOptions) {
    // One HTTP/2 connection to the router, shared by every stream (as Envoy's mcip_router cluster).
    this.client = new Client(opts.extProc, credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    });
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => {
      const p = new RequestExchange(req, res, this.client, this.agent, this.opts.onRequest).run();
      this.active.add(p);
      void p.finally(() => this.active.delete(p));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port: this.opts.port, host: HOST, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  /** Stops accepting, lets in-flight requests finish for up to `graceMs`, then cuts the rest. */
  async stop(graceMs: number): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const drained = Promise.all([...this.active]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([drained, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    }
    this.client.close();
    await this.agent.close();
  }
}

type StreamEvent =
  | { kind: 'message'; message: ProcessingResponse }
  | { kind: 'closed-ok' }
  | { kind: 'error'; code: number; details: string }
  | { kind: 'upstream-done' };

/** The per-request state: Envoy's ext_proc filter and router filter for one HTTP request. */
class RequestExchange {
  private readonly started = performance.now();
  private readonly method: string;
  private readonly path: string;
  private readonly generated: boolean;
  private call: ClientDuplexStream<Buffer, Buffer> | undefined;
  private readonly events: StreamEvent[] = [];
  private wake: (() => void) | undefined;
  private streamEnded = false;
  private finished = false;
  private readonly abort = new AbortController();

  // Request path.
  private requestHeaders: HeaderList = [];
  private hasBody = false;
  private requestHeadersAnswered = false;
  private requestBodyEnded = false;
  private readonly upstreamBody = new ChunkQueue();
  private destination: string | undefined;
  private lbMetadata: JsonObject = {};

  // Response path.
  private upstreamHeaders: HeaderList = [];
  private upstreamStatus = 0;
  private responseHeadersSent = false;
  private responseHeadersAnswered = false;
  private responseBodySent = false;
  private responseEnded = false;
  /** The processor went away during the response: the rest bypasses it (Envoy continues without it). */
  private bypass = false;
  /** The upstream response has no body: it is complete once its headers are written. */
  private endsWithHeaders = false;
  private cluster: string | undefined;
  private pod: string | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly client: Client,
    private readonly agent: Agent,
    private readonly onRequest: (r: RequestRecord) => void,
  ) {
    this.method = req.method ?? 'GET';
    this.path = req.url ?? '/';
    this.generated = req.headers[LOAD_HEADER] === '1';
    res.on('close', () => {
      if (!this.finished) this.finish(499, 'client disconnected');
    });
  }

  async run(): Promise<void> {
    this.requestHeaders = this.incomingHeaders();
    const te = this.req.headers['transfer-encoding'];
    const length = Number(this.req.headers['content-length'] ?? '0');
    this.hasBody = te !== undefined || length > 0;

    this.open();
    this.send(
      encodeRequest({
        request_headers: { headers: { headers: toHeaderValues(this.requestHeaders) }, end_of_stream: !this.hasBody },
        protocol_config: {
          request_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
          response_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
        },
      }),
    );
    if (this.hasBody) void this.pumpRequestBody();

    while (!this.finished) {
      const ev = await this.nextEvent();
      if (this.finished) break;
      this.onEvent(ev);
    }
  }

  // ---- the ext_proc stream ------------------------------------------------------------

  private open(): void {
    const call = this.client.makeBidiStreamRequest(EXT_PROC_PROCESS_PATH, identity, identity);
    this.call = call;
    call.on('data', (buf: Buffer) => {
      let message: ProcessingResponse;
      try {
        message = decodeResponse(buf);
      } catch {
        this.push({ kind: 'error', code: GrpcStatus.INTERNAL, details: 'malformed ProcessingResponse' });
        return;
      }
      this.push({ kind: 'message', message });
    });
    call.on('error', () => undefined); // reported through 'status'
    call.on('status', (s: StatusObject) => {
      if (this.streamEnded) return;
      this.streamEnded = true;
      this.push(s.code === GrpcStatus.OK ? { kind: 'closed-ok' } : { kind: 'error', code: s.code, details: s.details });
    });
  }

  private send(msg: Buffer): void {
    if (!this.streamEnded && !this.finished) this.call?.write(msg);
  }

  private push(ev: StreamEvent): void {
    this.events.push(ev);
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private nextEvent(): Promise<StreamEvent> {
    const ev = this.events.shift();
    if (ev) return Promise.resolve(ev);
    return new Promise((resolve) => {
      this.wake = () => resolve(this.events.shift()!);
    });
  }

  // ---- request path -------------------------------------------------------------------

  /** The client's headers as Envoy hands them to ext_proc. */
  private incomingHeaders(): HeaderList {
    const out: HeaderList = [
      [':authority', this.req.headers.host ?? `${HOST}`],
      [':path', this.path],
      [':method', this.method],
      [':scheme', 'http'],
    ];
    const raw = this.req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const key = raw[i]!.toLowerCase();
      // host became :authority; hop-by-hop headers are the connection's; the destination header is the router's to set.
      if (key === 'host' || HOP_BY_HOP.has(key) || key === DESTINATION_ENDPOINT_HEADER) continue;
      out.push([key, raw[i + 1]!]);
    }
    out.push(['x-forwarded-proto', 'http'], ['x-request-id', randomUUID()]);
    return out;
  }

  /** Every chunk as it arrives, without waiting for the headers response; the last one carries end_of_stream. */
  private async pumpRequestBody(): Promise<void> {
    let held: Buffer | undefined;
    try {
      for await (const chunk of this.req as AsyncIterable<Buffer>) {
        if (held) this.send(encodeRequest({ request_body: { body: held, end_of_stream: false } }));
        held = chunk;
      }
    } catch {
      return; // the client went away; res 'close' handles it
    }
    this.send(encodeRequest({ request_body: { body: held ?? Buffer.alloc(0), end_of_stream: true } }));
  }

  private onEvent(ev: StreamEvent): void {
    switch (ev.kind) {
      case 'error':
        // status_on_error: 500 (failure_mode_allow: false in envoy.yaml).
        return this.localReply(500, `ext_proc_error_gRPC_error_${ev.code}{${ev.details}}`);
      case 'closed-ok':
        return this.processorGone();
      case 'upstream-done':
        return;
      case 'message':
        return this.onMessage(ev.message);
    }
  }

  private onMessage(m: ProcessingResponse): void {
    switch (m.response) {
      case 'immediate_response': {
        const ir = m.immediate_response!;
        // Too late for a reply of its own once the client response has started: Envoy resets the stream.
        if (this.res.headersSent) return this.resetClient(`immediate_response after the response started (${ir.details})`);
        const headers: HeaderList = [];
        applyMutation(headers, ir.headers, false);
        const status = Math.max(200, ir.status?.code || 200);
        const body = Buffer.from(ir.body ?? Buffer.alloc(0));
        return this.reply(status, headers, body, immediateDetail(ir.details, body));
      }
      case 'request_headers': {
        if (this.requestHeadersAnswered) return this.spurious('a second request_headers response');
        this.requestHeadersAnswered = true;
        applyMutation(this.requestHeaders, m.request_headers?.response?.header_mutation ?? null, true);
        const lb = m.dynamic_metadata?.fields?.[LB_METADATA_NAMESPACE];
        if (lb?.structValue) this.lbMetadata = { ...this.lbMetadata, ...fromStruct(lb.structValue) };
        this.destination = this.requestHeaders.find(([k]) => k === DESTINATION_ENDPOINT_HEADER)?.[1];
        if (!this.hasBody) this.upstreamBody.end();
        void this.forward();
        return;
      }
      case 'request_body': {
        const mutation = m.request_body?.response?.body_mutation;
        if (!this.requestHeadersAnswered) return this.spurious('a request_body response before the request_headers response');
        if (mutation?.mutation !== 'streamed_response' || !mutation.streamed_response) {
          return this.spurious('a request_body response without streamed_response in FULL_DUPLEX_STREAMED');
        }
        if (!this.hasBody || this.requestBodyEnded) return this.spurious('a request_body response after the body ended');
        const sr = mutation.streamed_response;
        if (sr.body.length > 0) this.upstreamBody.push(Buffer.from(sr.body));
        if (sr.end_of_stream) {
          this.requestBodyEnded = true;
          this.upstreamBody.end();
        }
        return;
      }
      case 'response_headers': {
        if (!this.responseHeadersSent || this.responseHeadersAnswered) return this.spurious('an unexpected response_headers response');
        this.responseHeadersAnswered = true;
        applyMutation(this.upstreamHeaders, m.response_headers?.response?.header_mutation ?? null, false);
        this.writeClientHead();
        return;
      }
      case 'response_body': {
        const mutation = m.response_body?.response?.body_mutation;
        if (!this.responseHeadersAnswered || !this.responseBodySent) return this.spurious('an unexpected response_body response');
        if (mutation?.mutation !== 'streamed_response' || !mutation.streamed_response) {
          return this.spurious('a response_body response without streamed_response in FULL_DUPLEX_STREAMED');
        }
        const sr = mutation.streamed_response;
        if (sr.body.length > 0) this.res.write(Buffer.from(sr.body));
        if (sr.end_of_stream) this.completeResponse();
        return;
      }
      default:
        // request_trailers / response_trailers were never sent; an empty response is spurious too.
        return this.spurious(`an unexpected ${m.response ?? 'empty'} response`);
    }
  }

  /** The processor ended the stream with OK: Envoy continues without it. */
  private processorGone(): void {
    if (!this.requestHeadersAnswered) {
      // No destination header: the ORIGINAL_DST cluster has no host.
      return this.localReply(503, 'no healthy upstream (ext_proc stream closed before the headers response)');
    }
    if (this.hasBody && !this.requestBodyEnded) return this.localReply(500, 'ext_proc stream closed before the request body was returned');
    this.bypass = true;
    if (this.responseHeadersSent && !this.responseHeadersAnswered) {
      this.responseHeadersAnswered = true;
      this.writeClientHead();
    }
    // Body chunks already handed to the processor and not returned are lost, as with Envoy.
    if (this.responseEnded && this.responseHeadersAnswered) this.completeResponse();
  }

  // ---- upstream (ORIGINAL_DST cluster) ---------------------------------------------------

  private async forward(): Promise<void> {
    const dest = this.destination;
    if (dest === undefined || !/^(\d{1,3}\.){3}\d{1,3}:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(dest)) {
      // ORIGINAL_DST accepts exactly one ip:port; anything else (none, a list, a name) is a 503.
      return this.localReply(503, dest === undefined ? 'no healthy upstream (no x-gateway-destination-endpoint)' : `no healthy upstream (original_dst_host_invalid: "${dest}")`);
    }
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of this.requestHeaders) {
      if (k.startsWith(':') || k === 'content-length') continue;
      const prev = headers[k];
      headers[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    headers.host = this.requestHeaders.find(([k]) => k === ':authority')?.[1] ?? dest;
    const path = this.requestHeaders.find(([k]) => k === ':path')?.[1] ?? this.path;
    let up: Awaited<ReturnType<typeof undiciRequest>>;
    try {
      up = await undiciRequest(`http://${dest}${path}`, {
        method: this.method as Dispatcher.HttpMethod,
        headers,
        body: this.hasBody ? Readable.from(this.upstreamBody, { objectMode: false }) : null,
        signal: this.abort.signal,
        dispatcher: this.agent,
      });
    } catch (err) {
      if (this.finished) return;
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      return this.localReply(503, `upstream connect error or disconnect/reset before headers. reset reason: ${code} (${dest})`);
    }
    if (this.finished) {
      up.body.destroy();
      return;
    }
    this.upstreamStatus = up.statusCode;
    this.upstreamHeaders = [[':status', String(up.statusCode)]];
    for (const [k, v] of Object.entries(up.headers)) {
      if (v === undefined || HOP_BY_HOP.has(k)) continue;
      for (const one of Array.isArray(v) ? v : [v]) this.upstreamHeaders.push([k, one]);
    }
    this.cluster = headerOf(this.upstreamHeaders, 'x-demo-cluster');
    this.pod = headerOf(this.upstreamHeaders, 'x-demo-pod');
    const noBody = this.method === 'HEAD' || up.statusCode === 204 || up.statusCode === 304 || headerOf(this.upstreamHeaders, 'content-length') === '0';
    const metadata = { ...this.lbMetadata, [DESTINATION_ENDPOINT_SERVED_KEY]: dest };
    this.responseHeadersSent = true;
    this.endsWithHeaders = noBody;
    if (this.bypass) {
      this.responseHeadersAnswered = true;
      this.writeClientHead();
    } else {
      this.send(
        encodeRequest({
          response_headers: { headers: { headers: toHeaderValues(this.upstreamHeaders) }, end_of_stream: noBody },
          metadata_context: { filter_metadata: { [LB_METADATA_NAMESPACE]: toStruct(metadata) } },
        }),
      );
    }
    if (noBody) {
      // The response ends with its (answered) headers.
      up.body.destroy();
      this.responseEnded = true;
      return;
    }
    let held: Buffer | undefined;
    try {
      for await (const chunk of up.body as AsyncIterable<Buffer>) {
        if (this.finished) return;
        if (held) this.upstreamChunk(held, false);
        held = chunk;
      }
    } catch {
      if (!this.finished) this.resetClient('upstream reset mid-response');
      return;
    }
    if (this.finished) return;
    this.upstreamChunk(held ?? Buffer.alloc(0), true);
  }

  private upstreamChunk(chunk: Buffer, last: boolean): void {
    if (last) this.responseEnded = true;
    if (this.bypass) {
      if (chunk.length > 0) this.res.write(chunk);
      if (last) this.completeResponse();
      return;
    }
    this.responseBodySent = true;
    this.send(encodeRequest({ response_body: { body: chunk, end_of_stream: last } }));
  }

  // ---- to the client --------------------------------------------------------------------

  private writeClientHead(): void {
    if (this.res.headersSent) return;
    const status = Number(headerOf(this.upstreamHeaders, ':status') ?? this.upstreamStatus) || 502;
    const headers: Record<string, string[]> = {};
    for (const [k, v] of this.upstreamHeaders) {
      // The processor may change the body, so Node frames it (chunked) instead of the upstream's length.
      if (k.startsWith(':') || k === 'content-length') continue;
      (headers[k] ??= []).push(v);
    }
    this.res.writeHead(status, headers);
    if (this.endsWithHeaders) this.completeResponse();
  }

  private completeResponse(): void {
    if (this.finished) return;
    if (!this.res.headersSent) this.writeClientHead();
    this.res.end();
    this.finish(this.res.statusCode);
  }

  private spurious(what: string): void {
    // Envoy closes the stream and answers 500 (or resets a response already under way).
    if (this.res.headersSent) return this.resetClient(`spurious ext_proc message: ${what}`);
    this.localReply(500, `spurious ext_proc message: ${what}`);
  }

  /** A reply Envoy generates itself (plain text, like its local replies). */
  private localReply(status: number, detail: string): void {
    if (this.res.headersSent) return this.resetClient(detail);
    this.reply(status, [['content-type', 'text/plain']], Buffer.from(`${detail}\n`), `front door: ${detail}`);
  }

  private reply(status: number, headers: HeaderList, body: Buffer, detail: string): void {
    if (this.finished) return;
    if (!this.res.headersSent) {
      const h: Record<string, string[]> = {};
      for (const [k, v] of headers) if (!k.startsWith(':')) (h[k] ??= []).push(v);
      this.res.writeHead(status, h);
    }
    this.res.end(body);
    this.finish(status, detail);
  }

  private resetClient(detail: string): void {
    this.res.destroy();
    this.finish(this.res.statusCode || 502, detail);
  }

  /** Once per request: half-close then reset the ext_proc stream (as Envoy does), cancel upstream, report. */
  private finish(status: number, detail?: string): void {
    if (this.finished) return;
    this.finished = true;
    if (this.call && !this.streamEnded) {
      this.call.end();
      this.call.cancel();
    }
    this.upstreamBody.fail(new Error('request finished'));
    this.abort.abort();
    this.push({ kind: 'upstream-done' });
    this.onRequest({
      method: this.method,
      path: this.path,
      status,
      ms: performance.now() - this.started,
      generated: this.generated,
      ...(this.cluster ? { cluster: this.cluster } : {}),
      ...(this.pod ? { pod: this.pod } : {}),
      ...(this.destination ? { destination: this.destination } : {}),
      ...(detail && !this.cluster ? { detail } : {}),
    });
  }
}

/** Who answered instead of a model server, and why: "router: …" or "EPP: …". */
function immediateDetail(details: string, body: Buffer): string {
  const who = details.startsWith('mcip_router') ? 'router' : details.startsWith('demo_epp') ? 'EPP' : 'router or EPP';
  let why = body.toString('utf8').trim();
  try {
    const parsed = JSON.parse(why) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof parsed.error === 'object' ? parsed.error?.message : (parsed.error ?? parsed.message);
    if (typeof m === 'string') why = m;
  } catch {
    // not JSON: the text itself
  }
  why = why.length > 120 ? `${why.slice(0, 117)}...` : why;
  return `${who}: ${why || details || 'immediate response'}`;
}

function headerOf(list: HeaderList, name: string): string | undefined {
  return list.find(([k]) => k === name)?.[1];
}

function toHeaderValues(list: HeaderList): { key: string; raw_value: Buffer }[] {
  return list.map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'utf8') }));
}

/** Applies a HeaderMutation the way Envoy does: only raw_value is read; append unset/false overwrites. */
function applyMutation(list: HeaderList, mutation: HeaderMutation | null | undefined, request: boolean): void {
  if (!mutation) return;
  const allowed = (key: string): boolean =>
    !key.startsWith('x-envoy-') && !(request ? PROTECTED_REQUEST_HEADERS.has(key) : key.startsWith(':'));
  for (const option of mutation.set_headers ?? []) {
    const h: HeaderValue | null = option.header;
    if (!h) continue;
    const key = h.key.toLowerCase();
    if (!allowed(key)) continue;
    const value = Buffer.from(h.raw_value ?? Buffer.alloc(0)).toString('utf8');
    if (option.append?.value !== true) removeHeader(list, key);
    list.push([key, value]);
  }
  for (const key of mutation.remove_headers ?? []) {
    const k = key.toLowerCase();
    if (allowed(k)) removeHeader(list, k);
  }
}

function removeHeader(list: HeaderList, key: string): void {
  for (let i = list.length - 1; i >= 0; i--) if (list[i]![0] === key) list.splice(i, 1);
}

/** The upstream request body: the streamed_response bytes, as they come back from the processor. */
class ChunkQueue implements AsyncIterable<Buffer> {
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private failed: Error | undefined;
  private wake: (() => void) | undefined;

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  fail(err: Error): void {
    if (this.ended && this.chunks.length === 0) return;
    this.failed = err;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const chunk = this.chunks.shift();
      if (chunk) yield chunk;
      else if (this.failed) throw this.failed;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}
