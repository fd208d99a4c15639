/**
 * One FULL_DUPLEX_STREAMED body direction of an ext_proc stream: Envoy's bytes
 * the processor has not echoed yet (docs/protocol.md, "Body modes").
 */
import type { BodyPhase } from '../protocol/codec.js';
import { streamedBody } from '../protocol/responses.js';
import { retain } from './held-bytes.js';

const EMPTY: Buffer = Buffer.alloc(0);

/**
 * One FULL_DUPLEX_STREAMED body direction: Envoy's bytes not echoed yet (views
 * into Envoy's messages, let go as they are echoed). M echoes may answer N
 * chunks; an echo longer than what is pending (an EPP that rewrites the body) is clamped.
 */
export class EchoLedger {
  private chunks: Buffer[] = [];
  private offset = 0;
  private unechoed = 0;
  /** Envoy's body ended with end_of_stream on a body message (not by trailers). */
  private bodyEnded = false;
  /** The echo sent end_of_stream: this direction's body is complete. */
  private echoEnded = false;
  /** Envoy sent a body message in this direction. */
  private started = false;

  add(chunk: Buffer, endOfStream: boolean): void {
    this.started = true;
    if (this.echoEnded) return;
    if (chunk.length > 0) {
      this.chunks.push(retain(chunk));
      this.unechoed += chunk.length;
    }
    if (endOfStream) this.bodyEnded = true;
  }

  /** `bytes` more bytes were echoed (and the echo ended when `endOfStream`). */
  echoed(bytes: number, endOfStream: boolean): void {
    let left = Math.min(bytes, this.unechoed);
    this.unechoed -= left;
    while (left > 0) {
      const head = this.chunks[0]!;
      const avail = head.length - this.offset;
      if (left < avail) {
        this.offset += left;
        left = 0;
      } else {
        left -= avail;
        this.chunks.shift();
        this.offset = 0;
      }
    }
    if (endOfStream) this.close();
  }

  /** An echo may come: Envoy sent body in this direction and the echo has not ended. */
  get open(): boolean {
    return this.started && !this.echoEnded;
  }

  /** Bytes Envoy sent that were not echoed yet. */
  get pending(): number {
    return this.unechoed;
  }

  /** Nothing left to echo: every byte echoed, and the echo ended if Envoy's body did. */
  get complete(): boolean {
    return this.echoEnded || (this.unechoed === 0 && !this.bodyEnded);
  }

  /** Appends the rest of the echo to `out`, the last piece with end_of_stream if Envoy's body ended with it. */
  finish(phase: BodyPhase, out: Buffer[]): void {
    if (this.echoEnded) return;
    const eos = this.bodyEnded;
    const pieces = this.chunks;
    if (pieces.length > 0 && this.offset > 0) pieces[0] = pieces[0]!.subarray(this.offset);
    if (pieces.length === 0 && eos) out.push(streamedBody(phase, EMPTY, true));
    for (let i = 0; i < pieces.length; i++) out.push(streamedBody(phase, pieces[i]!, eos && i === pieces.length - 1));
    this.chunks = [];
    this.offset = 0;
    this.unechoed = 0;
    if (eos) this.close();
  }

  private close(): void {
    this.echoEnded = true;
    this.chunks = [];
    this.offset = 0;
    this.unechoed = 0;
  }
}
