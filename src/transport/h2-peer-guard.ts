/**
 * Wires the hostile-peer defence (peer-guard.ts) onto a node:http2 server,
 * ours or the ones grpc-js creates: one ConnectionGuard per session (its early
 * resets taken from its remote address's bucket), fed by
 * each stream's open, first message and close; a session past its limits is
 * sent GOAWAY (ENHANCE_YOUR_CALM) and destroyed, which cancels its streams, and
 * its address's new connections are closed unserved for cutCooldownMs.
 * Trusted peers (peerLimits.trustedPeers: the proxies in the pod, unix sockets)
 * stand for many clients: their early resets are not counted, their address
 * never cooled down.
 */
import { constants as h2, type Http2SecureServer, type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { isIP, type Socket } from 'node:net';
import { blockListOf, ipFamily } from '../config/answer-rules.js';
import { AddressBuckets, ConnectionGuard, CutCooldown, type PeerCutReason, type PeerLimits } from './peer-guard.js';

export type OnPeerCut = (reason: PeerCutReason, remote: string) => void;

const now = (): number => performance.now();

/** Sessions cut and about to be destroyed. */
const cutSessions = new WeakSet<Http2Session>();

/** True once the defence has cut `session` (its streams are not to be served). */
export function wasCut(session: Http2Session | undefined): boolean {
  return session !== undefined && cutSessions.has(session);
}

/** Registers the guard's listeners on `server`; call it before the server's own 'stream' listener where it can be. */
export function guardHttp2Server(server: Http2Server | Http2SecureServer, limits: PeerLimits, onCut: OnPeerCut): void {
  const guards = new WeakMap<Http2Session, ConnectionGuard>();
  const cooldown = new CutCooldown(limits.cutCooldownMs, now);
  const buckets = new AddressBuckets(limits, now);
  const trusted = trustedPeer(limits.trustedPeers);
  // Before any TLS or HTTP/2 work: a peer that was just cut does not get a fresh burst by reconnecting.
  server.prependListener('connection', (socket: Socket) => {
    if (socket.remoteAddress !== undefined && cooldown.refuses(socket.remoteAddress)) socket.destroy();
  });
  const onCutHere: OnPeerCut = (reason, remote) => {
    const address = remote.slice(0, remote.lastIndexOf(':'));
    if (!trusted(address)) cooldown.cut(address);
    onCut(reason, remote);
  };
  server.on('session', (session: Http2Session) => {
    const address = session.socket?.remoteAddress;
    const inPod = trusted(address);
    guards.set(session, new ConnectionGuard(limits, now, address === undefined || inPod ? undefined : () => buckets.of(address), inPod));
  });
  server.on('stream', (stream: ServerHttp2Stream) => {
    const session = stream.session;
    const guard = session && guards.get(session);
    if (!session || guard === undefined || session.destroyed || cutSessions.has(session)) return;
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
      // Early: the peer reset it before anything was sent on it (a status counts as an answer), with
      // whatever error code its RST_STREAM carries: NO_ERROR is as cheap to send as CANCEL.
      if (!session.destroyed) cut(session, guard.closed(used, !stream.headersSent), onCutHere);
    });
  });
}

/** True for a unix-socket peer (no address) and an address in `cidrs`; IPv4-mapped IPv6 is judged as IPv4. */
export function trustedPeer(cidrs: readonly string[]): (address: string | undefined) => boolean {
  const list = blockListOf(cidrs);
  return (address) => {
    if (address === undefined || address === 'unknown') return true;
    if (!isIP(address)) return false;
    const { ip, family } = ipFamily(address);
    return list.check(ip, family);
  };
}

function cut(session: Http2Session, reason: PeerCutReason | undefined, onCut: OnPeerCut): boolean {
  if (reason === undefined || session.destroyed || cutSessions.has(session)) return false;
  cutSessions.add(session);
  const remote = `${session.socket?.remoteAddress ?? 'unknown'}:${session.socket?.remotePort ?? 0}`;
  // GOAWAY now: nghttp2 ignores the streams the peer opens after it. The destroy waits: this
  // runs inside nghttp2's callbacks (a 'stream' or 'close' listener), and Node 22 aborts on a
  // session destroyed there ("current_nghttp2_memory_ == 0").
  session.goaway(h2.NGHTTP2_ENHANCE_YOUR_CALM);
  setImmediate(() => {
    if (!session.destroyed) session.destroy();
  });
  onCut(reason, remote);
  return true;
}
