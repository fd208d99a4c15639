// What the SignalStore says about stock llm-d EPPs it cannot use fully (real gRPC, HTTP and
// TLS with certificates generated here): a pool without a load signal (metrics off, a scrape
// refused for want of a token) and an EPP certificate nobody trusts, each logged once and
// listed by warnings() (/debug/signals) while it lasts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SignalStore } from '../../src/signals/signal-store.js';
import { createTestCa, selfSignedLeaf } from '../helpers/pki.js';
import { startSimulatedEpp, type SimulatedEppOptions } from '../harness/simulated-epp.js';
import { eppTarget, memoryLogger, signalsConfig, snapshotOf, viaEpp } from './fixtures.js';
import { tlsSchema } from '../../src/config/schema.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function stockEpp(o: Partial<SimulatedEppOptions> = {}) {
  const e = await startSimulatedEpp({ endpoints: ['10.0.0.1:8000'], stock: { pool: 'p', metricsTokens: ['scrape-token'] }, ...o });
  cleanups.push(() => e.stop());
  return e;
}

function store(config: ReturnType<typeof signalsConfig>) {
  const { lines, logger } = memoryLogger();
  const s = new SignalStore({ config, logger, evaluateIntervalMs: 50 });
  cleanups.push(() => s.stop());
  return { s, warns: () => lines.filter((l) => l.level === 'warn') };
}

function tokenFile(token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcip-warn-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'token'), token);
  return join(dir, 'token');
}

describe('SignalStore warnings', () => {
  it('metrics off: the pool has no load signal, logged once however often the snapshot changes, listed while it lasts', async () => {
    const e = await stockEpp();
    const { s, warns } = store(signalsConfig({ c1: { epp: { metrics: { enabled: false } } } }));
    const c = viaEpp('c1', 'p', eppTarget('c1', e.address));
    s.update(snapshotOf(c));
    s.update(snapshotOf(c));
    expect(warns()).toHaveLength(1);
    expect(warns()[0]!.obj).toMatchObject({ cluster: 'c1', candidate: 'c1/ns/p', field: 'clusters[0].epp.metrics.enabled' });
    expect(warns()[0]!.msg).toMatch(/pool c1\/ns\/p has no load signal: .*never spill over/);
    expect(s.warnings()).toEqual([expect.objectContaining({ candidate: 'c1/ns/p', field: 'clusters[0].epp.metrics.enabled' })]);
    // Gone, then back: told again (nothing is remembered about pools that left).
    s.update(snapshotOf());
    expect(s.warnings()).toEqual([]);
    s.update(snapshotOf(c));
    expect(warns()).toHaveLength(2);
  });

  it('a stock EPP refuses a scrape without its token: warned once with the 401, listed while it lasts; with the token, no warning', async () => {
    const e = await stockEpp();
    const withheld = store(signalsConfig({ c1: { epp: { metrics: { port: e.metricsPort } } } }));
    const c = viaEpp('c1', 'p', eppTarget('c1', e.address));
    withheld.s.update(snapshotOf(c));
    // Without a Kubernetes member there is no token at all: the EPP answers 401.
    await expect.poll(() => withheld.s.warnings().map((w) => w.message).join('\n'), { timeout: 3000 }).toMatch(/pool c1\/ns\/p has no load signal: scraping http:\/\/127\.0\.0\.1:\d+\/metrics fails \(http-401/);
    await expect.poll(() => withheld.warns().length, { timeout: 3000 }).toBe(1);
    expect(withheld.warns()[0]).toMatchObject({ obj: { reason: 'http-401', candidates: ['c1/ns/p'] }, msg: expect.stringMatching(/no load signal/) });
    await new Promise((r) => setTimeout(r, 200)); // more failed scrapes, no more warnings
    expect(withheld.warns()).toHaveLength(1);

    const metrics = { port: e.metricsPort, bearerTokenFile: tokenFile('scrape-token'), allowTokenOverPlainHttp: true };
    const served = store(signalsConfig({ c1: { epp: { metrics } } }));
    served.s.update(snapshotOf(c));
    await expect.poll(() => served.s.view().get('c1/ns/p').readyPods, { timeout: 3000 }).toBe(1);
    // Only the member-level warning about the token over plain http remains.
    expect(served.s.warnings().map((w) => w.field)).toEqual(['clusters[0].epp.metrics.allowTokenOverPlainHttp']);
    expect(served.warns().filter((w) => /no load signal/.test(w.msg))).toEqual([]);
  });

  it('a scrape without the pool\'s series: no load signal for that pool only', async () => {
    const e = await stockEpp();
    const metrics = { port: e.metricsPort, bearerTokenFile: tokenFile('scrape-token'), allowTokenOverPlainHttp: true };
    const { s } = store(signalsConfig({ c1: { epp: { metrics } } }));
    const target = eppTarget('c1', e.address);
    s.update(snapshotOf(viaEpp('c1', 'p', target), viaEpp('c1', 'other', target)));
    await expect.poll(() => s.warnings().filter((w) => w.candidate !== undefined).map((w) => w.candidate), { timeout: 3000 }).toEqual(['c1/ns/other']);
    expect(s.warnings().find((w) => w.candidate === 'c1/ns/other')!.message).toContain('no series labelled name="other"');
  });

  it('an EPP serving the self-signed certificate it made at start: refused by default, the pool not ready for reason tls-unverified, warned once with the ways to trust it', async () => {
    const leaf = selfSignedLeaf('Inference Ext');
    cleanups.push(() => leaf.remove());
    const e = await stockEpp({ tls: { cert: leaf.cert, key: leaf.key }, stock: false });
    const { s, warns } = store(signalsConfig({ c1: { epp: { metrics: { enabled: false }, health: { unhealthyThreshold: 1 } } } }));
    const c = viaEpp('c1', 'p', { ...eppTarget('c1', e.address), tls: tlsSchema.parse({}) });
    s.update(snapshotOf(c));
    await expect.poll(() => s.view().get('c1/ns/p'), { timeout: 3000 }).toMatchObject({ ready: 'not-ready', reason: 'health:tls-unverified' });
    const tls = warns().filter((w) => /certificate is not trusted/.test(w.msg));
    expect(tls).toHaveLength(1);
    expect(tls[0]!.obj).toMatchObject({ cluster: 'c1', candidates: ['c1/ns/p'] });
    expect(String(tls[0]!.obj.error)).toMatch(/self[- ]signed certificate/);
    expect(tls[0]!.msg).toMatch(/epp\.tls\.caFile.*credentials\.eppTls.*epp\.tls\.insecureSkipVerify: true/);
    await new Promise((r) => setTimeout(r, 200));
    expect(warns().filter((w) => /certificate is not trusted/.test(w.msg))).toHaveLength(1);

    // Accepted unverified: the EPP answers its health checks.
    const skip = store(signalsConfig({ c1: { epp: { metrics: { enabled: false } } } }));
    skip.s.update(snapshotOf(viaEpp('c1', 'p', { ...eppTarget('c1', e.address), tls: tlsSchema.parse({ insecureSkipVerify: true }) })));
    await expect.poll(() => skip.s.view().get('c1/ns/p').reason, { timeout: 3000 }).toBe('health:serving');
    expect(skip.warns().filter((w) => /certificate is not trusted/.test(w.msg))).toEqual([]);
  });

  it('an EPP still serving its expired certificate (renewed, never re-read): tls-unverified, warned once to restart it, not to weaken trust', async () => {
    const ca = createTestCa('EPP CA');
    cleanups.push(() => ca.remove());
    const leaf = ca.expiredLeaf('epp', ['DNS:llm-pool-epp.inference.svc']);
    const e = await stockEpp({ tls: { cert: leaf.cert, key: leaf.key }, stock: false });
    const { s, warns } = store(signalsConfig({ c1: { epp: { metrics: { enabled: false }, health: { unhealthyThreshold: 1 } } } }));
    const tls = tlsSchema.parse({ caFile: ca.certPath, serverName: 'llm-pool-epp.inference.svc' });
    s.update(snapshotOf(viaEpp('c1', 'p', { ...eppTarget('c1', e.address), tls })));
    await expect.poll(() => s.view().get('c1/ns/p'), { timeout: 3000 }).toMatchObject({ ready: 'not-ready', reason: 'health:tls-unverified' });
    const told = warns().filter((w) => /certificate is not trusted/.test(w.msg));
    expect(told).toHaveLength(1);
    expect(told[0]!.msg).toMatch(/outside its validity period.*restart it/);
    expect(told[0]!.msg).not.toMatch(/insecureSkipVerify/);
  });
});
