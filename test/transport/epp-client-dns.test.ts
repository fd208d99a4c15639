/**
 * An EPP host name read from a member's objects (a load-balancer hostname) is
 * dialled, on either transport, only when every address it resolves to passes that
 * member's destination rules, at every (re)connect. The names resolve through a
 * scripted DNS; a real EPP endpoint listens on the addresses they resolve to, and
 * a denied one never sees a connection.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eppAnswersSchema, type EppAnswersConfig, type TlsConfig } from '../../src/config/schema.js';
import { MemberAnswerRules } from '../../src/config/answer-rules.js';
import type { EppCall } from '../../src/extproc/epp-call.js';
import { EppClientPool, targetKey } from '../../src/transport/epp-client.js';
import type { EppTarget } from '../../src/snapshot/types.js';
import { scriptedDns, startDialPeer, type DialPeer } from '../helpers/dial-peer.js';
import { eventually } from '../helpers/eventually.js';
import { createTestCa, type Leaf, type TestCa } from '../helpers/pki.js';

const NAME = 'epp.member-b.example';
const PLAINTEXT: TlsConfig = { enabled: false, insecureSkipVerify: false };

let ca: TestCa;
let named: Leaf;
let otherName: Leaf;
beforeAll(() => {
  ca = createTestCa('epp dns CA');
  named = ca.leaf('named', [`DNS:${NAME}`]);
  otherName = ca.leaf('other', ['DNS:someone-else.example']);
  return () => ca.remove();
});

const peers: DialPeer[] = [];
const pools: EppClientPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) p.close();
  await Promise.all(peers.splice(0).map((p) => p.close()));
});

async function peer(host: string, port = 0, tls?: Leaf): Promise<DialPeer> {
  const p = await startDialPeer(host, port, tls);
  peers.push(p);
  return p;
}

function target(host: string, port: number, source: EppTarget['source'], cluster = 'cluster-b', tls: TlsConfig = PLAINTEXT): EppTarget {
  return { address: `${host}:${port}`, host, port, cluster, service: { namespace: 'ns', name: 'epp' }, source, tls };
}

/** Answers for this hop: every message comes back as sent, so "hello" proves the call went through. */
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

describe.each(['http2', 'grpc-js'] as const)("EPP host names from a member's objects, on the %s transport", (transport) => {
  function pool(dns: ReturnType<typeof scriptedDns>, members: Record<string, Partial<EppAnswersConfig>> = {}): EppClientPool {
    const clusters = Object.entries(members).map(([name, eppAnswers]) => ({ name, eppAnswers: eppAnswersSchema.parse(eppAnswers) }));
    const p = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, transport, resolve: dns.resolve, destinations: new MemberAnswerRules({ clusters } as never) });
    pools.push(p);
    return p;
  }

  it("refuse to connect when the name resolves to an address the member's rules deny, naming host, address and rule", async () => {
    const epp = await peer('127.0.0.1');
    const dns = scriptedDns(() => ['127.0.0.1']);
    const p = pool(dns);
    for (let i = 0; i < 3; i++) {
      const r = await roundTrip(p, target(NAME, epp.port, 'loadBalancer'));
      expect(r.echo).toBeUndefined();
      expect(r.error?.message).toContain('UNAVAILABLE');
      expect(r.error?.message).toContain(`${NAME} resolved to 127.0.0.1, which is refused: 127.0.0.1:${epp.port} is inside destinations.deny (clusters[cluster-b].eppAnswers.destinations)`);
    }
    expect(dns.asked()).toBeGreaterThan(0);
    expect(epp.connections()).toBe(0);
  });

  it('refuse localhost through the system resolver (loopback is denied by default)', async () => {
    const epp = await peer('127.0.0.1');
    const p = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 2000, transport, destinations: new MemberAnswerRules() });
    pools.push(p);
    const r = await roundTrip(p, target('localhost', epp.port, 'loadBalancer'));
    expect(r.error?.message).toMatch(/localhost resolved to (127\.0\.0\.1|::1), which is refused/);
    expect(epp.connections()).toBe(0);
  });

  it('connect when the member allows the address, verifying TLS against the host name', async () => {
    const allow = { 'cluster-b': { destinations: { allow: ['127.0.0.1/32'], deny: [] } } };
    const tls: TlsConfig = { enabled: true, caFile: ca.certPath, insecureSkipVerify: false };
    const plain = await peer('127.0.0.1');
    expect((await roundTrip(pool(scriptedDns(() => ['127.0.0.1']), allow), target(NAME, plain.port, 'loadBalancer'))).echo?.toString()).toBe('hello');
    const secure = await peer('127.0.0.1', 0, named);
    expect((await roundTrip(pool(scriptedDns(() => ['127.0.0.1']), allow), target(NAME, secure.port, 'loadBalancer', 'cluster-b', tls))).echo?.toString()).toBe('hello');
    const impostor = await peer('127.0.0.1', 0, otherName);
    const r = await roundTrip(pool(scriptedDns(() => ['127.0.0.1']), allow), target(NAME, impostor.port, 'loadBalancer', 'cluster-b', tls));
    expect(r.echo).toBeUndefined();
    expect(r.error?.message).toMatch(/UNAVAILABLE/);
    expect(impostor.connections()).toBeGreaterThan(0);
  });

  it("hold the name to its own member's rules, and leave the operator's override unchecked", async () => {
    const epp = await peer('127.0.0.1');
    const p = pool(scriptedDns(() => ['127.0.0.1']), { 'cluster-a': { destinations: { allow: ['127.0.0.0/8'], deny: [] } } });
    expect((await roundTrip(p, target(NAME, epp.port, 'loadBalancer', 'cluster-b'))).error?.message).toContain('clusters[cluster-b].eppAnswers.destinations');
    expect(epp.connections()).toBe(0);
    expect((await roundTrip(p, target(NAME, epp.port, 'loadBalancer', 'cluster-a'))).echo?.toString()).toBe('hello');
    // An override is the operator's own: dialled as written (here an IP), without the member's rules.
    expect((await roundTrip(p, target('127.0.0.1', epp.port, 'override', 'cluster-b'))).echo?.toString()).toBe('hello');
  });

  it('re-resolve on reconnect: a name that moves to a denied address is refused and the address sees nothing; one that moves to an allowed address is followed', async () => {
    const first = await peer('127.0.0.1');
    const denied = await peer('127.0.0.2', first.port);
    const moved = await peer('127.0.0.3', first.port);
    let answer = ['127.0.0.1'];
    const p = pool(scriptedDns(() => answer), { 'cluster-b': { destinations: { allow: ['127.0.0.0/8'], deny: ['127.0.0.2/32'] } } });
    const t = target(NAME, first.port, 'loadBalancer');
    expect((await roundTrip(p, t)).echo?.toString()).toBe('hello');

    answer = ['127.0.0.2'];
    first.dropConnections();
    await eventually(async () => expect((await roundTrip(p, t)).error?.message).toContain(`${NAME} resolved to 127.0.0.2, which is refused: 127.0.0.2:${first.port} is inside destinations.deny`), 5000);
    expect(denied.connections()).toBe(0);

    answer = ['127.0.0.3'];
    await eventually(async () => expect((await roundTrip(p, t)).echo?.toString()).toBe('hello'), 5000);
    expect(moved.connections()).toBeGreaterThan(0);
    expect(denied.connections()).toBe(0);
  });
});

describe('EPP channel identity', () => {
  it('never shares a channel between a name from objects and the same address as an override', () => {
    expect(targetKey(target('localhost', 9002, 'loadBalancer'))).not.toBe(targetKey(target('localhost', 9002, 'override')));
    expect(targetKey(target('localhost', 9002, 'loadBalancer', 'cluster-a'))).not.toBe(targetKey(target('localhost', 9002, 'loadBalancer', 'cluster-b')));
    expect(targetKey(target('127.0.0.1', 9002, 'clusterIP'))).toBe(targetKey(target('127.0.0.1', 9002, 'override')));
  });
});
