/**
 * Hostile answers for the Kubernetes API server stand-in (KubeApiServer.answerWith):
 * a LIST body that never ends, streamed with backpressure until the client hangs
 * up, counting what the server managed to hand to its socket; and a LIST whose
 * pages are each small but whose continue tokens go on (for ever, or for many
 * pages), as a broken or hostile server may page.
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

export interface PagedList {
  readonly respond: Responder;
  /** Page answers given (all lists together). */
  readonly pages: () => number;
  /** Page answers given whose request carried a continue token (pages after the first). */
  readonly continued: () => number;
  /** The most pages any one list was given (the deepest continue token asked for, plus one). */
  readonly deepest: () => number;
}

/**
 * LIST answers of about `pageBytes` each (64 KiB items, Content-Length set); every page but
 * the `pages`-th of a list carries a continue token (`pages` undefined: every page does, the
 * list never ends).
 */
export function pagedList(pageBytes: number, pages?: number): PagedList {
  let given = 0;
  let continued = 0;
  let deepest = 0;
  const respond = (req: IncomingMessage, res: ServerResponse): void => {
    given++;
    req.resume();
    const token = new URL(req.url ?? '/', 'http://x').searchParams.get('continue');
    if (token) continued++;
    const index = token ? Number(Buffer.from(token, 'base64url').toString()) : 0;
    deepest = Math.max(deepest, index + 1);
    const items: string[] = [];
    let size = 0;
    for (let i = 0; size < pageBytes; i++) {
      const item = filler(index * 1000 + i);
      items.push(item);
      size += item.length + 1;
    }
    const last = pages !== undefined && index + 1 >= pages;
    const meta = last ? { resourceVersion: '1' } : { resourceVersion: '1', continue: Buffer.from(String(index + 1)).toString('base64url') };
    const body = `{"apiVersion":"v1","kind":"List","metadata":${JSON.stringify(meta)},"items":[${items.join(',')}]}`;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  return { respond, pages: () => given, continued: () => continued, deepest: () => deepest };
}
