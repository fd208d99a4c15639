// Streams that begin without request headers (Envoy's request_header_mode SKIP): the first message is
// a request body or request trailers. Over real sockets, each is answered at once as the pass-through
// answers (nothing to route on), in the stream's body mode; the stream then goes on and ends OK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeResponse, encodeRequest, type Init, type ProcessingRequest } from '../../src/protocol/codec.js';
import { EXT_PROC_PROCESS_PATH } from '../../src/protocol/constants.js';
import * as grpc from '@grpc/grpc-js';
import { startScenario, waitFor, type Scenario } from './scenario.js';

const FD = { request_body_mode: 4, response_body_mode: 4 };
const BUFFERED = { request_body_mode: 2, response_body_mode: 2 };

/** Writes `messages`, waits for `answers` answers, half-closes; returns what came back (kind, and an echo's body and end) and the status. */
async function exchange(address: string, messages: Init<ProcessingRequest>[], answers: number): Promise<{ got: string[]; code: number }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const id = (b: Buffer) => b;
  const call = client.makeBidiStreamRequest(EXT_PROC_PROCESS_PATH, id, id);
  const got: string[] = [];
  call.on('data', (b: Buffer) => {
    const r = decodeResponse(b);
    const sr = (r.request_body ?? r.response_body)?.response?.body_mutation?.streamed_response;
    got.push(sr ? `${r.response}:${sr.body.toString()}${sr.end_of_stream ? ':eos' : ''}` : (r.response ?? 'empty'));
  });
  const status = new Promise<number>((resolve) => call.on('status', (s: grpc.StatusObject) => resolve(s.code)));
  call.on('error', () => {});
  try {
    for (const m of messages) call.write(encodeRequest(m));
    await waitFor(() => got.length >= answers, 5000, () => `answers ${JSON.stringify(got)}`);
    call.end();
    return { got, code: await status };
  } finally {
    client.close();
  }
}

const body = (bytes: string, eos: boolean, protocol?: object): Init<ProcessingRequest> => ({
  request_body: { body: Buffer.from(bytes), end_of_stream: eos },
  ...(protocol ? { protocol_config: protocol } : {}),
});
const trailers = (protocol?: object): Init<ProcessingRequest> => ({ request_trailers: { trailers: { headers: [] } }, ...(protocol ? { protocol_config: protocol } : {}) });
const responseHeaders: Init<ProcessingRequest> = { response_headers: { headers: { headers: [] } } };

describe('a stream whose first message is not request headers', () => {
  let sc: Scenario;
  beforeAll(async () => {
    sc = await startScenario();
  });
  afterAll(async () => {
    await sc.settled();
    expect(new Set(sc.observer.outcomes())).toEqual(new Set(['passthrough']));
    expect(sc.eppA.counters.streamsOpened + sc.eppB.counters.streamsOpened).toBe(0); // nothing routed to an EPP
    await sc.stop();
  });

  it.each<[string, Init<ProcessingRequest>[], string[]]>([
    ['a request body with end_of_stream, FULL_DUPLEX_STREAMED', [body('ab', true, FD), responseHeaders], ['request_body:ab:eos', 'response_headers']],
    ['a request body without end_of_stream, FULL_DUPLEX_STREAMED', [body('ab', false, FD), body('c', true)], ['request_body:ab', 'request_body:c:eos']],
    ['a request body with end_of_stream, no protocol_config', [body('ab', true), responseHeaders], ['request_body', 'response_headers']],
    ['a request body without end_of_stream, BUFFERED', [body('ab', false, BUFFERED), body('c', true)], ['request_body', 'request_body']],
    ['request trailers, FULL_DUPLEX_STREAMED', [trailers(FD), responseHeaders], ['request_trailers', 'response_headers']],
    ['request trailers, no protocol_config', [trailers(), responseHeaders], ['request_trailers', 'response_headers']],
  ])('%s: answered at once as the pass-through, the stream ends OK', async (_name, messages, answers) => {
    const r = await exchange(sc.address, messages, answers.length);
    expect(r.got).toEqual(answers);
    expect(r.code).toBe(grpc.status.OK);
  });
});
