import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { TlsConfig } from '../../src/config/schema.js';
import { CredentialFiles } from '../../src/credentials/credential-files.js';
import { HealthProber, type HealthProbeSettings } from '../../src/signals/health-prober.js';
import type { ProbeOutcome, ProbeState } from '../../src/signals/probe-types.js';
import { systemClock } from '../../src/signals/types.js';
import { createTestCa } from '../helpers/pki.js';
import { startRecordingEpp } from '../helpers/recording-epp.js';
import { startSimulatedEpp, TLS_FIXTURES, type SimulatedEpp } from '../harness/simulated-epp.js';
import { startBlackHole, type BlackHole } from './black-hole.js';
import { withinProcessMs } from '../helpers/work-time.js';

const PLAINTEXT: TlsConfig = { enabled: false, insecureSkipVerify: true };
const EXT_PROC = 'envoy.service.ext_proc.v3.ExternalProcessor';

const epps: SimulatedEpp[] = [];
const probers: HealthProber[] = [];
const holes: BlackHole[] = [];
afterEach(async () => {
  for (const p of probers.splice(0)) p.stop();
  await Promise.all([...epps.splice(0).map((e) => e.stop()), ...holes.splice(0).map((h) => h.stop())]);
});

async function epp(opts: Partial<Parameters<typeof startSimulatedEpp>[0]> = {}) {
  const e = await startSimulatedEpp({ endpoints: ['10.0.0.1:8000'], ...opts });
  epps.push(e);
  return e;
}

function prober(address: string, over: Partial<HealthProbeSettings> = {}, onResult?: (o: ProbeOutcome, s: ProbeState) => void) {
  const p = new HealthProber(
    { address, service: EXT_PROC, tls: PLAINTEXT, intervalMs: 30, timeoutMs: 300, healthyThreshold: 2, unhealthyThreshold: 3, ...over },
    { clock: systemClock, ...(onResult ? { onResult } : {}) },
  );
  probers.push(p);
  return p;
}

describe('HealthProber', () => {
  it('applies the thresholds: healthy on first success, 3 failures to go unhealthy, 2 successes to come back', async () => {
    const e = await epp();
    const seen: { ok: boolean; status: string }[] = [];
    const done = new Promise<void>((resolve) => {
      prober(e.address, {}, (o, s) => {
        seen.push({ ok: o.ok, status: s.status });
        const n = seen.length;
        if (n === 2) e.setHealth(EXT_PROC, 'NOT_SERVING');
        if (n === 5) e.setHealth(EXT_PROC, 'SERVING');
        if (n === 7) resolve();
      }).start();
    });
    await done;
    expect(seen.slice(0, 7)).toEqual([
      { ok: true, status: 'healthy' },
      { ok: true, status: 'healthy' },
      { ok: false, status: 'healthy' },
      { ok: false, status: 'healthy' },
      { ok: false, status: 'unhealthy' },
      { ok: true, status: 'unhealthy' },
      { ok: true, status: 'healthy' },
    ]);
  });

  it('NOT_SERVING is a failing answer (reached); unknown services are answers offering no health signal', async () => {
    const e = await epp({ health: { [EXT_PROC]: 'NOT_SERVING', odd: 'SERVICE_UNKNOWN' } });
    const notServing = await prober(e.address).probeOnce();
    expect(notServing).toMatchObject({ ok: false, reached: true, reason: 'not-serving' });
    expect(notServing.unsupported).toBeUndefined();
    expect(await prober(e.address, { service: 'no-such-service' }).probeOnce()).toMatchObject({ ok: false, reached: true, reason: 'service-unknown', unsupported: 'NOT_FOUND' });
    expect(await prober(e.address, { service: 'odd' }).probeOnce()).toMatchObject({ ok: false, reached: true, reason: 'service-unknown', unsupported: 'SERVICE_UNKNOWN' });
  });

  it("a stock EPP's ext_proc port (no Health service) answers UNIMPLEMENTED: status unsupported, never unhealthy", async () => {
    const e = await epp({ stock: true });
    const states: ProbeState[] = [];
    await new Promise<void>((resolve) => {
      prober(e.address, { unhealthyThreshold: 2 }, (_o, st) => {
        states.push(st);
        if (states.length === 4) resolve();
      }).start();
    });
    for (const st of states) expect(st).toMatchObject({ status: 'unsupported', code: 'UNIMPLEMENTED', reachable: true, lastError: 'unimplemented' });
    // Its health port answers, and NOT_SERVING there (a follower's readiness) still gates.
    expect(await prober(e.healthAddress, { service: 'readiness' }).probeOnce()).toMatchObject({ ok: true });
    e.setLeader(false);
    expect(await prober(e.healthAddress, { service: 'readiness' }).probeOnce()).toMatchObject({ ok: false, reason: 'not-serving' });
    expect(await prober(e.healthAddress, { service: 'liveness' }).probeOnce()).toMatchObject({ ok: true });
  });

  it('after "unsupported", the thresholds start over: a first SERVING is healthy at once', async () => {
    const e = await epp({ health: { [EXT_PROC]: 'SERVICE_UNKNOWN' } });
    const seen: string[] = [];
    await new Promise<void>((resolve) => {
      prober(e.address, {}, (_o, st) => {
        seen.push(st.status);
        if (seen.length === 2) e.setHealth(EXT_PROC, 'SERVING');
        if (seen.at(-1) === 'healthy') resolve();
      }).start();
    });
    expect(seen.slice(0, 2)).toEqual(['unsupported', 'unsupported']);
    expect(seen.filter((x) => x !== 'unsupported')).toEqual(['healthy']);
  });

  it('probes a separate health port and service name (GIE 9003, "inference-extension")', async () => {
    const e = await epp({ separateHealthPort: true });
    expect(e.healthAddress).not.toBe(e.address);
    expect(await prober(e.healthAddress, { service: 'inference-extension' }).probeOnce()).toMatchObject({ ok: true, reached: true });
  });

  it('uses the ext_proc TLS options: skip-verify, CA file; plaintext against TLS fails', async () => {
    const e = await epp({ tls: true });
    const skip: TlsConfig = { enabled: true, insecureSkipVerify: true };
    const ca: TlsConfig = { enabled: true, insecureSkipVerify: false, caFile: TLS_FIXTURES.certPath };
    expect(await prober(e.address, { tls: skip }).probeOnce()).toMatchObject({ ok: true });
    expect(await prober(e.address, { tls: ca }).probeOnce()).toMatchObject({ ok: true });
    expect(await prober(e.address, { tls: PLAINTEXT }).probeOnce()).toMatchObject({ ok: false, reached: false });
    const bad: TlsConfig = { enabled: true, insecureSkipVerify: false, caFile: '/nonexistent/ca.pem' };
    expect(await prober(e.address, { tls: bad }).probeOnce()).toMatchObject({ ok: false, reached: false, reason: 'tls-config' });
  });

  it('a black-holed target times out within the timeout; a dead one fails fast', async () => {
    const hole = await startBlackHole();
    holes.push(hole);
    expect(await withinProcessMs(1000, 'black-holed probe', () => prober(hole.address, { timeoutMs: 200 }).probeOnce())).toMatchObject({ ok: false, reached: false, reason: 'timeout' });

    const e = await epp();
    const address = e.address;
    await e.kill();
    expect(await withinProcessMs(1500, 'dead target probe', () => prober(address, { timeoutMs: 2000 }).probeOnce())).toMatchObject({ ok: false, reached: false, reason: 'unavailable' });
  });

  it('recovers when the EPP comes back on the same port', async () => {
    const e = await epp();
    const p = prober(e.address);
    expect((await p.probeOnce()).ok).toBe(true);
    await e.kill();
    expect((await p.probeOnce()).ok).toBe(false);
    await e.restart();
    let ok = false;
    for (let i = 0; i < 40 && !ok; i++) {
      ok = (await p.probeOnce()).ok;
      if (!ok) await new Promise((r) => setTimeout(r, 50));
    }
    expect(ok).toBe(true);
  });
});

describe('HealthProber with watched credential files', () => {
  it('a rotated CA file: the probe after the change verifies against the new CA', async () => {
    const oldCa = createTestCa('old CA');
    const newCa = createTestCa('new CA', oldCa.dir);
    const files = new CredentialFiles({ pollIntervalMs: 0 }); // the test polls explicitly
    const leaf = newCa.leaf('epp', ['DNS:epp.example']);
    const server = await startRecordingEpp({ cert: leaf.cert, key: leaf.key });
    try {
      const caPath = join(oldCa.dir, 'rotating-ca.pem');
      writeFileSync(caPath, oldCa.cert);
      const tls: TlsConfig = { enabled: true, insecureSkipVerify: false, caFile: caPath, serverName: 'epp.example' };
      const p = new HealthProber(
        { address: server.address, service: EXT_PROC, tls, intervalMs: 30, timeoutMs: 1000, healthyThreshold: 1, unhealthyThreshold: 1 },
        { clock: systemClock, files },
      );
      probers.push(p);
      // The EPP's certificate is from the new CA: not verified yet.
      expect(await p.probeOnce()).toMatchObject({ ok: false, reached: false });

      writeFileSync(`${caPath}.new`, newCa.cert);
      renameSync(`${caPath}.new`, caPath); // a Secret volume swaps in a new inode
      await files.poll();
      // Reached over verified TLS (the recording EPP has no Health service: UNIMPLEMENTED).
      expect(await p.probeOnce()).toMatchObject({ reached: true, unsupported: 'UNIMPLEMENTED' });
    } finally {
      server.stop();
      files.close();
      oldCa.remove();
    }
  });
});
