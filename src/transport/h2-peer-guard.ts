/**
 * Wires the hostile-peer defence (peer-guard.ts) onto a node:http2 server,
 * ours or the ones grpc-js creates: one ConnectionGuard per session, fed by
 * each stream's open, first message and close; a session past its limits is
 * sent GOAWAY (ENHANCE_YOUR_CALM) and destroyed, which cancels its streams.
 */
import { constants as h2, type Http2SecureServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { ConnectionGuard, type PeerCutReason, type PeerLimits } from './peer-guard.js';

export type OnPeerCut = (reason: PeerCutReason, remote: string) => void;

const now = (): number => performance.now();

/** Registers the guard's listeners on `server`; call it before the server's own 'stream' listener where it can be. */
export function guardHttp2Server(server: Http2Server | Http2SecureServer, limits: PeerLimits, onCut: OnPeerCut): void {
  const guards = new WeakMap<Http2Session, ConnectionGuard>();
  server.on('session', (session: Http2Session) => {
    guards.set(session, new ConnectionGuard(limits, now));
  });
  server.on('stream', (stream: ServerHttp2Stream) => {
    const session = stream.session;
    const guard = session && guards.get(session);
    if (!session || guard === undefined || session.destroyed) return;
    if (stream.closed || stream.destroyed) {
      // Reset in the same read it was opened in.
      cut(session, guard.opened() ?? guard.closed(false, true), onCut);
      return;
    }
    if (cut(session, guard.opened(), onCut)) return;
    let used = false;
    stream.once('data', () => {
      used = true;
      guard.used();
    });
    stream.once('close', () => {
      // Early: the peer reset it before anything was sent on it (a status counts as an answer).
      if (!session.destroyed) cut(session, guard.closed(used, !stream.headersSent && stream.rstCode !== h2.NGHTTP2_NO_ERROR), onCut);
    });
  });
}

function cut(session: Http2Session, reason: PeerCutReason | undefined, onCut: OnPeerCut): boolean {
  if (reason === undefined || session.destroyed) return false;
  const remote = `${session.socket?.remoteAddress ?? 'unknown'}:${session.socket?.remotePort ?? 0}`;
  session.goaway(h2.NGHTTP2_ENHANCE_YOUR_CALM);
  session.destroy();
  onCut(reason, remote);
  return true;
}
