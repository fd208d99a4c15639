/**
 * Envoy's access-log formatter, for the command operators the shipped configs use,
 * applied to a stand-in result: a shipped json_format renders to the line Envoy would
 * write. A value that is exactly one operator keeps its type (a number stays a number);
 * an unavailable value is null, as Envoy writes it in JSON. An operator this formatter
 * does not know is an error, so a new one in a shipped config cannot go unchecked.
 */
import type { JsonValue } from './protos.js';
import { getHeader } from './headers.js';
import type { StandinRequest, StandinResult } from './standin-types.js';

export type JsonFormat = Record<string, string>;

function operator(cmd: string, arg: string | undefined, req: StandinRequest, r: StandinResult): JsonValue {
  switch (cmd) {
    case 'START_TIME':
      return new Date().toISOString();
    case 'REQ': {
      const name = arg!.toLowerCase();
      if (name === ':method') return req.method ?? 'POST';
      if (name === ':path') return req.path ?? '/';
      return getHeader(r.upstreamHeaders ?? [], name) ?? null;
    }
    case 'PROTOCOL':
      return 'HTTP/1.1';
    case 'RESPONSE_CODE':
      return r.status;
    case 'RESPONSE_FLAGS':
      return r.outcome === 'local-reply' && r.destination === undefined ? 'UH' : '-';
    case 'RESPONSE_CODE_DETAILS':
      return r.details ?? (r.outcome === 'forwarded' ? 'via_upstream' : null);
    case 'UPSTREAM_HOST':
      return r.destination ?? null;
    case 'UPSTREAM_TRANSPORT_FAILURE_REASON':
      return null;
    case 'DURATION':
      return 0;
    case 'BYTES_RECEIVED':
      return r.forwardedBody?.length ?? 0;
    case 'BYTES_SENT':
      return r.response.body.length;
    case 'DYNAMIC_METADATA': {
      const [ns, ...path] = arg!.split(':');
      let v: JsonValue | undefined = r.dynamicMetadata[ns!] ?? undefined;
      for (const key of path) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? v[key] : undefined;
      return v ?? null;
    }
    default:
      throw new Error(`access-log operator %${cmd}% is not known to the stand-in's formatter`);
  }
}

const OPERATOR = /%([A-Z_]+)(?:\(([^)]*)\))?%/g;

/** One access-log line (as a parsed JSON object) for `format` over the stand-in's result. */
export function renderAccessLog(format: JsonFormat, req: StandinRequest, r: StandinResult): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [key, template] of Object.entries(format)) {
    const whole = /^%([A-Z_]+)(?:\(([^)]*)\))?%$/.exec(template);
    if (whole) {
      out[key] = operator(whole[1]!, whole[2], req, r);
      continue;
    }
    out[key] = template.replace(OPERATOR, (_m, cmd: string, arg: string | undefined) => {
      const v = operator(cmd, arg, req, r);
      return v === null ? '-' : String(v);
    });
  }
  return out;
}
