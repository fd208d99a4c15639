/**
 * Parent mode: probes a remote parent Gateway by TCP connect, or by an HTTP(S)
 * GET of a health path (2xx/3xx = up). Used for a remote candidate's readiness
 * when its EPP is not reachable (by design in Parent mode).
 */
import { connect } from 'node:net';
import { dump, HttpOrigin } from './http-origin.js';
import { ProbeLoop } from './probe-loop.js';
import { joinHostPort, splitHostPort, type ProbeListener, type ProbeOutcome } from './probe-types.js';
import type { Clock } from './types.js';

export interface ParentProbeSettings {
  /** ip:port of the parent Gateway. */
  readonly address: string;
  readonly mode: 'tcp' | 'http';
  readonly path?: string;
  readonly scheme: 'http' | 'https';
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly healthyThreshold: number;
  readonly unhealthyThreshold: number;
}

export class ParentProber extends ProbeLoop {
  private origin: HttpOrigin | undefined;

  constructor(
    readonly settings: ParentProbeSettings,
    private readonly deps: { readonly clock: Clock; readonly onResult?: ProbeListener },
  ) {
    super(settings, deps.onResult);
  }

  protected release(): void {
    this.origin?.close();
    this.origin = undefined;
  }

  /** One probe; never rejects. */
  async probeOnce(): Promise<ProbeOutcome> {
    const r = this.settings.mode === 'http' ? await this.httpProbe() : await this.tcpProbe();
    return { ...r, at: this.deps.clock.now() };
  }

  private tcpProbe(): Promise<Omit<ProbeOutcome, 'at'>> {
    return new Promise((resolve) => {
      let host: string;
      let port: number;
      try {
        ({ host, port } = splitHostPort(this.settings.address));
      } catch {
        resolve({ ok: false, reached: false, reason: 'bad-address' });
        return;
      }
      const socket = connect({ host, port });
      const finish = (o: Omit<ProbeOutcome, 'at'>) => {
        clearTimeout(timer);
        socket.removeAllListeners();
        socket.on('error', () => {});
        socket.destroy();
        resolve(o);
      };
      const timer = setTimeout(() => finish({ ok: false, reached: false, reason: 'timeout' }), this.settings.timeoutMs);
      timer.unref();
      socket.once('connect', () => finish({ ok: true, reached: true }));
      socket.once('error', (err: NodeJS.ErrnoException) =>
        finish({ ok: false, reached: false, reason: err.code === 'ECONNREFUSED' ? 'refused' : 'connect' }),
      );
    });
  }

  private async httpProbe(): Promise<Omit<ProbeOutcome, 'at'>> {
    const { timeoutMs, path = '/', scheme, address } = this.settings;
    try {
      if (!this.origin) {
        const { host, port } = splitHostPort(address);
        // The probe carries no data: accept the parent's certificate as is.
        this.origin = new HttpOrigin(`${scheme}://${joinHostPort(host, port)}`, Math.max(this.settings.intervalMs * 2, 10_000), {
          rejectUnauthorized: false,
        });
      }
      const res = await this.origin.get(path, {}, AbortSignal.timeout(timeoutMs));
      await dump(res, 64 * 1024).catch(() => {});
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 400) return { ok: true, reached: true };
      return { ok: false, reached: true, reason: `http-${status}` };
    } catch (err) {
      const e = err as { name?: string; code?: string };
      const timeout = e.name === 'TimeoutError' || e.name === 'AbortError' || (e.code ?? '').includes('TIMEOUT');
      return { ok: false, reached: false, reason: timeout ? 'timeout' : e.code === 'ECONNREFUSED' ? 'refused' : 'connect' };
    }
  }
}
