import { describe, expect, it } from 'vitest';
import { EppClientPool, targetKey } from '../../src/transport/epp-client.js';
import { overrideTarget as target } from '../helpers/epp-target.js';
import { blackHole } from '../extproc/scenario.js';
import { withinProcessMs } from '../helpers/work-time.js';

describe('targetKey', () => {
  it('separates the same address with different TLS settings', () => {
    const keys = new Set([
      targetKey(target('10.0.0.1:9002')),
      targetKey(target('10.0.0.1:9002', { enabled: true })),
      targetKey(target('10.0.0.1:9002', { enabled: true, caFile: '/ca.pem' })),
      targetKey(target('10.0.0.1:9002', { enabled: true, insecureSkipVerify: false })),
      targetKey(target('10.0.0.1:9002', { enabled: true, serverName: 'epp' })),
    ]);
    expect(keys.size).toBe(5);
    expect(targetKey(target('10.0.0.1:9002'))).toBe(targetKey(target('10.0.0.1:9002', { serverName: 'ignored-without-tls' })));
  });
});

describe('EppClientPool', () => {
  it('shares a channel per target and evicts targets no longer in the snapshot', async () => {
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 50 });
    const a = target('127.0.0.1:1');
    const b = target('127.0.0.1:2');
    // Nothing listens on ports 1 and 2: ready() resolves (the call would fail at once) or times out.
    await Promise.allSettled([pool.ready(a), pool.ready({ ...a }), pool.ready(b)]);
    expect(pool.size()).toBe(2);
    const call = pool.call(a, {});
    const status = await new Promise<number>((resolve) => call.on('error', (e: { code: number }) => resolve(e.code)));
    expect(status).toBe(14); // UNAVAILABLE, with grpc-js's reason
    pool.retain([b]);
    expect(pool.size()).toBe(1);
    pool.close();
    expect(pool.size()).toBe(0);
    await expect(pool.ready(b)).rejects.toThrow('EPP client pool is closed');
  });

  it('fails ready() and call() of a target whose TLS files cannot be read, naming the file', async () => {
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 50 });
    try {
      const t = target('127.0.0.1:1', { enabled: true, insecureSkipVerify: false, caFile: '/missing-ca.pem' });
      await expect(pool.ready(t)).rejects.toThrow(/EPP TLS: cannot read caFile \/missing-ca.pem/);
      expect(() => pool.call(t, {})).toThrow(/EPP TLS: cannot read caFile \/missing-ca.pem/);
    } finally {
      pool.close();
    }
  });

  it('gives a cold channel at most connectTimeoutMs', async () => {
    const hole = await blackHole();
    const pool = new EppClientPool({ maxMessageBytes: 1 << 20, connectTimeoutMs: 150 });
    try {
      await withinProcessMs(1000, 'cold channel', () => expect(pool.ready(target(hole.address, { enabled: true }))).rejects.toThrow(/within 150 ms/));
    } finally {
      pool.close();
      hole.close();
    }
  });
});
