/**
 * A streamed LLM response as Envoy hands it to an ext_proc server in
 * FULL_DUPLEX_STREAMED mode: response headers of an SSE stream, then one
 * response_body message per server-sent event (an OpenAI-style
 * chat.completion.chunk carrying one token), the last one `data: [DONE]` with
 * end_of_stream. Pre-encoded once per chunk count, so the generator only
 * writes Buffers.
 */
import { encodeRequest } from '../../src/protocol/codec.js';

export interface StreamSet {
  readonly chunks: number;
  readonly responseHeaders: Buffer;
  /** ProcessingRequest{response_body} per event, the last with end_of_stream. */
  readonly messages: readonly Buffer[];
  /** ends[i] = the response body's length up to and including event i. */
  readonly ends: readonly number[];
  readonly bodyBytes: number;
}

const TOKENS = ' The gateway routes each request to the pool whose picker answers first with a ready endpoint and'.split(/(?= )/);

/** The SSE event of token `i` (about 220 bytes, like a vLLM chunk with usage off). */
export function sseEvent(i: number): Buffer {
  const chunk = {
    id: 'chatcmpl-bench-0001',
    object: 'chat.completion.chunk',
    created: 1763717000,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    choices: [{ index: 0, delta: { content: TOKENS[i % TOKENS.length] }, logprobs: null, finish_reason: null }],
  };
  return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`, 'utf8');
}

export function streamSet(chunks: number): StreamSet {
  if (!Number.isInteger(chunks) || chunks < 1) throw new RangeError(`chunks must be a whole number >= 1, got ${chunks}`);
  const bodies = Array.from({ length: chunks }, (_, i) => (i === chunks - 1 ? Buffer.from('data: [DONE]\n\n') : sseEvent(i)));
  const messages = bodies.map((body, i) => encodeRequest({ response_body: { body, end_of_stream: i === chunks - 1 } }));
  let total = 0;
  const ends = bodies.map((b) => (total += b.length));
  const responseHeaders = encodeRequest({
    response_headers: {
      headers: {
        headers: [
          [':status', '200'],
          ['content-type', 'text/event-stream'],
          ['cache-control', 'no-cache'],
          ['date', 'Fri, 21 Nov 2026 10:00:00 GMT'],
          ['x-envoy-upstream-service-time', '38'],
        ].map(([key, v]) => ({ key: key!, raw_value: Buffer.from(v!, 'utf8') })),
      },
      end_of_stream: false,
    },
  });
  return { chunks, responseHeaders, messages, ends, bodyBytes: total };
}
