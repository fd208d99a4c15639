/**
 * Async sequences the front door passes data through: a queue one side pushes
 * to while the other side iterates it (ext_proc events, the upstream request
 * body), and a reader that marks the last chunk of a body (Envoy sends every
 * body chunk as it arrives; the last one carries end_of_stream).
 */

/** A single-consumer queue: push, end (iteration returns once drained) or fail (iteration throws once drained). */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private ended = false;
  private failed: Error | undefined;
  private wake: (() => void) | undefined;

  push(item: T): void {
    this.items.push(item);
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  /** Iteration throws `err` once the items pushed so far are consumed; no effect on a queue that ended and was drained. */
  fail(err: Error): void {
    if (this.ended && this.items.length === 0) return;
    this.failed = err;
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.items.length > 0) yield this.items.shift()!;
      else if (this.failed) throw this.failed;
      else if (this.ended) return;
      else await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }
}

/**
 * The chunks of `body`, each yielded once the next one (or the end) has arrived,
 * so the last one can say it is the last; an empty body yields one empty last chunk.
 */
export async function* chunksMarkingLast(body: AsyncIterable<Buffer>): AsyncGenerator<{ chunk: Buffer; last: boolean }> {
  let held: Buffer | undefined;
  for await (const chunk of body) {
    if (held) yield { chunk: held, last: false };
    held = chunk;
  }
  yield { chunk: held ?? Buffer.alloc(0), last: true };
}
