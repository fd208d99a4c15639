/**
 * Classifies failures from the Kubernetes API (generated clients throw
 * ApiException with `code`, a refused watch carries `statusCode`, transport
 * errors have neither; a request that ran out of time is a TimeoutError, whose
 * DOMException `code` is not an HTTP status; an answer refused for its size or
 * encoding is neither) into the reasons the router reports.
 */
import { cutText } from '../../model/decode-util.js';
import { CredentialError, RequestTimeoutError } from './api-access.js';
import { responseRefusal } from './response-bound.js';
import type { ResourceSpec } from './resources.js';
import { resourceName } from './resources.js';

export type FailureReason = 'connect' | 'timeout' | 'too-large' | 'auth' | 'missing-crd' | 'gone' | 'conflict' | 'not-found' | 'internal';

export interface Failure {
  readonly reason: FailureReason;
  readonly status?: number;
  readonly message: string;
}

const isHttpStatus = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 100 && v <= 599;

/** A request that ran out of time (ours, undici's or a DOMException 'TimeoutError'). */
export function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === 'TimeoutError' || (err.cause instanceof Error && err.cause.name === 'TimeoutError'));
}

export function httpStatusOf(err: unknown): number | undefined {
  if (!err || typeof err !== 'object' || isTimeout(err) || (err as Error).name === 'AbortError') return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (isHttpStatus(e.statusCode)) return e.statusCode;
  if (isHttpStatus(e.code)) return e.code;
  return undefined;
}

/** Longest piece of a server's own text an error carries. */
const SERVER_TEXT_CHARS = 300;

/** The Status message the server sent, if any: cut, control characters escaped (it reaches logs, /debug and terminals). */
function serverMessage(err: unknown): string | undefined {
  const text = rawServerMessage(err);
  return text === undefined ? undefined : cutText(text, SERVER_TEXT_CHARS);
}

function rawServerMessage(err: unknown): string | undefined {
  const body = (err as { body?: unknown }).body;
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  if (typeof body === 'string' && body.length > 0) {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      return body;
    }
  }
  return undefined;
}

/** An error and its cause's code (ECONNREFUSED, ...) or message. */
export function transportMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  const c = cause instanceof Error ? `: ${(cause as NodeJS.ErrnoException).code ?? cause.message}` : '';
  return `${err.message}${c}`;
}

/** `spec` names the resource, so a 404 on a collection reads as "CRD not installed". */
export function classifyError(err: unknown, spec?: ResourceSpec): Failure {
  const what = spec ? `${spec.kind} (${resourceName(spec)})` : 'request';
  if (isTimeout(err)) {
    const cause = (err as Error).cause;
    const own = err instanceof RequestTimeoutError ? err : cause instanceof RequestTimeoutError ? cause : undefined;
    return { reason: 'timeout', message: `${what}: ${own?.message ?? 'request timed out'}` };
  }
  if (err instanceof CredentialError) return { reason: 'auth', message: `${what}: no credentials: ${err.message}` };
  const refusal = responseRefusal(err);
  if (refusal) return { reason: 'too-large', message: `${spec ? `list of ${what}` : what}: ${refusal.message}` };
  const status = httpStatusOf(err);
  if (status === undefined) return { reason: 'connect', message: transportMessage(err) };
  const detail = serverMessage(err) ?? (err instanceof Error ? err.message : String(err));
  switch (status) {
    case 401:
      return { reason: 'auth', status, message: `${what}: unauthorized (401): credentials rejected` };
    case 403:
      return { reason: 'auth', status, message: `${what}: forbidden (403): ${detail}` };
    case 404:
      return spec
        ? { reason: 'missing-crd', status, message: `${what} is not served by the API server (CRD not installed?): ${detail}` }
        : { reason: 'not-found', status, message: detail };
    case 409:
      return { reason: 'conflict', status, message: detail };
    case 410:
      return { reason: 'gone', status, message: `${what}: resourceVersion expired (410 Gone)` };
    default:
      return { reason: status >= 500 || status === 429 ? 'connect' : 'internal', status, message: `${what}: HTTP ${status}: ${detail}` };
  }
}
