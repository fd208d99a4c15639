import { describe, expect, it } from 'vitest';
import { ConnectionGuard, CutCooldown } from '../../src/transport/peer-guard.js';

const limits = { earlyResetBurst: 5, earlyResetsPerSecond: 10, maxUnusedStreams: 3, cutCooldownMs: 0, trustedPeers: [] };

function guard(): { g: ConnectionGuard; advance(ms: number): void } {
  let t = 1000;
  return { g: new ConnectionGuard(limits, () => t), advance: (ms) => (t += ms) };
}

describe('ConnectionGuard', () => {
  it('early resets: the burst, then the refill rate; past them, cut', () => {
    const { g, advance } = guard();
    for (let i = 0; i < 5; i++) {
      expect(g.opened()).toBeUndefined();
      expect(g.closed(false, true)).toBeUndefined();
    }
    g.opened();
    expect(g.closed(false, true)).toBe('early_resets');
    const h = guard();
    for (let i = 0; i < 5; i++) h.g.closed(true, true);
    h.advance(100); // one token back at 10/s
    expect(h.g.closed(true, true)).toBeUndefined();
    expect(h.g.closed(true, true)).toBe('early_resets');
    // A long quiet spell refills at most the burst.
    const q = guard();
    q.advance(3_600_000);
    for (let i = 0; i < 5; i++) expect(q.g.closed(true, true)).toBeUndefined();
    expect(q.g.closed(true, true)).toBe('early_resets');
  });

  it('answered streams, however they end, never count (Envoy resets every finished stream)', () => {
    const { g } = guard();
    for (let i = 0; i < 10_000; i++) {
      expect(g.opened()).toBeUndefined();
      g.used();
      expect(g.closed(true, false)).toBeUndefined();
    }
    expect(g.earlyResets).toBe(0);
  });

  it('streams held open without a message: past the bound, cut; a used or closed stream frees its place', () => {
    const { g } = guard();
    expect([g.opened(), g.opened(), g.opened()]).toEqual([undefined, undefined, undefined]);
    g.used();
    expect(g.opened()).toBeUndefined();
    g.closed(false, false);
    expect(g.opened()).toBeUndefined();
    expect(g.opened()).toBe('unused_streams');
  });
});

describe('CutCooldown', () => {
  it('refuses an address for the cooldown after its cut, others never; 0 turns it off', () => {
    let t = 0;
    const c = new CutCooldown(10_000, () => t);
    c.cut('10.0.0.9');
    expect([c.refuses('10.0.0.9'), c.refuses('10.0.0.8')]).toEqual([true, false]);
    t = 9_999;
    expect(c.refuses('10.0.0.9')).toBe(true);
    t = 10_000;
    expect(c.refuses('10.0.0.9')).toBe(false);
    const off = new CutCooldown(0, () => t);
    off.cut('10.0.0.9');
    expect(off.refuses('10.0.0.9')).toBe(false);
  });
});

describe('trusted peers (proxies in the pod)', () => {
  it('trusts unix-socket peers and the listed CIDRs, IPv4-mapped IPv6 judged as IPv4, nothing else', async () => {
    const { trustedPeer } = await import('../../src/transport/h2-peer-guard.js');
    const trusted = trustedPeer(['127.0.0.0/8', '::1/128']);
    expect(trusted(undefined)).toBe(true);
    expect(trusted('127.0.0.6')).toBe(true);
    expect(trusted('::ffff:127.0.0.1')).toBe(true);
    expect(trusted('::1')).toBe(true);
    expect(trusted('10.0.0.7')).toBe(false);
    expect(trusted('::ffff:10.0.0.7')).toBe(false);
    expect(trustedPeer([])('127.0.0.1')).toBe(false);
  });

  it('a trusted connection counts no early reset', () => {
    const g = new ConnectionGuard(limits, () => 0, undefined, true);
    for (let i = 0; i < 50; i++) {
      expect(g.opened()).toBeUndefined();
      expect(g.closed(false, true)).toBeUndefined();
    }
  });
});
