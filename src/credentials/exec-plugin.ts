/**
 * Runs one credential plugin the way a Kubernetes client does, with bounds a
 * router needs: no shell (the command and its arguments go to the OS as they
 * are), only the environment the operator chose, KUBERNETES_EXEC_INFO set to
 * the ExecCredential request, no standard input, a time limit after which the
 * plugin's whole process group is killed, and a limit on what it may print.
 *
 * The printed ExecCredential must have the request's apiVersion and a
 * status.token; status.expirationTimestamp (RFC 3339) is the token's expiry.
 * Neither the token nor anything else the plugin printed on standard output
 * ever appears in a message: a plugin that prints something else is reported
 * by what was wrong, not by what it printed.
 */
import { spawn } from 'node:child_process';
import type { ExecPluginsConfig } from '../config/fleet-schema.js';
import { escapeControl } from '../model/decode-util.js';
import { EXEC_INFO_ENV, type PluginCall } from './provider-file.js';

/** What a successful run gives. */
export interface ExecToken {
  readonly token: string;
  /** Epoch ms; undefined: no expiry given. */
  readonly expiresAt: number | undefined;
}

export class ExecPluginError extends Error {
  override readonly name = 'ExecPluginError';
}

/** Most of a plugin's standard error kept for messages. */
const MAX_STDERR_BYTES = 4096;

export type PluginBounds = Pick<ExecPluginsConfig, 'timeoutMs' | 'maxOutputBytes' | 'inheritEnv'>;

/** The plugin's environment: the inherited names that are set, the call's env, KUBERNETES_EXEC_INFO. */
export function pluginEnv(call: PluginCall, inheritEnv: readonly string[], parent: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of inheritEnv) {
    const v = parent[name];
    if (v !== undefined) env[name] = v;
  }
  Object.assign(env, call.env);
  env[EXEC_INFO_ENV] = call.execInfo;
  return env;
}

/** How messages name a plugin run: provider, command and profile. */
export const pluginRunName = (call: PluginCall): string => `credential plugin ${call.provider} (${call.command}) for ClusterProfile ${call.profile}`;

export function runExecPlugin(call: PluginCall, bounds: PluginBounds): Promise<ExecToken> {
  const who = pluginRunName(call);
  return new Promise<ExecToken>((resolve, reject) => {
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let failure: string | undefined;
    let settled = false;
    const child = spawn(call.command, call.args, {
      env: pluginEnv(call, bounds.inheritEnv),
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: false,
      // Its own process group, so a timeout kills whatever the plugin started too.
      detached: true,
      windowsHide: true,
    });
    const kill = (why: string): void => {
      failure ??= why;
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    let exited: string | undefined;
    child.on('exit', (code, signal) => (exited = code === null ? `signal ${signal ?? '?'}` : `code ${code}`));
    // Settles here too: 'close' waits for the output pipes, which a process the plugin started
    // in a session of its own (out of reach of the group kill) may hold open for ever.
    const timer = setTimeout(() => {
      kill(exited === undefined ? `still running after ${bounds.timeoutMs} ms: killed` : `exited with ${exited}, but a process it started still held its standard output after ${bounds.timeoutMs} ms`);
      child.stdout.destroy();
      child.stderr.destroy();
      done(failure);
    }, bounds.timeoutMs);
    timer.unref();
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > bounds.maxOutputBytes) kill(`printed more than ${bounds.maxOutputBytes} bytes: killed`);
      else stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr = Buffer.concat([stderr, chunk]).subarray(0, MAX_STDERR_BYTES);
    });
    const done = (err: string | undefined, token?: ExecToken): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err !== undefined) reject(new ExecPluginError(`${who}: ${err}`));
      else resolve(token!);
    };
    child.on('error', (err: NodeJS.ErrnoException) => {
      done(err.code === 'ENOENT' ? 'command not found' : err.code === 'EACCES' ? 'command not executable' : err.message);
      kill('spawn failed');
    });
    child.on('close', (code, signal) => {
      if (failure !== undefined) return done(failure);
      const detail = stderrExcerpt(stderr);
      if (code !== 0) return done(`exited with ${code === null ? `signal ${signal ?? '?'}` : `code ${code}`}${detail ? `: ${detail}` : ''}`);
      const parsed = parseExecCredential(Buffer.concat(stdout).toString('utf8'), call.apiVersion);
      if (typeof parsed === 'string') return done(parsed);
      done(undefined, parsed);
    });
  });
}

/** The plugin's standard error on one line, for messages (its own error text, control characters escaped). */
function stderrExcerpt(b: Buffer): string {
  return escapeControl(b.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, 500));
}

/** An ExecCredential's token and expiry, or what is wrong with the output (never quoting it). */
export function parseExecCredential(text: string, apiVersion: string): ExecToken | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return `printed ${Buffer.byteLength(text)} bytes that are not JSON (expected an ExecCredential)`;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return 'printed JSON that is not an ExecCredential object';
  const o = doc as { kind?: unknown; apiVersion?: unknown; status?: unknown };
  if (o.kind !== 'ExecCredential') return 'printed an object whose kind is not ExecCredential';
  if (o.apiVersion !== apiVersion) return `printed apiVersion ${JSON.stringify(String(o.apiVersion)).slice(0, 80)}, but the provider file asks for ${apiVersion}`;
  const status = o.status as { token?: unknown; expirationTimestamp?: unknown; clientCertificateData?: unknown } | undefined;
  if (typeof status !== 'object' || status === null) return 'printed an ExecCredential without status';
  if (typeof status.token !== 'string' || status.token === '') {
    return status.clientCertificateData !== undefined
      ? 'printed a client certificate; only token credentials are supported'
      : 'printed an ExecCredential without status.token';
  }
  if (/[\r\n]/.test(status.token)) return 'printed a token with a line break';
  let expiresAt: number | undefined;
  if (status.expirationTimestamp !== undefined && status.expirationTimestamp !== null) {
    expiresAt = typeof status.expirationTimestamp === 'string' ? Date.parse(status.expirationTimestamp) : Number.NaN;
    if (!Number.isFinite(expiresAt)) return 'printed a status.expirationTimestamp that is not an RFC 3339 time';
  }
  return { token: status.token, expiresAt };
}
