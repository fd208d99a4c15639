/**
 * An EPP host name read from a member's objects (a load-balancer hostname) is
 * dialled on the http2 transport only when every address it resolves to passes
 * that member's destination rules: `localhost` resolves to loopback, which the
 * default rules deny, while a real EPP listens there.
 */
import { createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eppAnswersSchema, type EppAnswersConfig } from '../../src/config/schema.js';
import { MemberAnswerRules } from '../../src/extproc/answer-rules.js';
import { EppClientPool, targetKey, type EppCall } from '../../src/extproc/epp-client.js';
import type { EppTarget } from '../../src/snapshot/types.js';

/** A plaintext gRPC endpoint that echoes every message; counts the connections it accepts. */
let server: Http2Server;
let port: number;
let sessions = 0;

beforeAll(async () => {
  server = createServer();
  server.on('session', () => sessions++);
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.on('data', (chunk: Buffer) => stream.write(chunk));
    stream.on('end', () => stream.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function target(host: string, source: EppTarget['source'], cluster = 'cluster-b'): EppTarget {
  return { address: `${host}:${port}`, host, port, cluster, service: { namespace: 'ns', name: 'epp' }, source, tls: { enabled: false, insecureSkipVerify: false } };
}

function pool(members: Record<string, Partial<EppAnswersConfig>> = {}): EppClientPool {
  const clusters = Object.entries(members).map(([name, eppAnswers]) => ({ name, eppAnswers: eppAnswersSchema.parse(eppAnswers) }));
  return new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, transport: 'http2', destinations: new MemberAnswerRules({ clusters } as never) });
}

/** One message through the call: its echo, or the call's error. */
async function roundTrip(p: EppClientPool, t: EppTarget): Promise<{ echo?: Buffer; error?: Error }> {
  await p.ready(t);
  const call: EppCall = p.call(t, {});
  return new Promise((resolve) => {
    call.on('data', (m: Buffer) => resolve({ echo: m }));
    call.on('error', (e: Error) => resolve({ error: e }));
    call.write(Buffer.from('hello'));
    call.end();
  });
}

describe('EPP host names from a member object, on the http2 transport', () => {
  it("refuses to connect when the name resolves to an address the member's rules deny, naming host, address and rule", async () => {
    const p = pool();
    const before = sessions;
    try {
      const r = await roundTrip(p, target('localhost', 'loadBalancer'));
      expect(r.echo).toBeUndefined();
      expect(r.error?.message).toContain('UNAVAILABLE');
      expect(r.error?.message).toContain(`localhost resolved to 127.0.0.1, which is refused: 127.0.0.1:${port} is inside destinations.deny (clusters[cluster-b].eppAnswers.destinations)`);
      expect(sessions).toBe(before);
    } finally {
      p.close();
    }
  });

  it('connects when the member allows the address', async () => {
    const p = pool({ 'cluster-b': { destinations: { allow: ['127.0.0.0/8'], deny: [] } } });
    try {
      expect((await roundTrip(p, target('localhost', 'loadBalancer'))).echo?.toString()).toBe('hello');
    } finally {
      p.close();
    }
  });

  it("holds the name to its own member's rules, and leaves the operator's override unchecked", async () => {
    const p = pool({ 'cluster-a': { destinations: { allow: ['127.0.0.0/8'], deny: [] } } });
    try {
      expect((await roundTrip(p, target('localhost', 'loadBalancer', 'cluster-b'))).error?.message).toContain('clusters[cluster-b].eppAnswers.destinations');
      expect((await roundTrip(p, target('localhost', 'loadBalancer', 'cluster-a'))).echo?.toString()).toBe('hello');
      expect((await roundTrip(p, target('localhost', 'override', 'cluster-b'))).echo?.toString()).toBe('hello');
    } finally {
      p.close();
    }
  });

  it('never shares a channel between a name from objects and the same address as an override', () => {
    expect(targetKey(target('localhost', 'loadBalancer'))).not.toBe(targetKey(target('localhost', 'override')));
    expect(targetKey(target('localhost', 'loadBalancer', 'cluster-a'))).not.toBe(targetKey(target('localhost', 'loadBalancer', 'cluster-b')));
    expect(targetKey(target('127.0.0.1', 'clusterIP'))).toBe(targetKey(target('127.0.0.1', 'override')));
  });
});
