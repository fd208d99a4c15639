/**
 * Resolves the tracing settings from the config's `tracing` block and the standard
 * OpenTelemetry environment variables, which take precedence (an operator sets them per
 * deployment without touching the config file). Pure: the environment is a parameter.
 */
import { TRACE_SAMPLERS, type TracingConfig } from '../config/tracing-schema.js';

export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

export type TracingSettings =
  | { readonly enabled: false; readonly why: string }
  | {
      readonly enabled: true;
      readonly protocol: 'http/protobuf' | 'grpc';
      /** The exporter's URL (OTLP/HTTP: the traces path; OTLP/gRPC: the endpoint). */
      readonly url: string;
      readonly sampler: TraceSampler;
      readonly ratio: number;
      /** The config's service.name; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply over it (resource detection). */
      readonly serviceName: string;
      readonly queue: { readonly maxQueueSize: number; readonly maxExportBatchSize: number; readonly scheduledDelayMs: number; readonly exportTimeoutMs: number };
      /** Environment values that were not understood and were ignored (logged once at startup). */
      readonly warnings: readonly string[];
    };

type Env = Readonly<Record<string, string | undefined>>;

function envValue(env: Env, name: string): string | undefined {
  const v = env[name]?.trim();
  return v === undefined || v === '' ? undefined : v;
}

export function tracingSettings(config: TracingConfig, env: Env): TracingSettings {
  if (envValue(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return { enabled: false, why: 'OTEL_SDK_DISABLED=true' };
  const exporter = envValue(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase();
  if (exporter === 'none') return { enabled: false, why: 'OTEL_TRACES_EXPORTER=none' };
  const warnings: string[] = [];
  if (exporter !== undefined && exporter !== 'otlp') warnings.push(`OTEL_TRACES_EXPORTER="${exporter}" is not supported: the router exports OTLP only`);
  const tracesEndpoint = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = envValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  // Without any endpoint tracing stays off, unless OTEL_TRACES_EXPORTER=otlp asks for it: then the
  // exporter sends to the specification's default, a collector on localhost.
  if (tracesEndpoint === undefined && baseEndpoint === undefined && config.endpoint === undefined && exporter !== 'otlp') {
    return { enabled: false, why: 'no OTLP endpoint: set tracing.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT' };
  }
  let protocol = config.protocol;
  const p = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? envValue(env, 'OTEL_EXPORTER_OTLP_PROTOCOL');
  if (p === 'grpc' || p === 'http/protobuf') protocol = p;
  else if (p !== undefined) warnings.push(`OTEL_EXPORTER_OTLP_PROTOCOL="${p}" is not supported (http/protobuf or grpc): using ${protocol}`);
  const base = baseEndpoint ?? config.endpoint ?? (protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318');
  let sampler: TraceSampler = config.sampler;
  const s = envValue(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase();
  if (s !== undefined) {
    if ((TRACE_SAMPLERS as readonly string[]).includes(s)) sampler = s as TraceSampler;
    else warnings.push(`OTEL_TRACES_SAMPLER="${s}" is not supported (${TRACE_SAMPLERS.join(', ')}): using ${sampler}`);
  }
  let ratio = config.samplerRatio;
  const arg = envValue(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (arg !== undefined) {
    const n = Number(arg);
    if (Number.isFinite(n) && n >= 0 && n <= 1) ratio = n;
    else warnings.push(`OTEL_TRACES_SAMPLER_ARG="${arg}" is not a ratio in [0, 1]: using ${ratio}`);
  }
  return {
    enabled: true,
    protocol,
    // The signal's own variable is the URL as is; a base URL (variable or config) gets the signal's path.
    url: tracesEndpoint ?? exporterUrl(base, protocol),
    sampler,
    ratio,
    serviceName: config.serviceName,
    queue: {
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize,
      scheduledDelayMs: config.scheduledDelayMs,
      exportTimeoutMs: config.exportTimeoutMs,
    },
    warnings,
  };
}

/** The config's base URL as the exporter takes it: OTLP/HTTP posts to <base>/v1/traces, OTLP/gRPC dials the base. */
function exporterUrl(base: string, protocol: 'http/protobuf' | 'grpc'): string {
  if (protocol === 'grpc') return base;
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

/** `url` as logged: credentials in its userinfo (https://user:token@host) are not written to the log. */
export function loggableUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = '***';
    u.password = '';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//***@');
  }
}
