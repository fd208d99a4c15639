/**
 * Hostile answers for the Kubernetes API server stand-in (KubeApiServer.answerWith):
 * a LIST body that never ends, streamed with backpressure until the client hangs
 * up, counting what the server managed to hand to its socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Responder } from './kube-apiserver-http.js';

export interface EndlessBody {
  readonly respond: Responder;
  /** Bytes of body accepted by the server's socket so far (all answers together). */
  readonly written: () => number;
  /** Answers whose connection has closed (the client hung up, or `total` was written). */
  readonly closed: () => number;
  /** Answers given. */
  readonly answers: () => number;
}

/** One list item of about 64 KiB (a big annotation). */
function filler(i: number): string {
  return JSON.stringify({ apiVersion: 'v1', kind: 'Filler', metadata: { name: `f${i}`, namespace: 'default', annotations: { pad: 'x'.repeat(64 * 1024) } } });
}

/**
 * A 200 list answer (no Content-Length) whose items go on until the client disconnects
 * or `total` bytes were written; `status` other than 200 streams the same bytes as an error body.
 */
export function endlessList(total: number, status = 200): EndlessBody {
  let written = 0;
  let answers = 0;
  let closed = 0;
  const respond = (req: IncomingMessage, res: ServerResponse): void => {
    answers++;
    req.resume();
    res.writeHead(status, { 'content-type': 'application/json' });
    let i = 0;
    const pump = (): void => {
      while (!res.destroyed && written < total) {
        const chunk = (i === 0 ? '{"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":"1"},"items":[' : ',') + filler(i);
        i++;
        written += Buffer.byteLength(chunk);
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!res.destroyed) res.end(']}');
    };
    res.on('close', () => closed++);
    pump();
  };
  return { respond, written: () => written, closed: () => closed, answers: () => answers };
}
