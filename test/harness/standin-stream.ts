// The Envoy stand-in's side of one ext_proc stream: an event queue over a grpc-js duplex
// call, opened lazily on the first message, with a per-wait timeout, plus the wire log.
import type * as grpc from '@grpc/grpc-js';
import type { PbProcessingRequest, PbProcessingResponse } from './protos.js';

export interface WireRecord {
  /** 'out': Envoy -> processor; 'in': processor -> Envoy; 'end': the processor ended the stream. */
  dir: 'out' | 'in' | 'end';
  /** The oneof case ('request_headers', 'immediate_response', ...); 'empty' if none; for 'end': 'ok' | 'error'. */
  type: string;
  message?: PbProcessingRequest | PbProcessingResponse;
  grpcCode?: number;
  grpcDetails?: string;
}

export type StreamEvent =
  | { kind: 'message'; message: PbProcessingResponse }
  | { kind: 'closed-ok' }
  | { kind: 'error'; code: number; details: string }
  | { kind: 'timeout' }
  | { kind: 'aborted' };

export type CallFactory = () => grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse>;

export class StandinStream {
  readonly wire: WireRecord[] = [];
  private call: grpc.ClientDuplexStream<PbProcessingRequest, PbProcessingResponse> | undefined;
  private readonly queue: StreamEvent[] = [];
  private waiter: ((e: StreamEvent) => void) | undefined;
  private ended = false;
  private closedByUs = false;
  private readonly onAbort = (): void => this.push({ kind: 'aborted' });

  constructor(
    private readonly factory: CallFactory,
    private readonly signal: AbortSignal | undefined,
    private readonly onWire: ((r: WireRecord) => void) | undefined,
  ) {
    signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  get opened(): boolean {
    return this.call !== undefined;
  }

  /** True once the processor ended the stream (OK or error). */
  get serverEnded(): boolean {
    return this.ended;
  }

  send(msg: PbProcessingRequest, type: string): void {
    this.record({ dir: 'out', type, message: msg });
    if (this.ended || this.closedByUs) return;
    if (!this.call) this.open();
    this.call!.write(msg);
  }

  /** Next event; `timeoutMs` undefined waits without a message timeout. */
  next(timeoutMs: number | undefined): Promise<StreamEvent> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(queued);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      this.waiter = (e) => {
        if (timer) clearTimeout(timer);
        this.waiter = undefined;
        resolve(e);
      };
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => this.waiter?.({ kind: 'timeout' }), timeoutMs);
      }
    });
  }

  /** Envoy's ExternalProcessorStreamImpl::close(): half-close, then reset. Idempotent. */
  close(): void {
    this.signal?.removeEventListener('abort', this.onAbort);
    if (this.closedByUs) return;
    this.closedByUs = true;
    if (this.call && !this.ended) {
      this.call.end();
      this.call.cancel();
    }
  }

  private open(): void {
    const call = this.factory();
    this.call = call;
    call.on('data', (m: PbProcessingResponse) => {
      if (this.closedByUs) return;
      this.record({ dir: 'in', type: m.response ?? 'empty', message: m });
      this.push({ kind: 'message', message: m });
    });
    call.on('error', () => undefined); // always observed through 'status'
    call.on('status', (s: grpc.StatusObject) => {
      if (this.ended) return;
      this.ended = true;
      if (this.closedByUs) return;
      const ok = s.code === 0;
      this.record({ dir: 'end', type: ok ? 'ok' : 'error', grpcCode: s.code, grpcDetails: s.details });
      this.push(ok ? { kind: 'closed-ok' } : { kind: 'error', code: s.code, details: s.details });
    });
  }

  private record(r: WireRecord): void {
    this.wire.push(r);
    this.onWire?.(r);
  }

  private push(e: StreamEvent): void {
    if (this.waiter) this.waiter(e);
    else this.queue.push(e);
  }
}
