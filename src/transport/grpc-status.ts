/**
 * gRPC call status on HTTP/2: the `grpc-status` / `grpc-message` trailers
 * (the message percent-encoded), `grpc-timeout`, and the error object a failed
 * call reports (the shape grpc-js gives its callers: code, details, message).
 */
import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';

export const GRPC_CONTENT_TYPE = 'application/grpc';

/** A failed call, as grpc-js reports one. */
export function callError(code: Status, details: string): ServiceError {
  const name = Status[code] ?? String(code);
  return Object.assign(new Error(`${code} ${name}: ${details}`), { code, details, metadata: new Metadata() });
}

/** grpc-message: printable ASCII except '%' as is, everything else %XX of its UTF-8 bytes. */
export function encodeGrpcMessage(text: string): string {
  let plain = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return text;
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Decodes a grpc-message; a malformed escape is kept as it is. */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes('%')) return value;
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x25 && /^[0-9a-fA-F]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(c & 0xff);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/**
 * grpc-timeout ("TimeoutValue TimeoutUnit", at most 8 digits) in milliseconds, or
 * undefined when absent; throws a RangeError when malformed.
 */
export function parseGrpcTimeout(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) throw new RangeError(`malformed grpc-timeout "${value}"`);
  return Number(m[1]) * TIMEOUT_UNIT_MS[m[2]!]!;
}

/** A grpc-timeout value for `ms` milliseconds (rounded up to whole ms, within 8 digits). */
export function formatGrpcTimeout(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  return whole < 1e8 ? `${whole}m` : `${Math.ceil(whole / 1000)}S`;
}

/** A response without gRPC's content type: the status its HTTP status maps to (gRPC's HTTP-to-gRPC table). */
export function statusFromHttp(httpStatus: number): Status {
  switch (httpStatus) {
    case 400:
      return Status.INTERNAL;
    case 401:
      return Status.UNAUTHENTICATED;
    case 403:
      return Status.PERMISSION_DENIED;
    case 404:
      return Status.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
      return Status.UNAVAILABLE;
    default:
      return Status.UNKNOWN;
  }
}

/** The status in a trailer block (or trailers-only headers); undefined when it carries none. */
export function statusFromTrailers(headers: Record<string, unknown>): { code: Status; details: string } | undefined {
  const raw = headers['grpc-status'];
  if (raw === undefined) return undefined;
  const code = Number(raw);
  const message = headers['grpc-message'];
  return {
    code: Number.isInteger(code) && code >= 0 && code <= 16 ? (code as Status) : Status.UNKNOWN,
    details: typeof message === 'string' ? decodeGrpcMessage(message) : '',
  };
}
