/**
 * A health probe of an EPP host name read from a member's objects connects only to
 * addresses the member's destination rules allow, at every (re)connect: a real
 * endpoint listens on the address the name resolves to, and a denied one never sees
 * a connection.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eppAnswersSchema, type EppAnswersConfig, type TlsConfig } from '../../src/config/schema.js';
import { HealthProber, type HealthProbeSettings } from '../../src/signals/health-prober.js';
import { planHealth } from '../../src/signals/plan.js';
import type { ProbeOutcome } from '../../src/signals/probe-types.js';
import { systemClock } from '../../src/signals/types.js';
import type { EppTarget } from '../../src/snapshot/types.js';
import { eventually } from '../helpers/eventually.js';
import { scriptedDns, startDialPeer, type DialPeer } from '../helpers/dial-peer.js';
import { createTestCa, type Leaf, type TestCa } from '../helpers/pki.js';

const NAME = 'epp.member-b.example';
const PLAINTEXT: TlsConfig = { enabled: false, insecureSkipVerify: false };
const DEFAULT_RULES = eppAnswersSchema.parse({}).destinations;
const ONLY_127_0_0_1: EppAnswersConfig['destinations'] = { allow: ['127.0.0.1/32'], deny: [] };

let ca: TestCa;
let named: Leaf;
let otherName: Leaf;
beforeAll(() => {
  ca = createTestCa('health dns CA');
  named = ca.leaf('named', [`DNS:${NAME}`]);
  otherName = ca.leaf('other', ['DNS:someone-else.example']);
  return () => ca.remove();
});

const peers: DialPeer[] = [];
const probers: HealthProber[] = [];
afterEach(async () => {
  for (const p of probers.splice(0)) p.stop();
  await Promise.all(peers.splice(0).map((p) => p.close()));
});

async function peer(host: string, port = 0, tls?: Leaf): Promise<DialPeer> {
  const p = await startDialPeer(host, port, tls);
  peers.push(p);
  return p;
}

function prober(
  port: number,
  destinations: EppAnswersConfig['destinations'],
  dns: ReturnType<typeof scriptedDns>,
  over: Partial<HealthProbeSettings> = {},
  onResult?: (o: ProbeOutcome) => void,
): HealthProber {
  const p = new HealthProber(
    { address: `${NAME}:${port}`, service: '', tls: PLAINTEXT, intervalMs: 50, timeoutMs: 1000, healthyThreshold: 1, unhealthyThreshold: 2, cluster: 'cluster-b', destinations, ...over },
    { clock: systemClock, resolve: dns.resolve, ...(onResult ? { onResult } : {}) },
  );
  probers.push(p);
  return p;
}

describe("health probes of a host name from a member's objects", () => {
  it('never connect to an address the rules deny; the outcome names host, address and rule', async () => {
    const epp = await peer('127.0.0.1');
    const dns = scriptedDns(() => ['127.0.0.1']);
    const p = prober(epp.port, DEFAULT_RULES, dns);
    for (let i = 0; i < 3; i++) {
      const o = await p.probeOnce();
      expect(o).toMatchObject({ ok: false, reached: false, reason: 'destination-refused' });
      expect(o.detail).toBe(`${NAME} resolved to 127.0.0.1, which is refused: 127.0.0.1:${epp.port} is inside destinations.deny (clusters[cluster-b].eppAnswers.destinations)`);
    }
    expect(dns.asked()).toBeGreaterThan(0);
    expect(epp.connections()).toBe(0);
  });

  it('probe an allowed address, verifying TLS against the host name', async () => {
    const epp = await peer('127.0.0.1', 0, named);
    const tls: TlsConfig = { enabled: true, caFile: ca.certPath, insecureSkipVerify: false };
    const ok = await prober(epp.port, ONLY_127_0_0_1, scriptedDns(() => ['127.0.0.1']), { tls }).probeOnce();
    expect(ok).toMatchObject({ ok: true, reached: true });

    const impostor = await peer('127.0.0.1', 0, otherName);
    const bad = await prober(impostor.port, ONLY_127_0_0_1, scriptedDns(() => ['127.0.0.1']), { tls }).probeOnce();
    // A certificate that does not name the host is a TLS verification failure, told apart from an EPP that is down.
    expect(bad).toMatchObject({ ok: false, reached: false, reason: 'tls-unverified' });
    expect(impostor.connections()).toBeGreaterThan(0);
  });

  it('re-resolve on reconnect: a name that moves to a denied address is refused, and the denied address sees nothing', async () => {
    const first = await peer('127.0.0.1');
    const denied = await peer('127.0.0.2', first.port);
    let answer = ['127.0.0.1'];
    const outcomes: ProbeOutcome[] = [];
    prober(first.port, ONLY_127_0_0_1, scriptedDns(() => answer), {}, (o) => outcomes.push(o)).start();
    await eventually(() => expect(outcomes.some((o) => o.ok)).toBe(true), 5000);
    answer = ['127.0.0.2'];
    first.dropConnections();
    await eventually(() => expect(outcomes.at(-1)).toMatchObject({ reason: 'destination-refused', detail: expect.stringContaining(`resolved to 127.0.0.2, which is refused: 127.0.0.2:${first.port} is outside destinations.allow`) }), 5000);
    expect(denied.connections()).toBe(0);
  });

  it('re-resolve on reconnect: a name that moves to another allowed address is followed', async () => {
    const first = await peer('127.0.0.1');
    const second = await peer('127.0.0.3', first.port);
    let answer = ['127.0.0.1'];
    const outcomes: ProbeOutcome[] = [];
    prober(first.port, { allow: ['127.0.0.0/8'], deny: [] }, scriptedDns(() => answer), {}, (o) => outcomes.push(o)).start();
    await eventually(() => expect(outcomes.some((o) => o.ok)).toBe(true), 5000);
    answer = ['127.0.0.3'];
    first.dropConnections();
    await eventually(() => expect(second.connections()).toBeGreaterThan(0), 5000);
    const before = outcomes.length;
    await eventually(() => expect(outcomes.slice(before).some((o) => o.ok)).toBe(true), 5000);
  });

  it('are planned with the member rules only for a host name from its objects', () => {
    const epp = (host: string, source: EppTarget['source']): EppTarget => ({
      address: `${host}:9002`, host, port: 9002, cluster: 'cluster-b', service: { namespace: 'ns', name: 'epp' }, source, tls: PLAINTEXT,
    });
    const rules = eppAnswersSchema.parse({ destinations: { allow: ['10.0.0.0/8'] } });
    expect(planHealth(epp(NAME, 'loadBalancer'), undefined, rules).settings).toMatchObject({ cluster: 'cluster-b', destinations: rules.destinations });
    expect(planHealth(epp(NAME, 'override'), undefined, rules).settings.destinations).toBeUndefined();
    expect(planHealth(epp('10.1.2.3', 'loadBalancer'), undefined, rules).settings.destinations).toBeUndefined();
  });
});
