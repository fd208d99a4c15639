/**
 * Wires the hostile-peer defence (peer-guard.ts) onto a node:http2 server,
 * ours or the ones grpc-js creates: one ConnectionGuard per session, fed by
 * each stream's open, first message and close; a session past its limits is
 * sent GOAWAY (ENHANCE_YOUR_CALM) and destroyed, which cancels its streams, and
 * its address's new connections are closed unserved for cutCooldownMs.
 */
import { constants as h2, type Http2SecureServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import type { Socket } from 'node:net';
import { ConnectionGuard, CutCooldown, type PeerCutReason, type PeerLimits } from './peer-guard.js';

export type OnPeerCut = (reason: PeerCutReason, remote: string) => void;

const now = (): number => performance.now();

/** Registers the guard's listeners on `server`; call it before the server's own 'stream' listener where it can be. */
export function guardHttp2Server(server: Http2Server | Http2SecureServer, limits: PeerLimits, onCut: OnPeerCut): void {
  const guards = new WeakMap<Http2Session, ConnectionGuard>();
  const cooldown = new CutCooldown(limits.cutCooldownMs, now);
  // Before any TLS or HTTP/2 work: a peer that was just cut does not get a fresh burst by reconnecting.
  server.prependListener('connection', (socket: Socket) => {
    if (socket.remoteAddress !== undefined && cooldown.refuses(socket.remoteAddress)) socket.destroy();
  });
  const onCutHere: OnPeerCut = (reason, remote) => {
    cooldown.cut(remote.slice(0, remote.lastIndexOf(':')));
    onCut(reason, remote);
  };
  server.on('session', (session: Http2Session) => {
    guards.set(session, new ConnectionGuard(limits, now));
  });
  server.on('stream', (stream: ServerHttp2Stream) => {
    const session = stream.session;
    const guard = session && guards.get(session);
    if (!session || guard === undefined || session.destroyed) return;
    if (stream.closed || stream.destroyed) {
      // Reset in the same read it was opened in.
      cut(session, guard.opened() ?? guard.closed(false, true), onCutHere);
      return;
    }
    if (cut(session, guard.opened(), onCutHere)) return;
    let used = false;
    stream.once('data', () => {
      used = true;
      guard.used();
    });
    stream.once('close', () => {
      // Early: the peer reset it before anything was sent on it (a status counts as an answer).
      if (!session.destroyed) cut(session, guard.closed(used, !stream.headersSent && stream.rstCode !== h2.NGHTTP2_NO_ERROR), onCutHere);
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
