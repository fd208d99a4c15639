/**
 * What Envoy sends an ext_proc server for one inference request in
 * FULL_DUPLEX_STREAMED mode, pre-encoded once so the load generator only
 * writes Buffers: request headers (with protocol_config, as on a stream's
 * first message), the JSON body in 1, 2 or 3 chunks (the last with
 * end_of_stream), then response headers and a response body.
 */
import { BodySendMode } from '../../src/protocol/constants.js';
import { encodeRequest } from '../../src/protocol/codec.js';
import type { Variant } from './types.js';

export const BENCH_AUTHORITY = 'bench.example';
export const BENCH_PATH = '/v1/chat/completions';

const TARGET_BYTES: Record<Variant, number> = { '2k': 2 * 1024, '64k': 64 * 1024 };

const WORDS = (
  'the model request prompt token context window answer summarize document section cluster gateway ' +
  'inference latency throughput budget router endpoint picker pool import weight health metric queue cache ' +
  'kubernetes service deployment replica node region zone failover primary fallback stream header body'
).split(' ');

/** A deterministic OpenAI-style chat completion request of about `bytes` bytes. */
export function completionRequest(bytes: number, seed = 1): Buffer {
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state;
  };
  const frame = (content: string): string =>
    JSON.stringify({
      model: 'meta-llama/Llama-3.1-8B-Instruct',
      messages: [
        { role: 'system', content: 'You are a concise assistant. Answer in plain English and cite the sections you used.' },
        { role: 'user', content },
      ],
      max_tokens: 256,
      temperature: 0.7,
      top_p: 0.95,
      stream: false,
      user: 'bench-user-42',
    });
  const empty = frame('').length;
  const words: string[] = ['Summarize the following notes:'];
  let length = words[0]!.length;
  while (empty + length + 8 < bytes) {
    const w = WORDS[next() % WORDS.length]!;
    words.push(w);
    length += w.length + 1;
  }
  // Valid JSON, within one word of the target size.
  return Buffer.from(frame(words.join(' ')), 'utf8');
}

const RESPONSE_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench-0001',
    object: 'chat.completion',
    created: 1763717000,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content:
            'The notes describe a multi-cluster gateway that routes inference requests to endpoint pickers by weight, ' +
            'health and load, with failover to remote pools when the local pool is saturated or unavailable.',
        },
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: 512, completion_tokens: 48, total_tokens: 560 },
  }),
);

function headerMap(list: readonly (readonly [string, string])[]): { headers: { key: string; raw_value: Buffer }[] } {
  return { headers: list.map(([key, v]) => ({ key, raw_value: Buffer.from(v, 'utf8') })) };
}

/** Splits `body` into `n` nearly equal parts. */
export function split(body: Buffer, n: number): Buffer[] {
  const out: Buffer[] = [];
  const size = Math.ceil(body.length / n);
  for (let i = 0; i < n; i++) out.push(body.subarray(i * size, Math.min(body.length, (i + 1) * size)));
  return out.filter((b) => b.length > 0);
}

export interface MessageSet {
  readonly variant: Variant;
  readonly body: Buffer;
  readonly responseBody: Buffer;
  /** ProcessingRequest{request_headers, protocol_config}. */
  readonly requestHeaders: Buffer;
  /** chunkings[k] = the body as k+1 request_body messages, the last with end_of_stream. */
  readonly chunkings: readonly (readonly Buffer[])[];
  readonly responseHeaders: Buffer;
  /** One response_body message with end_of_stream. */
  readonly responseBodyMessage: Buffer;
}

export function messageSet(variant: Variant): MessageSet {
  const body = completionRequest(TARGET_BYTES[variant]);
  const requestHeaders = encodeRequest({
    request_headers: {
      headers: headerMap([
        [':authority', BENCH_AUTHORITY],
        [':path', BENCH_PATH],
        [':method', 'POST'],
        [':scheme', 'http'],
        ['content-type', 'application/json'],
        ['content-length', String(body.length)],
        ['user-agent', 'openai-python/1.54.0'],
        ['accept', 'application/json'],
        ['authorization', 'Bearer sk-bench-0000000000000000'],
        ['x-forwarded-proto', 'http'],
        ['x-request-id', '2f1c6d0e-8a57-4b7e-9d3c-1a2b3c4d5e6f'],
      ]),
      end_of_stream: false,
    },
    protocol_config: {
      request_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
      response_body_mode: BodySendMode.FULL_DUPLEX_STREAMED,
    },
  });
  const chunkings = [1, 2, 3].map((n) => {
    const parts = split(body, n);
    return parts.map((part, i) => encodeRequest({ request_body: { body: part, end_of_stream: i === parts.length - 1 } }));
  });
  const responseHeaders = encodeRequest({
    response_headers: {
      headers: headerMap([
        [':status', '200'],
        ['content-type', 'application/json'],
        ['content-length', String(RESPONSE_BODY.length)],
        ['date', 'Fri, 21 Nov 2026 10:00:00 GMT'],
        ['x-envoy-upstream-service-time', '412'],
      ]),
      end_of_stream: false,
    },
  });
  const responseBodyMessage = encodeRequest({ response_body: { body: RESPONSE_BODY, end_of_stream: true } });
  return { variant, body, responseBody: RESPONSE_BODY, requestHeaders, chunkings, responseHeaders, responseBodyMessage };
}
