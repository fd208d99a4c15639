/**
 * The router answering Envoy itself: the request headers answer (a remote
 * parent Gateway's address in Parent mode, else CONTINUE), then every later
 * message answered per mode, FULL_DUPLEX_STREAMED bodies echoed.
 *
 * In FULL_DUPLEX_STREAMED the request headers answer waits for the whole body,
 * as EPPs do, unless the held body passes extProc.maxHeldBytesPerStream or the
 * process budget: then it goes early and the body streams through.
 */
import type { EnvoyMessage } from '../protocol/envoy-message.js';
import type { HeldBound } from './held-bytes.js';
import type { StreamOutcome } from './observer.js';
import type { EnvoySide, Processor } from './processor.js';

export class RouterAnswers implements Processor {
  /**
   * `requestHeaders`: the answer to Envoy's request headers (absent: CONTINUE).
   * `outcome`: 'parent' is decided when that answer goes out; 'passthrough' at once.
   */
  constructor(
    private readonly envoy: EnvoySide,
    private readonly outcome: Extract<StreamOutcome, 'parent' | 'passthrough'>,
    private readonly requestHeaders?: Buffer,
  ) {
    envoy.writer.produceFrom(envoy.writer.input);
    if (outcome === 'passthrough') envoy.decided('passthrough');
  }

  message(_m: EnvoyMessage, over: HeldBound | undefined): void {
    const writer = this.envoy.writer;
    const waits = writer.waits;
    if (!waits.awaitingRequestHeaders) {
      writer.answerPending();
      return;
    }
    if (waits.requestDuplex && !waits.requestComplete && over === undefined) return; // hold the body
    writer.answerPending(this.requestHeaders);
    this.envoy.decided(this.outcome);
  }

  endOfInput(): void {
    this.envoy.finish(this.outcome);
  }

  dispose(): void {}
}
