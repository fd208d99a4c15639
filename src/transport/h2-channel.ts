/**
 * One HTTP/2 connection to one EPP (h2c, or TLS with ALPN h2), shared by every
 * call to it: connects on demand within a connect timeout, pings while calls
 * are open (keepalive), opens no new calls on a session that received GOAWAY
 * (the next call gets a new one), and after a failed connect waits a backoff
 * (250 ms doubling to 5 s) before trying again; calls in that time fail at once
 * with the last connect error (UNAVAILABLE, as grpc-js reports them).
 */
import { connect, constants as h2, type ClientHttp2Session, type OutgoingHttpHeaders, type SecureClientSessionOptions } from 'node:http2';
import type { LookupFunction } from 'node:net';
import { status as Status } from '@grpc/grpc-js';
import { H2ClientCall } from './client-call.js';
import { formatGrpcTimeout, GRPC_CONTENT_TYPE } from './grpc-status.js';

export interface H2ChannelOptions {
  readonly maxMessageBytes: number;
  readonly connectTimeoutMs: number;
  readonly keepaliveTimeMs: number;
  readonly keepaliveTimeoutMs: number;
  /** TLS options (ALPN h2 is implied); undefined: h2c. */
  readonly tls?: SecureClientSessionOptions;
  /** The :authority of every call (default: the address). */
  readonly authority?: string;
  /** Resolves a host name (not used for an IP): a refusal fails the connect like any other connect error. */
  readonly lookup?: LookupFunction;
}

const INITIAL_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5000;

export type H2Call = H2ClientCall | ReturnType<typeof H2ClientCall.failed>;

export class H2Channel {
  private session: ClientHttp2Session | undefined;
  private connecting: Promise<void> | undefined;
  private lastError: Error | undefined;
  private retryAt = 0;
  private backoffMs = INITIAL_BACKOFF_MS;
  private closed = false;
  /** Calls not closed yet (keepalive pings only while there are some). */
  private openCalls = 0;

  constructor(
    private readonly address: string,
    private readonly options: H2ChannelOptions,
  ) {}

  /** Resolves once a call can be made: connected, or failed recently (the call then fails at once). Rejects on connect timeout. */
  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new Error(`the channel to ${this.address} was closed`));
    if (this.usable(this.session)) return Promise.resolve();
    if (this.lastError !== undefined && Date.now() < this.retryAt) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  call(path: string, headers: OutgoingHttpHeaders, timeoutMs?: number): H2Call {
    const session = this.session;
    if (!this.usable(session)) {
      const why = this.lastError?.message ?? 'not connected';
      return H2ClientCall.failed(Status.UNAVAILABLE, `No connection established. Last error: ${why}`);
    }
    const request: OutgoingHttpHeaders = {
      ...headers,
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: path,
      [h2.HTTP2_HEADER_CONTENT_TYPE]: GRPC_CONTENT_TYPE,
      te: 'trailers',
    };
    if (this.options.authority !== undefined) request[h2.HTTP2_HEADER_AUTHORITY] = this.options.authority;
    if (timeoutMs !== undefined) request['grpc-timeout'] = formatGrpcTimeout(timeoutMs);
    try {
      const stream = session.request(request);
      this.openCalls++;
      stream.once('close', () => this.openCalls--);
      return new H2ClientCall(stream, this.options.maxMessageBytes, timeoutMs);
    } catch (err) {
      // The session went away between the check and the request (GOAWAY): the next call reconnects.
      // A session still usable refused this request's headers: it stays for the other calls.
      if (this.session === session && !this.usable(session)) this.session = undefined;
      return H2ClientCall.failed(Status.UNAVAILABLE, (err as Error).message);
    }
  }

  /** No new calls; open ones finish on the connection. */
  close(): void {
    this.closed = true;
    this.session?.close();
    this.session = undefined;
  }

  private usable(s: ClientHttp2Session | undefined): s is ClientHttp2Session {
    return s !== undefined && !s.closed && !s.destroyed && s.connecting === false;
  }

  private connect(): Promise<void> {
    const o = this.options;
    const url = `${o.tls ? 'https' : 'http'}://${this.address}`;
    return new Promise<void>((resolve, reject) => {
      const session = connect(url, { ...o.tls, maxSessionMemory: 64, ...(o.lookup ? { lookup: o.lookup } : {}) });
      this.session = session;
      const timer = setTimeout(() => {
        session.destroy();
        this.failedConnect(new Error(`connect timeout after ${o.connectTimeoutMs} ms`));
        reject(new Error(`no connection to EPP ${this.address} within ${o.connectTimeoutMs} ms`));
      }, o.connectTimeoutMs);
      session.once('connect', () => {
        clearTimeout(timer);
        this.lastError = undefined;
        this.backoffMs = INITIAL_BACKOFF_MS;
        this.keepalive(session);
        resolve();
      });
      session.on('error', (err: Error) => {
        if (!session.connecting) return;
        clearTimeout(timer);
        this.failedConnect(err);
        resolve();
      });
      session.on('goaway', () => {
        if (this.session === session) this.session = undefined;
      });
      session.on('close', () => {
        clearTimeout(timer);
        if (this.session === session) this.session = undefined;
      });
      session.unref();
    });
  }

  private failedConnect(err: Error): void {
    this.lastError = err;
    this.retryAt = Date.now() + this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    if (this.session !== undefined && this.session.connecting) this.session = undefined;
  }

  /** PINGs while calls are open; a PING unanswered within keepaliveTimeoutMs ends the connection. */
  private keepalive(session: ClientHttp2Session): void {
    const { keepaliveTimeMs, keepaliveTimeoutMs } = this.options;
    const timer = setInterval(() => {
      // Like grpc-js without keepalive_permit_without_calls: no pings on an idle connection.
      if (session.destroyed || this.openCalls === 0) return;
      const deadline = setTimeout(() => session.destroy(new Error('keepalive ping timed out')), keepaliveTimeoutMs);
      deadline.unref();
      session.ping((err) => {
        clearTimeout(deadline);
        if (err && !session.destroyed) session.destroy(err);
      });
    }, keepaliveTimeMs);
    timer.unref();
    session.once('close', () => clearInterval(timer));
  }
}
