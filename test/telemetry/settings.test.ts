import { describe, expect, it } from 'vitest';
import { tracingSchema } from '../../src/config/tracing-schema.js';
import { tracingSettings } from '../../src/telemetry/settings.js';

const cfg = (o: Record<string, unknown> = {}) => tracingSchema.parse(o);

describe('tracing settings: config keys and the OTEL_* variables', () => {
  it('off without an endpoint; the config endpoint turns it on with the schema defaults', () => {
    expect(tracingSettings(cfg(), {})).toMatchObject({ enabled: false });
    expect(tracingSettings(cfg({ endpoint: 'http://collector:4318/' }), {})).toMatchObject({
      enabled: true,
      protocol: 'http/protobuf',
      url: 'http://collector:4318/v1/traces',
      sampler: 'parentbased_traceidratio',
      ratio: 0.05,
    });
  });

  it('the variables take precedence over the config keys', () => {
    const s = tracingSettings(cfg({ endpoint: 'http://a:4318', sampler: 'always_off' }), {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://b:4317',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(s).toMatchObject({ enabled: true, protocol: 'grpc', url: 'http://b:4317', sampler: 'traceidratio', ratio: 0.25, warnings: [] });
    // The signal's own endpoint variable is the URL as is.
    expect(tracingSettings(cfg(), { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' })).toMatchObject({ url: 'http://c:4318/custom' });
  });

  it('values it does not understand are named in a warning and ignored', () => {
    const s = tracingSettings(cfg({ endpoint: 'http://a:4318' }), { OTEL_TRACES_SAMPLER: 'jaeger_remote', OTEL_TRACES_SAMPLER_ARG: '2', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(s).toMatchObject({ enabled: true, sampler: 'parentbased_traceidratio', ratio: 0.05, protocol: 'http/protobuf' });
    expect(s.enabled && s.warnings.map((w) => w.split('=')[0])).toEqual(['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG']);
  });

  it('OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it off whatever the config says', () => {
    expect(tracingSettings(cfg({ endpoint: 'http://a:4318' }), { OTEL_SDK_DISABLED: 'TRUE' })).toMatchObject({ enabled: false });
    expect(tracingSettings(cfg({ endpoint: 'http://a:4318' }), { OTEL_TRACES_EXPORTER: 'none' })).toMatchObject({ enabled: false });
  });

  it('OTEL_TRACES_EXPORTER=otlp alone turns it on, sending to the default collector on localhost', () => {
    expect(tracingSettings(cfg(), { OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ enabled: true, protocol: 'http/protobuf', url: 'http://localhost:4318/v1/traces' });
    expect(tracingSettings(cfg(), { OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatchObject({ enabled: true, protocol: 'grpc', url: 'http://localhost:4317' });
    // An endpoint given still wins.
    expect(tracingSettings(cfg({ endpoint: 'http://a:4318' }), { OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ url: 'http://a:4318/v1/traces' });
  });

  it('the config refuses a batch larger than the queue', () => {
    expect(tracingSchema.safeParse({ maxQueueSize: 10, maxExportBatchSize: 20 }).success).toBe(false);
  });
});
