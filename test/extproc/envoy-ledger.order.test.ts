// Envoy-side protocol violations: the ledger's order rules (pure), and over real sockets: the router
// answers INVALID_ARGUMENT at once, naming the violation, and releases the EPP stream.
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { EnvoyLedger } from '../../src/extproc/envoy-ledger.js';
import { encodeRequest, type Init, type ProcessingRequest } from '../../src/protocol/codec.js';
import type { PhaseName } from '../../src/protocol/phases.js';
import { envoyMsg } from './fakes.js';
import { body, rawClient, rawStream, requestHeaders } from './raw-stream.js';
import { startScenario, waitFor, type Scenario } from './scenario.js';

type Step = [PhaseName, boolean];

/** The message of `phase` with end_of_stream `eos` (trailers always end their direction). */
function message(phase: PhaseName, eos: boolean): Buffer {
  if (phase.endsWith('_headers')) return encodeRequest({ [phase]: { headers: { headers: [] }, end_of_stream: eos } });
  if (phase.endsWith('_body')) return encodeRequest({ [phase]: { body: Buffer.from('x'), end_of_stream: eos } });
  return encodeRequest({ [phase]: { trailers: { headers: [] } } });
}

describe('EnvoyLedger: the order of Envoy\'s messages', () => {
  const run = (steps: Step[]): (string | undefined)[] => {
    const l = new EnvoyLedger(null, undefined);
    return steps.map(([p, eos]) => {
      try {
        l.fromEnvoy(envoyMsg(message(p, eos)));
        return undefined;
      } catch (err) {
        return (err as Error).message.replace(/^out of order: /, '');
      }
    });
  };

  it('accepts what Envoy sends', () => {
    expect(run([['request_headers', false], ['request_body', false], ['request_body', true], ['response_headers', false], ['response_body', false], ['response_trailers', true]])).toEqual(Array(6).fill(undefined));
    expect(run([['request_headers', false], ['request_body', false], ['response_headers', false], ['request_trailers', true], ['response_body', true]])).toEqual(Array(5).fill(undefined));
    // request_header_mode SKIP: a body first, then the response path
    expect(run([['request_body', true], ['response_headers', false], ['response_body', true]])).toEqual(Array(3).fill(undefined));
    expect(run([['request_body', true], ['response_body', true]])).toEqual([undefined, undefined]);
  });

  it.each<[string, Step[], string]>([
    ['response_headers first', [['response_headers', false]], 'response_headers before any request message'],
    ['request headers twice', [['request_headers', false], ['request_headers', false]], 'request_headers sent twice'],
    ['a body before headers', [['request_body', false], ['request_headers', false]], 'request_headers after other messages of the stream'],
    ['trailers before headers', [['request_trailers', true], ['request_headers', false]], 'request_headers after other messages of the stream'],
    ['a body after end_of_stream headers', [['request_headers', true], ['request_body', false]], 'request_body after the request ended (end_of_stream or trailers)'],
    ['a response body before response headers', [['request_headers', true], ['response_body', false]], 'response_body before response_headers'],
    ['response trailers twice', [['request_headers', true], ['response_headers', false], ['response_trailers', true], ['response_trailers', true]], 'response_trailers after the response ended (end_of_stream or trailers)'],
  ])('%s', (_name, steps, violation) => {
    expect(run(steps).at(-1)).toBe(violation);
  });
});

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.stop();
  sc = undefined;
});

describe('out-of-order messages over real sockets', () => {
  it.each<[string, Init<ProcessingRequest>[], RegExp]>([
    ['response_headers first', [{ response_headers: { headers: { headers: [] } } }], /response_headers before any request message/],
    ['request headers twice', [requestHeaders('local.example'), requestHeaders('local.example')], /request_headers sent twice/],
    ['a body before headers', [body('request_body', '{}', false), requestHeaders('local.example')], /request_headers after other messages/],
    ['a body after end_of_stream headers', [requestHeaders('local.example', true), body('request_body', '{}', false)], /request_body after the request ended/],
    ['response trailers before response headers', [requestHeaders('local.example'), { response_trailers: { trailers: { headers: [] } } }], /response_trailers before response_headers/],
  ])('%s: INVALID_ARGUMENT at once, the EPP stream released', async (_name, messages, details) => {
    sc = await startScenario();
    const client = rawClient(sc.address);
    try {
      const s = rawStream(client);
      for (const m of messages) s.write(m);
      const st = await s.status; // no end(), no cancel: the router ends the stream itself
      expect(st.code).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(st.details).toMatch(details);
      await waitFor(() => sc!.eppA.counters.openStreams === 0 && sc!.server.activeStreams() === 0, 5000, () => 'streams still open');
      await waitFor(() => sc!.observer.finished.length === 1, 5000, () => 'no stream report');
      expect(sc.observer.outcomes()).toEqual(['protocol_error']);
    } finally {
      client.close();
    }
  });
});
