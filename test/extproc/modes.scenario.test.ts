// Every processing mode Envoy can use, with and without trailers, bodies of 0 B, 1 KiB and
// 4 MiB, through both processors: the relay to an EPP (Endpoint mode, local pool) and the
// router's own answers (Parent mode, remote pool). A 4 MiB BUFFERED body is one gRPC message
// above grpc-js's default 4 MiB limit: this proves the configured limits on both sides.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getHeader, type StandinOptions } from '../harness/envoy-standin.js';
import { frames, jsonBody, PARENT_B, POOL_A_ENDPOINTS, startScenario, type Scenario } from './scenario.js';

type ModeName = 'headers-only' | 'BUFFERED' | 'STREAMED' | 'FULL_DUPLEX_STREAMED';

function options(mode: ModeName): StandinOptions {
  if (mode === 'headers-only') {
    // A generous message timeout: 200 ms (Envoy's default) is flaky on a loaded 2-core machine.
    return { requestBodyMode: 'NONE', responseBodyMode: 'NONE', requestTrailerMode: 'SKIP', responseTrailerMode: 'SKIP', messageTimeoutMs: 5000 };
  }
  return { requestBodyMode: mode, responseBodyMode: mode, requestTrailerMode: 'SEND', responseTrailerMode: 'SEND', messageTimeoutMs: 5000 };
}

const MODES: ModeName[] = ['headers-only', 'BUFFERED', 'STREAMED', 'FULL_DUPLEX_STREAMED'];
const SIZES = [0, 1024, 4 * 1024 * 1024];
const CASES = MODES.flatMap((mode) => SIZES.flatMap((size) => [false, true].map((trailers) => ({ mode, size, trailers }))));

for (const path of ['relay', 'parent'] as const) {
  describe(`${path}: every processing mode`, () => {
    let sc: Scenario;
    beforeAll(async () => {
      sc = await startScenario({ mode: path === 'relay' ? 'Endpoint' : 'Parent' });
    });
    afterAll(async () => {
      await sc.settled();
      const outcomes = new Set(sc.observer.outcomes());
      expect([...outcomes]).toEqual([path === 'relay' ? 'relayed' : 'parent']);
      await sc.stop();
    });

    it.each(CASES)('$mode, $size B body, trailers: $trailers', async ({ mode, size, trailers }) => {
      const reqBody = jsonBody(size);
      const respBody = Buffer.alloc(size, 'r');
      const r = await sc.envoy.run(
        {
          authority: path === 'relay' ? 'local.example' : 'remote.example',
          path: '/v1/completions',
          body: frames(reqBody),
          trailers: trailers ? { 'x-req-trailer': 'a' } : undefined,
          response: { status: 200, headers: { 'content-type': 'application/json' }, body: frames(respBody), trailers: trailers ? { 'x-resp-trailer': 'b' } : undefined },
        },
        options(mode),
      );
      expect(r.reason).toBeUndefined();
      expect(r.outcome).toBe('forwarded');
      if (path === 'relay') expect(POOL_A_ENDPOINTS).toContain(r.destination);
      else expect(r.destination).toBe(PARENT_B);
      expect(r.forwardedBody!.equals(reqBody)).toBe(true);
      expect(r.status).toBe(200);
      expect(r.response.body.equals(respBody)).toBe(true);
      if (trailers) {
        expect(getHeader(r.upstreamTrailers, 'x-req-trailer')).toBe('a');
        expect(getHeader(r.response.trailers, 'x-resp-trailer')).toBe('b');
      }
    });
  });
}
