// One ext_proc stream of the simulated EPP, answering like a GIE Endpoint Picker:
// in FULL_DUPLEX_STREAMED it holds the headers response until the body is complete, picks,
// answers headers with the destination, then echoes the body as streamed_response.
import * as http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { fromPbHeaderMap, type HeaderList } from './headers.js';
import {
  asBuffer,
  fromStruct,
  toStruct,
  BODY_MODE,
  type JsonObject,
  type PbProcessingRequest,
  type PbProcessingResponse,
  type RequestCase,
} from './protos.js';

export const DESTINATION_HEADER = 'x-gateway-destination-endpoint';
export const SUBSET_NAMESPACE = 'envoy.lb.subset_hint';
export const SUBSET_KEY = 'x-gateway-destination-endpoint-subset';
export const SERVED_KEY = 'x-gateway-destination-endpoint-served';

/**
 * 'mid-echo': in full duplex, after the headers response, echo the first half of the body
 * (not ended), then fail. 'mid-response': echo the first response body chunk, fail on the next.
 * 'empty-answer': answer the request headers with an empty ProcessingResponse (a buggy EPP), then hang.
 * 'stall-echo' / 'stall-response': like 'mid-echo' / 'mid-response', but instead of failing the EPP
 * goes silent with the stream open (reads on, answers nothing, ignores the half-close): a wedged EPP.
 */
export type CrashMode =
  | 'on-headers'
  | 'mid-body'
  | 'after-headers-response'
  | 'close-ok'
  | 'mid-echo'
  | 'mid-response'
  | 'empty-answer'
  | 'stall-echo'
  | 'stall-response';

export interface ImmediateSpec {
  status: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
  details?: string;
}

export interface PickContext {
  headers: HeaderList;
  body: Buffer;
  json: JsonObject | undefined;
  /** Endpoints allowed by the subset hint (all endpoints when there is none). */
  eligible: string[];
  subset: string[] | undefined;
}

/** A value for the header (string, or list joined with ','), an immediate response, or undefined (503). */
export type PickResult = string | string[] | { immediate: ImmediateSpec } | undefined;

export interface StreamRecord {
  id: number;
  /** The client's address (ip:port): streams of one connection share it. */
  peer: string;
  grpcMetadata: Record<string, unknown>;
  received: PbProcessingRequest[];
  sent: PbProcessingResponse[];
  destination?: string;
  servedEndpoint?: string;
  closed: boolean;
  /** How the stream ended (see StreamEnd), once both its gRPC call and its HTTP/2 stream closed. */
  end?: StreamEnd;
}

/**
 * How a stream ended:
 * - 'ok': the EPP ended it with status OK and the client never reset it;
 * - 'cancelled': the client cancelled it: before the EPP's status (a gRPC cancellation), or
 *   with an RST_STREAM(CANCEL) that reached its HTTP/2 stream before that closed, even after
 *   the EPP wrote its status (Envoy's half-close + reset arrive together). Node's rapid-reset
 *   limit counts these; it also counts a reset that arrives after the HTTP/2 stream closed,
 *   which nothing here can see. Streams reset by kill()/stop() count here too;
 * - 'failed': the EPP failed it (a simulated crash) or the call errored.
 */
export type StreamEnd = 'ok' | 'cancelled' | 'failed';

/**
 * The HTTP/2 stream under a grpc-js server call. grpc-js does not expose it: this reads
 * its internals (ServerDuplexStreamImpl.call = BaseServerInterceptingCall, .stream), checked
 * by test/harness/simulated-epp.test.ts so a grpc-js upgrade that moves it fails loudly.
 */
export function http2StreamOf(call: object): http2.ServerHttp2Stream | undefined {
  const s = (call as { call?: { stream?: Partial<http2.ServerHttp2Stream> } }).call?.stream;
  return s !== undefined && typeof s.once === 'function' && 'rstCode' in s && typeof s.respond === 'function'
    ? (s as http2.ServerHttp2Stream)
    : undefined;
}

/** What a stream needs from its server: current fault settings, the picker, counters. */
export interface EppStreamHost {
  readonly requireModel: boolean;
  readonly echoChunkBytes: number;
  readonly immediate: ImmediateSpec | undefined;
  readonly delayMs: number;
  readonly hang: boolean;
  /** Keep streams open after the client's half-close (only a cancel ends them). */
  readonly ignoreHalfClose: boolean;
  /**
   * A stock llm-d EPP does not read protocol_config: it answers every stream as in full
   * duplex (the request headers answer once the body ended, the body echoed as
   * streamed_response), whatever mode the gateway announced.
   */
  readonly ignoresAnnouncedMode?: boolean;
  readonly crash: CrashMode | undefined;
  readonly responseHeaders: Record<string, string> | undefined;
  pick(ctx: PickContext): PickResult;
  onMessage(type: RequestCase): void;
  onImmediate(): void;
  /** The call ended (the EPP holds nothing of it any more). */
  onClosed(): void;
  /** How the stream ended, once the call and its HTTP/2 stream both closed. */
  onEnded(end: StreamEnd): void;
}

type Call = grpc.ServerDuplexStream<PbProcessingRequest, PbProcessingResponse>;

function parseSubset(md: PbProcessingRequest['metadata_context']): string[] | undefined {
  const ns = md?.filter_metadata?.[SUBSET_NAMESPACE];
  if (!ns) return undefined;
  const v = fromStruct(ns)[SUBSET_KEY];
  if (Array.isArray(v)) return v.map(String);
  if (typeof v === 'string') return v.split(',').map((s) => s.trim()).filter(Boolean);
  return undefined;
}

export class EppStream {
  private chain: Promise<void> = Promise.resolve();
  private done = false;
  private released: () => void = () => undefined;
  private readonly closedPromise = new Promise<void>((r) => (this.released = r));
  private reqMode = BODY_MODE.FULL_DUPLEX_STREAMED as number;
  private respMode = BODY_MODE.FULL_DUPLEX_STREAMED as number;
  private headers: HeaderList = [];
  private subset: string[] | undefined;
  private readonly body: Buffer[] = [];
  private decided = false;
  private bodyStarted = false;
  private trailersPending = false;
  private responseChunks = 0;
  /** How the gRPC call ended (set by close()). */
  private ended: StreamEnd | undefined;
  private h2Closed = false;
  private h2Reset = false;
  private reported = false;
  /** A wedged EPP ('stall-*' modes): keeps reading, answers nothing more. */
  private silent = false;

  constructor(
    private readonly call: Call,
    private readonly host: EppStreamHost,
    readonly record: StreamRecord,
  ) {
    call.on('data', (m: PbProcessingRequest) => this.onData(m));
    call.on('end', () => {
      if (!this.host.hang && !this.host.ignoreHalfClose && !this.silent) this.enqueue(async () => this.finish());
    });
    call.on('cancelled', () => this.close('cancelled'));
    const h2 = http2StreamOf(call);
    if (h2) {
      h2.once('close', () => {
        this.h2Reset = h2.rstCode === http2.constants.NGHTTP2_CANCEL;
        this.h2Closed = true;
        this.report();
      });
    } else this.h2Closed = true;
    call.on('error', () => this.close('failed'));
  }

  private onData(m: PbProcessingRequest): void {
    if (this.done || !m.request) return;
    this.record.received.push(m);
    this.host.onMessage(m.request);
    if (this.silent) return;
    if (this.record.received.length === 1 && m.protocol_config && !this.host.ignoresAnnouncedMode) {
      this.reqMode = m.protocol_config.request_body_mode ?? BODY_MODE.NONE;
      this.respMode = m.protocol_config.response_body_mode ?? BODY_MODE.NONE;
    }
    const fdReq = this.reqMode === BODY_MODE.FULL_DUPLEX_STREAMED;
    const fdResp = this.respMode === BODY_MODE.FULL_DUPLEX_STREAMED;
    switch (m.request) {
      case 'request_headers': {
        this.headers = fromPbHeaderMap(m.request_headers?.headers);
        this.subset = parseSubset(m.metadata_context);
        if (this.host.crash === 'on-headers') return this.fail('simulated EPP crash on request headers');
        if (this.host.crash === 'close-ok') return this.finish();
        if (!fdReq || m.request_headers?.end_of_stream) this.enqueue(() => this.decide(false));
        return;
      }
      case 'request_body': {
        if (this.host.crash === 'mid-body' && !this.bodyStarted) return this.fail('simulated EPP crash mid-body');
        this.bodyStarted = true;
        if (!fdReq) return this.enqueue(async () => this.send({ request_body: { response: {} } }));
        this.body.push(asBuffer(m.request_body?.body));
        if (m.request_body?.end_of_stream && !this.decided) this.enqueue(() => this.decide(true));
        return;
      }
      case 'request_trailers': {
        if (fdReq && !this.decided) {
          this.trailersPending = true;
          this.enqueue(() => this.decide(false));
        }
        return this.enqueue(async () => this.send({ request_trailers: {} }));
      }
      case 'response_headers': {
        this.record.servedEndpoint = fromStruct(m.metadata_context?.filter_metadata?.['envoy.lb'])[SERVED_KEY] as string | undefined;
        const set = Object.entries(this.host.responseHeaders ?? {}).map(([key, v]) => ({
          header: { key, raw_value: Buffer.from(v) },
          append: { value: false },
        }));
        const response = set.length > 0 ? { header_mutation: { set_headers: set } } : {};
        return this.enqueue(async () => this.send({ response_headers: { response } }));
      }
      case 'response_body': {
        const b = m.response_body;
        if ((this.host.crash === 'mid-response' || this.host.crash === 'stall-response') && this.responseChunks++ > 0) {
          if (this.host.crash === 'stall-response') {
            this.silent = true;
            return;
          }
          return this.enqueue(async () => this.fail('simulated EPP crash mid response body'));
        }
        if (!fdResp) return this.enqueue(async () => this.send({ response_body: { response: {} } }));
        return this.enqueue(async () => this.echo('response_body', [asBuffer(b?.body)], b?.end_of_stream ?? false));
      }
      case 'response_trailers':
        return this.enqueue(async () => this.send({ response_trailers: {} }));
    }
  }

  /** Pick and answer request_headers; in full duplex then echo the body read so far. */
  private async decide(bodyEnded: boolean): Promise<void> {
    if (this.decided) return;
    this.decided = true;
    if (this.host.hang) await this.closedPromise;
    if (this.host.delayMs > 0) await new Promise((r) => setTimeout(r, this.host.delayMs));
    if (this.done) return;
    const fd = this.reqMode === BODY_MODE.FULL_DUPLEX_STREAMED;
    const body = Buffer.concat(this.body);
    let json: JsonObject | undefined;
    if (fd) {
      if (body.length > 0) {
        try {
          const parsed: unknown = JSON.parse(body.toString('utf8'));
          if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
          json = parsed as JsonObject;
        } catch {
          return this.immediate({ status: 400, body: 'request body is not a JSON object' });
        }
      } else json = {};
      if (this.host.requireModel && typeof json.model !== 'string') {
        return this.immediate({ status: 400, body: 'model not found in request body' });
      }
    }
    if (this.host.immediate) return this.immediate(this.host.immediate);
    if (this.host.crash === 'empty-answer') return this.send({});
    const result = this.host.pick({ headers: this.headers, body, json, eligible: [], subset: this.subset });
    if (result === undefined) return this.immediate({ status: 503, body: 'no ready endpoints' });
    if (typeof result === 'object' && !Array.isArray(result)) return this.immediate(result.immediate);
    const value = Array.isArray(result) ? result.join(',') : result;
    this.record.destination = value;
    this.send({
      request_headers: {
        response: {
          header_mutation: { set_headers: [{ header: { key: DESTINATION_HEADER, raw_value: Buffer.from(value) } }] },
          clear_route_cache: true,
        },
      },
      dynamic_metadata: toStruct({ 'envoy.lb': { [DESTINATION_HEADER]: value } }),
    });
    if (this.host.crash === 'after-headers-response') return this.fail('simulated EPP crash after the headers response');
    if ((this.host.crash === 'mid-echo' || this.host.crash === 'stall-echo') && fd && this.bodyStarted) {
      const all = Buffer.concat(this.body);
      this.echo('request_body', [all.subarray(0, Math.floor(all.length / 2))], false);
      if (this.host.crash === 'stall-echo') {
        this.silent = true;
        return;
      }
      return this.fail('simulated EPP crash mid-echo');
    }
    if (fd && this.bodyStarted) this.echo('request_body', this.body, bodyEnded && !this.trailersPending);
  }

  private echo(type: 'request_body' | 'response_body', chunks: Buffer[], eos: boolean): void {
    const all = Buffer.concat(chunks);
    const size = Math.max(1, this.host.echoChunkBytes);
    let off = 0;
    do {
      const piece = all.subarray(off, off + size);
      off += piece.length;
      const last = off >= all.length;
      this.send({ [type]: { response: { body_mutation: { streamed_response: { body: piece, end_of_stream: last && eos } } } } });
    } while (off < all.length);
  }

  private immediate(spec: ImmediateSpec): void {
    const headers = Object.entries(spec.headers ?? {}).map(([key, v]) => ({ header: { key, raw_value: Buffer.from(v) } }));
    this.host.onImmediate();
    this.send({
      immediate_response: {
        status: { code: spec.status },
        body: typeof spec.body === 'string' ? Buffer.from(spec.body) : spec.body,
        ...(headers.length > 0 ? { headers: { set_headers: headers } } : {}),
        details: spec.details ?? '',
      },
    });
    this.finish();
  }

  private enqueue(fn: () => Promise<void>): void {
    this.chain = this.chain.then(fn).catch(() => this.fail('simulated EPP internal error'));
  }

  private send(r: PbProcessingResponse): void {
    if (this.done) return;
    this.record.sent.push(r);
    this.call.write(r);
  }

  /** End the stream with OK (like an EPP returning from Process). */
  private finish(): void {
    if (this.done) return;
    this.call.end();
    this.close('ok');
  }

  private fail(details: string): void {
    if (this.done) return;
    this.call.emit('error', { code: grpc.status.UNAVAILABLE, details });
    this.close('failed');
  }

  private close(end: StreamEnd): void {
    if (this.done) return;
    this.done = true;
    this.record.closed = true;
    this.ended = end;
    this.released();
    this.host.onClosed();
    this.report();
  }

  private report(): void {
    if (this.reported || this.ended === undefined || !this.h2Closed) return;
    this.reported = true;
    const end = this.h2Reset && this.ended === 'ok' ? 'cancelled' : this.ended;
    this.record.end = end;
    this.host.onEnded(end);
  }
}
