/**
 * The router config's `tracing` block: OpenTelemetry traces over OTLP. The standard
 * OTEL_* environment variables apply on their own and take precedence over these keys
 * (src/telemetry/settings.ts); tracing is on when an OTLP endpoint is known from either.
 */
import { z } from 'zod';

export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

export const tracingSchema = z
  .strictObject({
    /**
     * OTLP base URL, e.g. http://otel-collector.observability:4318 (http/protobuf; /v1/traces is
     * appended) or http://otel-collector.observability:4317 (grpc). Absent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
     * or OTEL_EXPORTER_OTLP_ENDPOINT; with neither, tracing is off.
     */
    endpoint: z.string().regex(/^https?:\/\/[^\s/]+/, 'must be an http:// or https:// URL').optional(),
    /** OTLP transport (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / OTEL_EXPORTER_OTLP_PROTOCOL take precedence). */
    protocol: z.enum(['http/protobuf', 'grpc']).default('http/protobuf'),
    /** Which streams are traced (OTEL_TRACES_SAMPLER takes precedence). */
    sampler: z.enum(TRACE_SAMPLERS).default('parentbased_traceidratio'),
    /** The ratio of the traceidratio samplers (OTEL_TRACES_SAMPLER_ARG takes precedence). */
    samplerRatio: z.number().min(0).max(1).default(0.05),
    /** service.name of the router's spans (OTEL_SERVICE_NAME takes precedence). */
    serviceName: z.string().min(1).default('mcip-router'),
    /** Finished spans waiting for export; past it new spans are dropped, never held (memory stays bounded). */
    maxQueueSize: z.number().int().min(1).max(65_536).default(2048),
    /** Spans per export request (at most maxQueueSize). */
    maxExportBatchSize: z.number().int().min(1).max(65_536).default(512),
    /** How often queued spans are exported. */
    scheduledDelayMs: z.number().int().min(1).default(5000),
    /** An export taking longer is abandoned (its spans are lost); one periodic export runs at a time, shutdown sends every queued batch. */
    exportTimeoutMs: z.number().int().min(1).default(10_000),
  })
  .refine((t) => t.maxExportBatchSize <= t.maxQueueSize, {
    path: ['maxExportBatchSize'],
    message: 'must be at most tracing.maxQueueSize',
  });

export type TracingConfig = z.output<typeof tracingSchema>;
