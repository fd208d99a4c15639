// One direction (request or response) of Envoy's ext_proc filter, as the stand-in runs it:
// which messages are sent per processing mode, which responses are accepted, and how they
// are applied. Terminal conditions unwind with `Halt`.
import { applyHeaderMutation, toPbHeaderMap, type HeaderList } from './headers.js';
import {
  asBuffer,
  type PbCommonResponse,
  type PbHeaderMutation,
  type PbProcessingRequest,
  type PbProcessingResponse,
} from './protos.js';
import {
  applyDynamicMetadata,
  Halt,
  localReply,
  sendDecorated,
  type Direction,
  type DirectionModes,
  type FilterContext,
  type HttpMessage,
  type LocalReply,
} from './standin-context.js';

function bodyMutation(cr: PbCommonResponse | undefined, current: Buffer): Buffer | 'streamed' {
  const m = cr?.body_mutation;
  if (!m?.mutation) return current;
  if (m.mutation === 'streamed_response') return 'streamed';
  return m.mutation === 'body' ? asBuffer(m.body) : Buffer.alloc(0);
}

export class DirectionRun {
  private headers: HeaderList;
  private trailers: HeaderList | undefined;
  private readonly out: Buffer[] = [];
  /** Body units sent or to be sent, not yet answered: pass unmodified if the processor is dropped. */
  private unanswered: Buffer[] = [];
  private headersAnswered = false;
  /** Response direction: client response headers already sent (a later local reply resets). */
  committed = false;

  /** Headers as mutated so far. */
  get currentHeaders(): HeaderList {
    return this.headers;
  }

  constructor(
    private readonly ctx: FilterContext,
    private readonly dir: Direction,
    private readonly input: HttpMessage,
    private readonly modes: DirectionModes,
  ) {
    this.headers = input.headers.map(([k, v]) => [k, v]);
    this.trailers = input.trailers?.map(([k, v]) => [k, v]);
  }

  /** Runs the direction; a Halt of kind 'detach' is absorbed (continue without the processor). */
  async run(): Promise<HttpMessage> {
    this.unanswered = this.input.body.slice();
    if (!this.ctx.processingComplete) {
      try {
        if (this.modes.body === 'FULL_DUPLEX_STREAMED') await this.runFullDuplex();
        else await this.runSequential();
      } catch (e) {
        if (!(e instanceof Halt) || e.kind !== 'detach') throw e;
        this.ctx.processingComplete = true;
        this.ctx.detachedReason = e.reason;
        this.ctx.stream.close();
      }
    }
    // Whatever the processor did not answer (body mode NONE, or dropped processor) passes as is.
    this.out.push(...this.unanswered);
    this.unanswered = [];
    this.committed = true;
    return { headers: this.headers, body: this.out, trailers: this.trailers };
  }

  private get hasBody(): boolean {
    return this.input.body.length > 0;
  }

  private async runSequential(): Promise<void> {
    const { header, body, trailer } = this.modes;
    const streamed = body === 'STREAMED';
    const pipelined = streamed && this.ctx.protocolConfig.sendBodyWithoutWaiting && header === 'SEND';
    let units: Buffer[] = [];
    if (this.hasBody && body !== 'NONE') units = streamed ? this.input.body.slice() : [Buffer.concat(this.input.body)];
    const sendTrailers = this.trailers !== undefined && trailer === 'SEND';
    let replaced = false;
    if (header === 'SEND') {
      this.sendHeaders();
      if (pipelined) this.sendUnits(units);
      let answered = 0;
      while (!this.headersAnswered) {
        const m = await this.receive();
        if (m.response === `${this.dir}_headers`) {
          const cr = m[`${this.dir}_headers`]?.response;
          this.applyCommon(cr, true);
          this.headersAnswered = true;
          if (cr?.status === 1) replaced = this.replaceBody(cr);
        } else if (pipelined && m.response === `${this.dir}_body` && answered < units.length) {
          this.answerUnit(m, true);
          answered++;
        } else this.spurious(m, `${this.dir}_headers`);
      }
      if (replaced) return;
      units = units.slice(answered);
      if (!pipelined) this.sendUnits(units);
    } else {
      this.sendUnits(units);
    }
    this.committed = this.dir === 'response' && !(body.startsWith('BUFFERED') && this.hasBody);
    for (let i = 0; i < units.length; i++) {
      const m = await this.receive();
      if (m.response !== `${this.dir}_body`) this.spurious(m, `${this.dir}_body`);
      // Headers are held (so a body response may mutate them) only in the buffered modes.
      this.answerUnit(m, header === 'SEND' && body !== 'STREAMED');
    }
    this.committed = this.dir === 'response';
    if (sendTrailers) {
      this.send({ [`${this.dir}_trailers`]: { trailers: toPbHeaderMap(this.trailers!) } }, `${this.dir}_trailers`);
      const m = await this.receive();
      if (m.response !== `${this.dir}_trailers`) this.spurious(m, `${this.dir}_trailers`);
      this.applyTrailers(m[`${this.dir}_trailers`]?.header_mutation);
    }
  }

  private async runFullDuplex(): Promise<void> {
    const sendHeaders = this.modes.header === 'SEND';
    if (sendHeaders) this.sendHeaders();
    else this.headersAnswered = true;
    if (!sendHeaders && this.dir === 'response') this.committed = true;
    const chunks = this.input.body;
    chunks.forEach((c, i) => {
      const eos = i === chunks.length - 1 && this.trailers === undefined;
      this.send({ [`${this.dir}_body`]: { body: c, end_of_stream: eos } }, `${this.dir}_body`);
      this.ctx.fdBodySent = true;
    });
    // Chunks handed to the processor in full duplex never reach the upstream by themselves.
    this.unanswered = [];
    const trailersSent = this.trailers !== undefined;
    if (trailersSent) this.send({ [`${this.dir}_trailers`]: { trailers: toPbHeaderMap(this.trailers!) } }, `${this.dir}_trailers`);
    let bodyDone = !this.hasBody;
    let trailersDone = !trailersSent;
    while (!(this.headersAnswered && bodyDone && trailersDone)) {
      const m = await this.receive();
      if (m.response === `${this.dir}_headers` && !this.headersAnswered) {
        const cr = m[`${this.dir}_headers`]?.response;
        this.applyCommon(cr, true);
        this.headersAnswered = true;
        if (this.dir === 'response') this.committed = true;
        if (cr?.status === 1) {
          // CONTINUE_AND_REPLACE: the chunks handed over are dropped, the direction's body is the
          // mutation's (or none), and no body or trailers answer is awaited any more: one is spurious.
          const next = bodyMutation(cr, Buffer.alloc(0));
          if (next !== 'streamed' && next.length > 0) this.out.push(next);
          this.headers = this.headers.filter(([k]) => k !== 'content-length');
          return;
        }
      } else if (m.response === `${this.dir}_body`) {
        if (!this.headersAnswered) this.spurious(m, `${this.dir}_headers`, 'body response before the headers response');
        if (bodyDone) this.spurious(m, 'nothing', 'body response after the body ended');
        const sr = m[`${this.dir}_body`]?.response?.body_mutation;
        if (sr?.mutation !== 'streamed_response') this.spurious(m, 'streamed_response', 'full duplex body response without streamed_response');
        this.out.push(asBuffer(sr.streamed_response?.body));
        if (sr.streamed_response?.end_of_stream) bodyDone = true;
      } else if (m.response === `${this.dir}_trailers` && !trailersDone) {
        if (!this.headersAnswered) this.spurious(m, `${this.dir}_headers`, 'trailers response before the headers response');
        this.applyTrailers(m[`${this.dir}_trailers`]?.header_mutation);
        trailersDone = true;
        bodyDone = true;
      } else {
        this.spurious(m, this.headersAnswered ? `${this.dir}_body or ${this.dir}_trailers` : `${this.dir}_headers`);
      }
    }
  }

  private sendHeaders(): void {
    const eos = !this.hasBody && this.trailers === undefined;
    this.send({ [`${this.dir}_headers`]: { headers: toPbHeaderMap(this.headers), end_of_stream: eos } }, `${this.dir}_headers`);
  }

  private sendUnits(units: Buffer[]): void {
    units.forEach((u, i) => {
      const eos = i === units.length - 1 && this.trailers === undefined;
      this.send({ [`${this.dir}_body`]: { body: u, end_of_stream: eos } }, `${this.dir}_body`);
    });
    if (units.length > 0) this.unanswered = units.slice();
  }

  private answerUnit(m: PbProcessingResponse, headersHeld: boolean): void {
    const cr = m[`${this.dir}_body`]?.response;
    const raw = this.unanswered.shift() ?? Buffer.alloc(0);
    const next = bodyMutation(cr, raw);
    if (next === 'streamed') this.spurious(m, `${this.dir}_body`, 'streamed_response outside FULL_DUPLEX_STREAMED');
    if (headersHeld) this.applyCommon(cr, false);
    this.out.push(next as Buffer);
  }

  /** CONTINUE_AND_REPLACE: the body mutation replaces the whole body; nothing more is sent. */
  private replaceBody(cr: PbCommonResponse): boolean {
    const next = bodyMutation(cr, Buffer.concat(this.input.body));
    if (cr.body_mutation?.mutation && next !== 'streamed') {
      this.unanswered = [next];
      this.headers = this.headers.filter(([k]) => k !== 'content-length');
    }
    return true;
  }

  private applyCommon(cr: PbCommonResponse | undefined, isHeadersResponse: boolean): void {
    if (!cr?.header_mutation) return;
    this.headers = this.mutate(this.headers, cr.header_mutation);
    // clear_route_cache is honoured only together with a header mutation.
    if (isHeadersResponse && cr.clear_route_cache) this.ctx.routeCacheCleared = true;
  }

  private applyTrailers(mutation: PbHeaderMutation | undefined): void {
    if (mutation) this.trailers = this.mutate(this.trailers ?? [], mutation);
  }

  private mutate(list: HeaderList, mutation: PbHeaderMutation): HeaderList {
    const r = applyHeaderMutation(list, mutation, { permissive: false, isResponse: this.dir === 'response' });
    if (!r.ok) this.fail(localReply(500, '', `invalid header mutation: ${r.error}`, 'ext_proc_error_invalid_mutation'));
    return (r as { headers: HeaderList }).headers;
  }

  private send(req: PbProcessingRequest, type: string): void {
    sendDecorated(this.ctx, this.dir, req, type);
  }

  /** Waits for the next processor message; stream ends, timeouts and immediate responses halt. */
  private async receive(): Promise<PbProcessingResponse> {
    const fd = this.modes.body === 'FULL_DUPLEX_STREAMED';
    let timeout = fd ? this.ctx.streamIdleTimeoutMs : this.ctx.messageTimeoutMs;
    for (;;) {
      const ev = await this.ctx.stream.next(timeout);
      if (ev.kind === 'aborted') throw new Halt('reset', 'client reset the request');
      if (ev.kind === 'closed-ok') throw new Halt('detach', 'processor closed the stream with OK');
      if (ev.kind === 'error') {
        const reason = `ext_proc stream error: gRPC ${ev.code} ${ev.details}`;
        if (this.ctx.failureModeAllow && !this.ctx.fdBodySent) throw new Halt('detach', `${reason} (failure_mode_allow)`);
        this.fail(localReply(500, '', reason, `ext_proc_error_gRPC_error_${ev.code}`));
      }
      if (ev.kind === 'timeout') {
        if (fd) this.fail(localReply(408, 'stream timeout', 'stream idle timeout', 'stream_idle_timeout'));
        if (this.ctx.failureModeAllow) throw new Halt('detach', 'message timeout (failure_mode_allow)');
        this.fail(localReply(504, '', 'message timeout', 'ext_proc_error_per-message_timeout_exceeded'));
      }
      if (ev.kind !== 'message') continue;
      const m = ev.message;
      if (m.override_message_timeout) {
        // Envoy restarts the running message timer; in full duplex no timer runs (ignored). It reads
        // nothing else of such a message: a response member beside it is not applied.
        const t = m.override_message_timeout;
        if (!fd) timeout = (t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
        continue;
      }
      if (m.response) applyDynamicMetadata(this.ctx, m);
      if (m.response === 'immediate_response') this.immediate(m);
      return m;
    }
  }

  private immediate(m: PbProcessingResponse): never {
    const ir = m.immediate_response ?? {};
    let status = ir.status?.code ?? 200;
    if (status < 200 || status > 599) status = 200;
    const reply = localReply(status, asBuffer(ir.body), 'immediate_response', ir.details ?? '');
    const r = applyHeaderMutation(reply.headers, ir.headers, { permissive: true, isResponse: true });
    if (r.ok) reply.headers = r.headers;
    this.fail(reply);
  }

  private spurious(m: PbProcessingResponse, expected: string, why?: string): never {
    const got = m.response ?? 'empty ProcessingResponse';
    const reason = `spurious: ${why ?? `expected ${expected}, got ${got}`}`;
    this.fail(localReply(500, '', reason, 'ext_proc_error_spurious_message'));
  }

  private fail(reply: LocalReply): never {
    this.ctx.processingComplete = true;
    this.ctx.stream.close();
    throw new Halt('local', reply.reason, reply);
  }
}
