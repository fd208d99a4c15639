/**
 * Envoy's request messages as received (headers, body chunks, trailers; raw
 * buffers, copied only where a view would keep a much larger socket read
 * alive: retain() in held-bytes.ts), kept while no EPP answer has reached Envoy, so they can be
 * replayed to the next candidate's EPP. Bounded: past `maxBytes` it gives up
 * (drops everything) and the request gets no failover.
 */
import { retain } from './held-bytes.js';

export class ReplayLog {
  private readonly kept: Buffer[] = [];
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Keeps `msg`; false (and nothing kept any more) once the bound is passed. */
  add(msg: Buffer): boolean {
    this.bytes += msg.length;
    if (this.bytes > this.maxBytes) {
      this.kept.length = 0;
      return false;
    }
    this.kept.push(retain(msg));
    return true;
  }

  get messages(): readonly Buffer[] {
    return this.kept;
  }

  get size(): number {
    return this.bytes;
  }
}
