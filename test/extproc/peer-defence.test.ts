import { describe, expect, it } from 'vitest';
import { DEFAULT_EXT_PROC } from '../../src/config/defaults.js';
import { noopObserver } from '../../src/extproc/observer.js';
import { peerDefence } from '../../src/extproc/server-lifecycle.js';
import type { StreamDeps } from '../../src/extproc/stream.js';
import type { PeerCutReason } from '../../src/transport/peer-guard.js';

describe('peerDefence: the report of a cut connection', () => {
  it('counts every cut and warns at most every 10 s, with the number left unsaid', () => {
    const cuts: PeerCutReason[] = [];
    const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
    let t = 0;
    const deps = {
      settings: DEFAULT_EXT_PROC,
      observer: { ...noopObserver, peerCut: (r: PeerCutReason) => cuts.push(r) },
      logger: { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }) },
    } as unknown as StreamDeps;
    const d = peerDefence(deps, () => t);
    expect(d.limits).toEqual({ earlyResetBurst: 200, earlyResetsPerSecond: 100, maxUnusedStreams: 1000, cutCooldownMs: 10_000, maxStreamsPerConnection: 10_000, trustedPeers: ['127.0.0.0/8', '::1/128'] });
    d.onCut('early_resets', '10.0.0.9:40000');
    t = 5_000;
    d.onCut('early_resets', '10.0.0.9:40002');
    d.onCut('unused_streams', '10.0.0.9:40004');
    expect(warnings).toHaveLength(1);
    t = 10_001;
    d.onCut('early_resets', '10.0.0.9:40006');
    expect(cuts).toEqual(['early_resets', 'early_resets', 'unused_streams', 'early_resets']);
    expect(warnings.map((w) => [w.obj.reason, w.obj.remote, w.obj.suppressedSinceLastWarning])).toEqual([
      ['early_resets', '10.0.0.9:40000', 0],
      ['early_resets', '10.0.0.9:40006', 2],
    ]);
    expect(warnings[0]!.msg).toMatch(/GOAWAY ENHANCE_YOUR_CALM.*extProc\.peerLimits/);
  });
});
