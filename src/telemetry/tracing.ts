/**
 * Starts the OpenTelemetry SDK for the router's own traces: a private TracerProvider (not
 * registered globally) with the sampler of the settings and one BatchSpanProcessor in
 * front of an OTLP exporter (HTTP/protobuf or gRPC). The queue is bounded (spans past
 * maxQueueSize are dropped), one periodic export runs at a time (shutdown flushes every
 * queued batch) and each is abandoned after exportTimeoutMs: an exporter that is down or slow never holds a request or grows memory.
 */
import { diag, DiagLogLevel, type DiagLogger } from '@opentelemetry/api';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/tracing-schema.js';
import type { StreamTracer } from '../extproc/observer.js';
import { OtelStreamTracer } from './stream-trace.js';
import { loggableUrl, tracingSettings, type TraceSampler, type TracingSettings } from './settings.js';

export interface Tracing {
  readonly tracer: StreamTracer;
  /** Exports what is queued (bounded by exportTimeoutMs) and stops. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  readonly version: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The tracer the settings call for, or undefined when tracing is off (the data path then calls nothing). */
export async function startTracing(config: TracingConfig, logger: Logger, options: TracingOptions): Promise<Tracing | undefined> {
  const settings = tracingSettings(config, options.env ?? process.env);
  if (!settings.enabled) {
    logger.debug({ reason: settings.why }, 'tracing is off');
    return undefined;
  }
  for (const w of settings.warnings) logger.warn(w);
  routeDiagnostics(logger);
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: options.version }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const exporter = await createExporter(settings);
  const provider = new TracerProvider({
    resource,
    sampler: sampler(settings.sampler, settings.ratio),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        maxQueueSize: settings.queue.maxQueueSize,
        maxExportBatchSize: settings.queue.maxExportBatchSize,
        scheduledDelayMillis: settings.queue.scheduledDelayMs,
        exportTimeoutMillis: settings.queue.exportTimeoutMs,
      }),
    ],
  });
  logger.info(
    { protocol: settings.protocol, endpoint: loggableUrl(settings.url), sampler: settings.sampler, ratio: settings.ratio, maxQueueSize: settings.queue.maxQueueSize },
    'tracing on',
  );
  return {
    tracer: new OtelStreamTracer(provider.getTracer('mcip-router', options.version)),
    shutdown: () => provider.shutdown().catch((err: unknown) => logger.warn({ err }, 'tracing: final export failed')),
  };
}

async function createExporter(s: Extract<TracingSettings, { enabled: true }>): Promise<SpanExporter> {
  // The span processor runs one periodic export at a time, but its final flush (shutdown) sends the
  // whole queue at once, one request per batch: the exporter must accept that many (an export past
  // its limit is refused and its spans lost), plus the periodic one still in flight. In-flight spans
  // stay bounded: at most one queue's worth and one batch.
  const options = {
    url: s.url,
    timeoutMillis: s.queue.exportTimeoutMs,
    concurrencyLimit: Math.ceil(s.queue.maxQueueSize / s.queue.maxExportBatchSize) + 1,
  };
  // Each exporter is loaded only when chosen: the gRPC one brings its own OTLP service definitions.
  if (s.protocol === 'grpc') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
    return new OTLPTraceExporter(options);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}

function sampler(kind: TraceSampler, ratio: number): Sampler {
  switch (kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default: {
      const never: never = kind;
      throw new Error(`unknown sampler ${String(never)}`);
    }
  }
}

let diagnosticsRouted = false;

/** The SDK's own warnings (export failures, dropped spans) go to the router's log, at most one line per 30 s. */
function routeDiagnostics(logger: Logger): void {
  if (diagnosticsRouted) return;
  diagnosticsRouted = true;
  let last = 0;
  const warn = (message: string, ...args: unknown[]): void => {
    const now = Date.now();
    if (now - last < 30_000) return;
    last = now;
    logger.warn({ detail: args.map(String).join(' ') }, `tracing: ${message}`);
  };
  const sink: DiagLogger = { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} };
  diag.setLogger(sink, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}
