/**
 * One HTTP request through the front door, from the client's request to its
 * response: what Envoy's filter chain does for that request. The ext_proc
 * filter (ext-proc-filter.ts) decides what happens when; this is the HTTP side
 * it drives: it reads the client's request body, sends the request upstream
 * (upstream.ts), writes the client's response (or a reply of its own, or a
 * reset), and reports the outcome once.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Agent } from 'undici';
import { DESTINATION_ENDPOINT_HEADER } from '../src/protocol/constants.js';
import { AsyncQueue, chunksMarkingLast } from './async-queue.js';
import { clientRequestHeaders, headerOf, toHeaderObject, type HeaderList } from './envoy-headers.js';
import { ExtProcFilter, type FilterTarget } from './ext-proc-filter.js';
import { CLUSTER_HEADER, immediateResponseDetail, LOAD_HEADER, POD_HEADER, type RequestRecord } from './request-record.js';
import type { RouterConnections } from './router-connections.js';
import { originalDstHost, sendUpstream, type UpstreamResponse } from './upstream.js';

export class RequestExchange implements FilterTarget {
  private readonly started = performance.now();
  private readonly method: string;
  private readonly path: string;
  private readonly generated: boolean;
  private readonly filter: ExtProcFilter;
  private readonly abort = new AbortController();
  private finished = false;

  // Request path.
  /** The request's headers; the processor's mutation applies to this list. */
  private readonly requestHeaders: HeaderList;
  private readonly hasBody: boolean;
  /** The upstream request body: the streamed_response bytes, as they come back from the processor. */
  private readonly upstreamBody = new AsyncQueue<Buffer>();
  private destination: string | undefined;

  // Response path.
  /** The upstream response's headers; the processor's mutation applies to this list. */
  private upstreamHeaders: HeaderList = [];
  /** The upstream response has no body: it is complete once its headers are written. */
  private endsWithHeaders = false;
  private cluster: string | undefined;
  private pod: string | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    connections: RouterConnections,
    private readonly agent: Agent,
    private readonly onRequest: (r: RequestRecord) => void,
  ) {
    this.method = req.method ?? 'GET';
    this.path = req.url ?? '/';
    this.generated = req.headers[LOAD_HEADER] === '1';
    this.requestHeaders = clientRequestHeaders(req, this.method, this.path);
    this.hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? '0') > 0;
    res.on('close', () => {
      if (!this.finished) this.finish(499, 'client disconnected');
    });
    this.filter = new ExtProcFilter(connections, this);
  }

  /** Resolves once the request is finished (answered, reset or abandoned by the client). */
  async run(): Promise<void> {
    this.filter.sendRequestHeaders(this.requestHeaders, this.hasBody);
    if (this.hasBody) void this.pumpRequestBody();
    await this.filter.run();
  }

  /** Every chunk to the filter as it arrives, without waiting for the headers response. */
  private async pumpRequestBody(): Promise<void> {
    try {
      for await (const { chunk, last } of chunksMarkingLast(this.req)) this.filter.sendRequestBody(chunk, last);
    } catch {
      // the client went away; res 'close' handles it
    }
  }

  // ---- what the filter has done (FilterTarget) -------------------------------------------

  forwardUpstream(): void {
    this.destination = headerOf(this.requestHeaders, DESTINATION_ENDPOINT_HEADER);
    void this.proxy();
  }

  writeUpstreamBody(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) this.upstreamBody.push(chunk);
    if (end) this.upstreamBody.end();
  }

  writeClientHead(): void {
    if (this.res.headersSent) return;
    const status = Number(headerOf(this.upstreamHeaders, ':status')) || 502;
    // The processor may change the body, so Node frames it (chunked) instead of the upstream's length.
    this.res.writeHead(status, toHeaderObject(this.upstreamHeaders, false));
    if (this.endsWithHeaders) this.completeResponse();
  }

  writeClientBody(chunk: Buffer, end: boolean): void {
    if (chunk.length > 0) this.res.write(chunk);
    if (end) this.completeResponse();
  }

  immediateResponse(status: number, headers: HeaderList, body: Buffer, details: string): void {
    // Too late for a reply of its own once the client response has started: Envoy resets the stream.
    if (this.res.headersSent) return this.resetClient(`immediate_response after the response started (${details})`);
    this.reply(status, headers, body, immediateResponseDetail(details, body));
  }

  /** A reply Envoy generates itself (plain text, like its local replies). */
  localReply(status: number, detail: string): void {
    if (this.res.headersSent) return this.resetClient(detail);
    this.reply(status, [['content-type', 'text/plain']], Buffer.from(`${detail}\n`), `front door: ${detail}`);
  }

  // ---- upstream ------------------------------------------------------------------------------

  /** Sends the request to the chosen endpoint, then its response through the filter. */
  private async proxy(): Promise<void> {
    const dst = originalDstHost(this.destination);
    if ('noHost' in dst) return this.localReply(503, dst.noHost);
    let up: UpstreamResponse;
    try {
      up = await sendUpstream({
        destination: dst.host,
        method: this.method,
        headers: this.requestHeaders,
        clientPath: this.path,
        body: this.hasBody ? this.upstreamBody : null,
        signal: this.abort.signal,
        agent: this.agent,
      });
    } catch (err) {
      if (this.finished) return;
      return this.localReply(503, (err as Error).message);
    }
    if (this.finished) {
      // Abandoned: undici reports the destroyed body as an error, which must not go unhandled.
      up.body.on('error', () => undefined).destroy();
      return;
    }
    this.upstreamHeaders = up.headers;
    this.cluster = headerOf(up.headers, CLUSTER_HEADER);
    this.pod = headerOf(up.headers, POD_HEADER);
    this.endsWithHeaders = up.noBody;
    this.filter.sendResponseHeaders(this.upstreamHeaders, up.noBody, dst.host);
    if (up.noBody) {
      // The response ends with its (answered) headers; consume the empty body so the connection is reused.
      await up.body.dump().catch(() => undefined);
      return;
    }
    try {
      for await (const { chunk, last } of chunksMarkingLast(up.body)) {
        if (this.finished) return;
        this.filter.sendResponseBody(chunk, last);
      }
    } catch {
      if (!this.finished) this.resetClient('upstream reset mid-response');
    }
  }

  // ---- to the client -------------------------------------------------------------------------

  private completeResponse(): void {
    if (this.finished) return;
    if (!this.res.headersSent) this.writeClientHead();
    this.res.end();
    this.finish(this.res.statusCode);
  }

  private reply(status: number, headers: HeaderList, body: Buffer, detail: string): void {
    if (this.finished) return;
    if (!this.res.headersSent) this.res.writeHead(status, toHeaderObject(headers, true));
    this.res.end(body);
    this.finish(status, detail);
  }

  private resetClient(detail: string): void {
    this.res.destroy();
    this.finish(this.res.statusCode || 502, detail);
  }

  /** Once per request: end the ext_proc stream (half-close, then reset), cancel upstream, report. */
  private finish(status: number, detail?: string): void {
    if (this.finished) return;
    this.finished = true;
    this.filter.close();
    this.upstreamBody.fail(new Error('request finished'));
    this.abort.abort();
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
