/**
 * One member's token from its credential plugin: run on first use, kept until
 * its expiry, refreshed before it. Concurrent requests share one run. Within
 * the refresh window the current token is still handed out while a new run
 * goes on in the background; a refresh that fails leaves the current token in
 * use until it expires. After a failed run with no usable token, requests fail
 * with that error (naming plugin and profile, never a token) until
 * retryAfterFailureMs has passed, so a broken plugin is not run on every request.
 * A token printed already expired counts as a failed run.
 */
import type { ExecPluginsConfig } from '../config/fleet-schema.js';
import { ExecPluginError, type ExecToken, pluginRunName, runExecPlugin } from './exec-plugin.js';
import type { PluginCall } from './provider-file.js';

export type RefreshSettings = Pick<ExecPluginsConfig, 'refreshBeforeExpiryMs' | 'retryAfterFailureMs'>;

export interface ExecTokenSourceOptions {
  readonly call: PluginCall;
  readonly settings: ExecPluginsConfig;
  /** Injectable (tests): runs the plugin. */
  readonly run?: (call: PluginCall) => Promise<ExecToken>;
  /** Injectable clock (epoch ms). */
  readonly now?: () => number;
  /** A refresh failed while the current token is still valid (the message names plugin and profile). */
  readonly onRefreshError?: (err: Error) => void;
  /** Shared by the members' sources: how many plugins run at once. */
  readonly slots?: RunGate;
}

/** What bounds how many plugins run at once (runtime/slots.ts): `run` waits for a free slot. */
export interface RunGate {
  run<T>(job: () => Promise<T>): Promise<T>;
}

/** What /debug shows of a member's credential: never the token. */
export interface ExecTokenStatus {
  readonly provider: string;
  readonly runs: number;
  readonly failures: number;
  readonly expiresAt?: string;
  readonly lastError?: string;
}

interface Held {
  readonly token: string;
  readonly expiresAt: number | undefined;
  /** When to start a refresh (epoch ms); undefined: never on time alone. */
  readonly refreshAt: number | undefined;
}

export class ExecTokenSource {
  private held: Held | undefined;
  private running: Promise<string> | undefined;
  private failure: { error: Error; at: number } | undefined;
  private runs = 0;
  private failures = 0;
  private readonly run: (call: PluginCall) => Promise<ExecToken>;
  private readonly now: () => number;

  constructor(private readonly o: ExecTokenSourceOptions) {
    const run = o.run ?? ((call: PluginCall) => runExecPlugin(call, o.settings));
    const slots = o.slots;
    this.run = slots ? (call) => slots.run(() => run(call)) : run;
    this.now = o.now ?? Date.now;
  }

  get call(): PluginCall {
    return this.o.call;
  }

  /** The current token; runs the plugin when there is none or it expired. Rejects with the plugin's error. */
  get(): Promise<string> {
    const now = this.now();
    const held = this.held;
    if (held && (held.expiresAt === undefined || now < held.expiresAt)) {
      if (held.refreshAt !== undefined && now >= held.refreshAt && !this.running && !this.failedRecently(now)) {
        this.refresh().catch((err: Error) => this.o.onRefreshError?.(err));
      }
      return Promise.resolve(held.token);
    }
    if (this.running) return this.running;
    if (this.failure && this.failedRecently(now)) return Promise.reject(this.failure.error);
    return this.refresh();
  }

  /** The API server refused the token (401): the next get() runs the plugin again. */
  invalidate(): void {
    this.held = undefined;
    this.failure = undefined;
  }

  status(): ExecTokenStatus {
    return {
      provider: this.o.call.provider,
      runs: this.runs,
      failures: this.failures,
      ...(this.held?.expiresAt !== undefined ? { expiresAt: new Date(this.held.expiresAt).toISOString() } : {}),
      ...(this.failure ? { lastError: this.failure.error.message } : {}),
    };
  }

  private failedRecently(now: number): boolean {
    return this.failure !== undefined && now - this.failure.at < this.o.settings.retryAfterFailureMs;
  }

  private refresh(): Promise<string> {
    this.runs++;
    const running = this.run(this.o.call)
      .then((t) => {
        // Kept, it would make every request run the plugin again.
        if (t.expiresAt !== undefined && t.expiresAt <= this.now()) {
          throw new ExecPluginError(`${pluginRunName(this.o.call)}: printed a token that had expired at ${new Date(t.expiresAt).toISOString()}, before it was obtained`);
        }
        return t;
      })
      .then(
        (t) => {
          const obtained = this.now();
          this.held = { token: t.token, expiresAt: t.expiresAt, refreshAt: refreshTime(obtained, t.expiresAt, this.o.settings.refreshBeforeExpiryMs) };
          this.failure = undefined;
          return t.token;
        },
        (err: unknown) => {
          this.failures++;
          const error = err instanceof Error ? err : new Error(String(err));
          this.failure = { error, at: this.now() };
          throw error;
        },
      );
    this.running = running;
    const clear = (): void => {
      if (this.running === running) this.running = undefined;
    };
    running.then(clear, clear);
    return running;
  }
}

/** refreshBeforeExpiryMs before expiry, or halfway through the token's life when that comes later. */
export function refreshTime(obtainedAt: number, expiresAt: number | undefined, refreshBeforeExpiryMs: number): number | undefined {
  if (expiresAt === undefined) return undefined;
  const half = obtainedAt + (expiresAt - obtainedAt) / 2;
  return Math.max(expiresAt - refreshBeforeExpiryMs, half);
}
