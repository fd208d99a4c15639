// The relay stand-in behaves like envoy/relay.yaml's Envoy when its verifier is gone:
// failure_mode_allow false, so the request fails with 500 and nothing is forwarded.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { forwardHttp } from './http-upstream.js';
import { startRelayStandin } from './relay-standin.js';

/** A loopback port nothing listens on. */
async function closedPort(): Promise<string> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return `127.0.0.1:${port}`;
}

describe('relay stand-in', () => {
  it('answers 500 and forwards nothing when the verifier is unreachable (failure_mode_allow false)', async () => {
    const relay = await startRelayStandin({ verifier: await closedPort() });
    const target = await closedPort();
    const r = await forwardHttp(relay.address, {
      headers: [[':authority', 'llm.example'], [':path', '/v1/completions'], ['x-gateway-destination-endpoint', target]],
      body: Buffer.from('{}'),
    });
    await relay.close();
    expect(r.status).toBe(500);
    expect(relay.forwards).toEqual([]);
  });
});
