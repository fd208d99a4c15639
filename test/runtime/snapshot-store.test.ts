import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { SnapshotStore, type SnapshotObserver } from '../../src/runtime/snapshot-store.js';
import type { RoutingSnapshot } from '../../src/snapshot/types.js';
import { config, localPool, poolRef, route, rule, servedGateway, state } from '../snapshot/fixtures.js';

function recorder(): SnapshotObserver & { builds: number[]; applied: string[]; rejected: string[] } {
  const r = {
    builds: [] as number[],
    applied: [] as string[],
    rejected: [] as string[],
    snapshotBuilt: (_s: number, snap: RoutingSnapshot) => r.builds.push(snap.version),
    sourceApplied: (c: string) => r.applied.push(c),
    sourceRejected: (c: string, reason: string) => r.rejected.push(`${c}:${reason}`),
  };
  return r;
}

const logger = createLogger('silent');
const objectsV1 = [servedGateway(), ...localPool('p1'), route('r', [rule([poolRef('p1')])])];
const objectsV2 = [servedGateway(), ...localPool('p2'), route('r', [rule([poolRef('p2')])])];
const tick = () => new Promise((r) => setImmediate(r));

describe('SnapshotStore', () => {
  it('holds updates until released, then builds once with every cluster', () => {
    const obs = recorder();
    const store = new SnapshotStore(config(), logger, obs);
    store.applyState(state('cluster-a', objectsV1));
    store.applyState(state('cluster-b', []));
    expect(store.snapshot()).toBeUndefined();
    const snap = store.release();
    expect(store.snapshot()).toBe(snap);
    expect(obs.builds).toEqual([1]);
    expect([...snap.candidates.keys()]).toEqual(['cluster-a/example/p1']);
    expect(snap.clusters.map((c) => c.name).sort()).toEqual(['cluster-a', 'cluster-b']);
  });

  it('coalesces a burst of updates into one new snapshot, swapped by reference', async () => {
    const obs = recorder();
    const store = new SnapshotStore(config(), logger, obs);
    store.applyState(state('cluster-a', objectsV1));
    const first = store.release();
    const seen: number[] = [];
    store.onSnapshot((s) => seen.push(s.version));
    for (let i = 0; i < 50; i++) store.applyState(state('cluster-a', i % 2 ? objectsV1 : objectsV2, { revision: `r${i}` }));
    store.applyState(state('cluster-a', objectsV2, { revision: 'final' }));
    expect(store.snapshot()).toBe(first);
    await tick();
    expect(seen).toEqual([2]);
    expect(obs.builds).toEqual([1, 2]);
    expect([...store.snapshot()!.candidates.keys()]).toEqual(['cluster-a/example/p2']);
    // The old snapshot object is untouched: streams holding it keep routing as before.
    expect([...first.candidates.keys()]).toEqual(['cluster-a/example/p1']);
  });

  it('keeps the last good state when a source reports an error, and records it until the next good change', async () => {
    const obs = recorder();
    const store = new SnapshotStore(config(), logger, obs);
    store.applyState(state('cluster-a', objectsV1));
    const snap = store.release();
    store.reportError({ cluster: 'cluster-a', reason: 'invalid', message: 'bad', errors: [] });
    await tick();
    expect(store.snapshot()).toBe(snap);
    expect(obs.rejected).toEqual(['cluster-a:invalid']);
    expect(store.sourceErrors().get('cluster-a')?.message).toBe('bad');
    store.applyState(state('cluster-a', objectsV2, { revision: 'fixed' }));
    expect(store.sourceErrors().size).toBe(0);
    await tick();
    expect(store.snapshot()?.version).toBe(2);
  });

  it('a state carrying a rejected change counts as rejected once; the same content restored ends it without a rebuild', async () => {
    const obs = recorder();
    const lines: Record<string, unknown>[] = [];
    const store = new SnapshotStore(config(), createLogger('info', { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) }), obs);
    const good = state('cluster-a', objectsV1);
    store.applyState(good);
    store.release();
    const rejected = { cluster: 'cluster-a', reason: 'parse' as const, message: 'YAML syntax error in a.yaml', errors: [] };
    // The source re-delivers the same objects with the rejection, and again (e.g. another file changed meanwhile).
    store.applyState({ ...good, rejected });
    store.applyState({ ...good, rejected });
    await tick();
    expect(obs.rejected).toEqual(['cluster-a:parse']);
    expect(lines.filter((l) => String(l.msg).includes('rejected'))).toHaveLength(1);
    expect(store.sourceErrors().get('cluster-a')?.message).toBe('YAML syntax error in a.yaml');
    expect(lines.filter((l) => String(l.msg).includes('recovered'))).toEqual([]);
    // Restored byte for byte: the very same state again.
    store.applyState(good);
    store.applyState(good);
    await tick();
    expect(store.sourceErrors().size).toBe(0);
    // The recovery is logged once, at info, naming the cluster and the rejection it ends.
    expect(lines.filter((l) => String(l.msg).includes('recovered'))).toEqual([
      expect.objectContaining({ level: 'info', cluster: 'cluster-a', reason: 'parse', msg: 'cluster cluster-a recovered: its current state is accepted again, the rejection has ended' }),
    ]);
    expect(obs.applied).toEqual(['cluster-a', 'cluster-a']);
    expect(obs.builds).toEqual([1]);
  });

  it('logs a rejection as one; an unavailable API server (connect, auth, missing CRD) is no rejection', () => {
    const lines: { level: number; msg: string }[] = [];
    const capture = pino({ level: 'debug' }, { write: (l: string) => lines.push(JSON.parse(l) as { level: number; msg: string }) });
    const obs = recorder();
    const store = new SnapshotStore(config(), capture, obs);
    for (const reason of ['connect', 'auth', 'missing-crd'] as const) store.reportError({ cluster: 'cluster-b', reason, message: 'down', errors: [] });
    // Neither counted (reload metrics) nor recorded as an outstanding rejection (/debug/sources).
    expect(obs.rejected).toEqual([]);
    expect(store.sourceErrors().size).toBe(0);
    expect(lines.map((l) => [l.level, l.msg])).toEqual(
      Array.from({ length: 3 }, () => [20, 'cluster cluster-b unavailable, its last known state keeps serving: down']),
    );
    store.reportError({ cluster: 'cluster-a', reason: 'invalid', message: 'bad', errors: [] });
    expect(lines.at(-1)).toMatchObject({ level: 50, msg: 'change to cluster cluster-a rejected, last good state keeps serving: bad' });
    expect(obs.rejected).toEqual(['cluster-a:invalid']);
  });

  it('an API outage and the reconnect (same objects, stale flipped) are no reload; new objects are', async () => {
    const obs = recorder();
    const store = new SnapshotStore(config(), logger, obs);
    const live = state('cluster-b', objectsV1);
    store.applyState(live);
    store.release();
    expect(obs.applied).toEqual(['cluster-b']);
    store.applyState({ ...live, stale: true });
    store.applyState(live);
    await tick();
    expect(obs.applied).toEqual(['cluster-b']);
    expect(obs.builds).toEqual([1, 2]);
    store.applyState(state('cluster-b', objectsV2, { revision: 'after-reconnect' }));
    expect(obs.applied).toEqual(['cluster-b', 'cluster-b']);
  });

  it('a throwing listener does not stop the others or the swap', async () => {
    const store = new SnapshotStore(config(), logger, recorder());
    store.applyState(state('cluster-a', objectsV1));
    store.release();
    const seen: number[] = [];
    store.onSnapshot(() => {
      throw new Error('listener bug');
    });
    store.onSnapshot((s) => seen.push(s.version));
    store.applyState(state('cluster-a', objectsV2, { revision: 'x' }));
    await tick();
    expect(seen).toEqual([2]);
  });

  it('stop() cancels a pending build', async () => {
    const obs = recorder();
    const store = new SnapshotStore(config(), logger, obs);
    store.applyState(state('cluster-a', objectsV1));
    store.release();
    store.applyState(state('cluster-a', objectsV2, { revision: 'x' }));
    store.stop();
    await tick();
    expect(obs.builds).toEqual([1]);
  });
});
