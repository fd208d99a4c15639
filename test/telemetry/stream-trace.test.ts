// The stream span's parent as the request's W3C trace context gives it: traceparent and
// tracestate as Envoy hands them over (one entry per header field, raw bytes), hostile ones included.
import { TracerProvider, AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import type { HeaderValue } from '../../src/protocol/codec.js';
import { OtelStreamTracer } from '../../src/telemetry/stream-trace.js';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const header = (key: string, value: string | Buffer): HeaderValue => ({ key, raw_value: Buffer.isBuffer(value) ? value : Buffer.from(value) }) as HeaderValue;

async function streamSpan(headers: HeaderValue[]): Promise<ReadableSpan> {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ sampler: new AlwaysOnSampler(), spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  new OtelStreamTracer(provider.getTracer('test')).open(headers)!.finished({ outcome: 'passthrough', durationSeconds: 0 });
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  expect(spans).toHaveLength(1);
  return spans[0]!;
}

describe('the stream span\'s parent', () => {
  it('is the request\'s traceparent, with its tracestate', async () => {
    const span = await streamSpan([header('Traceparent', TP), header('tracestate', 'a=1,b=2')]);
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(span.spanContext().traceState?.serialize()).toBe('a=1,b=2');
  });

  it('several tracestate fields are one list, in order; of several traceparents the first counts', async () => {
    const span = await streamSpan([
      header('traceparent', TP),
      header('tracestate', 'a=1'),
      header('traceparent', '00-11111111111111111111111111111111-2222222222222222-01'),
      header('tracestate', 'b=2'),
    ]);
    expect(span.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(span.spanContext().traceState?.serialize()).toBe('a=1,b=2');
  });

  it('a malformed or oversized traceparent starts a new trace; an oversized tracestate is cut to the W3C bound', async () => {
    for (const bad of [`${TP}-${'a'.repeat(100_000)}`, '00-00000000000000000000000000000000-b7ad6b7169203331-01', Buffer.from([0xff, 0xfe, 0x00])]) {
      const span = await streamSpan([header('traceparent', bad)]);
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    }
    const many = Array.from({ length: 5000 }, (_, i) => `k${i}=v`).join(',');
    const span = await streamSpan([header('traceparent', TP), header('tracestate', many)]);
    expect(span.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(span.spanContext().traceState!.serialize().split(',').length).toBeLessThanOrEqual(32);
  });
});
